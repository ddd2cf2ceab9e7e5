"""The series' C++ without srsRAN: the codec, UE table and ZeroMQ exporter of patch 0001, built and run in `make test`.

enb-patches/standalone/Makefile takes the files patch 0001 creates straight out of the patch (extract.py checks each
against its blob id), builds them as C++14 with -Werror against Debian's libzmq, with shims for the few srsRAN
headers they include, and builds two programs of its own. Here:

- the series' own tests: telemetry_config_test, telemetry_message_test (on the golden vectors of telemetry/vectors,
  and on the hand-written ones of telemetry/vectors/spec), telemetry_exporter_test (hooks to a SUB socket);
- the exporter publishing over real ZeroMQ to the Python subscriber (rnf_telemetry), driven through
  telemetry_publisher, with every decoded field checked against what the hooks were given;
- the UE table under concurrent writers and one reader (ue_table_stress), plain and under ThreadSanitizer, and the
  exporter test under ThreadSanitizer too.

Needs g++, make, pkg-config and libzmq3-dev, which `make setup` installs. The full srsRAN build and its ctest run
where SRSRAN_BUILD is set (test_integration.py, enb-patches/README.md).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rnf_telemetry import spec_vectors
from rnf_telemetry.message import TelemetryMessage
from rnf_telemetry.topic import topic_filter
from rnf_telemetry.transport import Subscriber

STANDALONE = Path(__file__).resolve().parents[1] / "standalone"
TELEMETRY = Path(__file__).resolve().parents[2] / "telemetry"
GOLDEN = TELEMETRY / "vectors"
TSAN_OPTIONS = f"suppressions={STANDALONE / 'tsan.supp'} exitcode=66"


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The build directory, with every binary of the standalone Makefile."""
    directory = tmp_path_factory.mktemp("enb-telemetry")
    jobs = str(min(os.cpu_count() or 1, 4))
    command = ["nice", "make", "-C", str(STANDALONE), f"BUILD={directory}", f"PYTHON={sys.executable}", f"-j{jobs}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}"
    return directory


def run(binary: Path, *args: str, tsan: bool = False, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TSAN_OPTIONS": TSAN_OPTIONS} if tsan else None
    result = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout, env=env)
    if tsan and "unexpected memory mapping" in result.stderr:
        # GCC 12's TSan runtime cannot place its shadow memory under some kernels' wider mmap randomization.
        result = subprocess.run(
            ["setarch", platform.machine(), "-R", str(binary), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    return result


def ran_clean(result: subprocess.CompletedProcess[str]) -> str:
    """The last line a binary printed, once it is known to have exited 0 with no sanitizer report."""
    report = f"exit {result.returncode}\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}"
    assert result.returncode == 0, report
    assert "ThreadSanitizer" not in result.stderr, report
    assert result.stdout.strip(), report
    return result.stdout.rstrip().splitlines()[-1]


def test_series_config_test(build: Path):
    result = run(build / "telemetry_config_test")
    assert ran_clean(result) == "telemetry_config_test: ok"
    assert "rejected: telemetry.period_ms = '0': expected an integer from 1 to 60000 (milliseconds)" in result.stdout


def check_message_test(result: subprocess.CompletedProcess[str], directory: Path) -> None:
    """Every vector of `directory` was encoded byte for byte, decoded (decode/), or rejected with its kind, by the
    C++ codec."""
    assert ran_clean(result) == f"telemetry_message_test: all vectors in {directory} pass"
    lines = result.stdout.splitlines()
    valid = sorted(p.stem for p in directory.glob("*.bin"))
    invalid = sorted(p.stem for p in (directory / "invalid").glob("*.bin"))
    decode_only = sorted(p.stem for p in (directory / "decode").glob("*.bin"))
    assert valid and invalid and decode_only
    for name in valid:
        topic = (directory / f"{name}.topic").read_text()
        assert f"valid vector {name:<22} encodes to {topic} and 128 payload bytes, byte for byte" in lines
    for name in decode_only:
        size = (directory / "decode" / f"{name}.bin").stat().st_size
        assert f"decode-only vector {name:<22} of {size} bytes decodes to its fields" in lines
    for name in invalid:
        kind = json.loads((directory / "invalid" / f"{name}.json").read_text())["error"]
        assert f"invalid vector {name:<22} rejected as {kind}" in lines


def test_series_codec_on_every_golden_vector(build: Path):
    check_message_test(run(build / "telemetry_message_test", str(GOLDEN)), GOLDEN)


def test_series_codec_on_every_hand_written_vector(build: Path, tmp_path: Path):
    vectors = spec_vectors.load(GOLDEN / "spec", TELEMETRY / "SPEC.md")
    spec_vectors.write_golden(vectors, tmp_path)
    check_message_test(run(build / "telemetry_message_test", str(tmp_path)), tmp_path)
    written = [*tmp_path.glob("*.bin"), *(tmp_path / "invalid").glob("*.bin"), *(tmp_path / "decode").glob("*.bin")]
    assert len(written) == len(vectors)


@pytest.mark.parametrize("tsan", [False, True], ids=["plain", "tsan"])
def test_series_exporter_test(build: Path, tsan: bool):
    binary = build / ("telemetry_exporter_test_tsan" if tsan else "telemetry_exporter_test")
    assert ran_clean(run(binary, tsan=tsan)) == "telemetry_exporter_test: ok"


@pytest.mark.parametrize(("tsan", "rounds"), [(False, 3_000_000), (True, 1_000_000)], ids=["plain", "tsan"])
def test_ue_table_under_concurrent_writers_and_one_reader(build: Path, tsan: bool, rounds: int):
    binary = build / ("ue_table_stress_tsan" if tsan else "ue_table_stress")
    result = run(binary, str(rounds), tsan=tsan)
    summary = ran_clean(result)
    assert summary.startswith(f"ue_table_stress: {rounds} rounds x 3 workers") and summary.endswith(": ok")
    # 1/4 of the rounds go to UE 0x46, from 3 workers each: 3/4 * rounds grants.
    assert f"UE 0x0046: {rounds * 3 // 4} grants" in result.stdout


class Harness:
    """telemetry_publisher: the series' exporter over real ZeroMQ, its UE table's hooks called line by line."""

    def __init__(self, binary: Path) -> None:
        self.process = subprocess.Popen(
            [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def __call__(self, line: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        assert answer and not answer.startswith("error"), f"{line!r}: {answer!r}"
        return answer

    def close(self) -> str:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)
        return self.process.stderr.read()


CELL = 0x19B01
RNTI = 0x46


def on_bearer(
    lcid: int, also: Callable[[TelemetryMessage], bool] = lambda m: True
) -> Callable[[TelemetryMessage], bool]:
    return lambda m: m.lcid == lcid and also(m)


async def exporter_to_python(harness: Harness) -> None:
    endpoint = harness(f"start tcp://127.0.0.1:* 5 {CELL:#x}").removeprefix("endpoint ")
    harness(f"add {RNTI:#x}")
    harness(f"bearer {RNTI:#x} 3 256 0")
    harness(f"bearer {RNTI:#x} 4 0 300000")
    subscriber = Subscriber(endpoint, topic_filter(cell_id=CELL, rnti=RNTI))
    received: list[TelemetryMessage] = []

    async def until(done: Callable[[TelemetryMessage], bool], seconds: float = 5.0) -> TelemetryMessage:
        deadline = time.monotonic() + seconds
        while True:
            message = await asyncio.wait_for(subscriber.receive(), max(deadline - time.monotonic(), 0.001))
            received.append(message)
            if done(message):
                return message

    # A subscriber misses what is published before it has joined: wait for both streams.
    first = {lcid: await until(on_bearer(lcid)) for lcid in (3, 4)}
    for lcid, message in first.items():
        assert (message.cell_id, message.rnti, message.lcid) == (CELL, RNTI, lcid)
        assert message.ue_ip is None and not message.outage
        assert math.isnan(message.mean_mcs) and math.isnan(message.mean_cqi)
        assert 0 < time.time_ns() - message.timestamp_ns < 10 * 10**9
    assert (first[3].dl_queue_limit_sdus, first[3].dl_queue_limit_bytes) == (256, 0)
    assert (first[4].dl_queue_limit_sdus, first[4].dl_queue_limit_bytes) == (0, 300_000)
    assert first[3].cell_dl_prbs == first[3].dl_grant_prbs == 0  # the MAC's cells are not configured yet

    # What srsenb's layers report during three TTIs, the last one across srsRAN's TTI wrap.
    before = len(received)
    harness("cell 25 2")  # two carriers of 25 PRBs: 13 RBGs of 2 PRBs each, the last of 1
    harness(f"ip {RNTI:#x} 172.16.0.2")
    harness(f"queue {RNTI:#x} 3 45120 1500")
    harness(f"queue {RNTI:#x} 4 700 0")
    harness(f"sdus {RNTI:#x} 3 31")
    harness(f"drop {RNTI:#x} 3 1452")
    harness(f"drop {RNTI:#x} 3 1452")
    harness(f"cqi {RNTI:#x} 11")
    harness(f"cqi {RNTI:#x} 12")
    assert [harness("tti 10238"), harness("tti 10239"), harness("tti 0")] == ["10238", "10239", "10240"]
    harness(f"grant 10238 0 {RNTI:#x} 1 1000 17 3 0x1fff")  # every RBG: 25 PRBs
    harness(f"grant 10239 0 {RNTI:#x} 2 2000 18 4 0x7f")  # the last 7 RBGs: 13 PRBs
    harness(f"grant 10240 0 {RNTI:#x} 1 1000 17 retx 0x1fff")  # HARQ process 1 again: DRB 3's retransmission
    harness(f"grant 10240 1 {RNTI:#x} 3 500 17 3 0x1")  # a second carrier in the same TTI: its bytes and PRBs

    def sums() -> dict[str, int]:
        period = received[before:]
        drb3, drb4 = [m for m in period if m.lcid == 3], [m for m in period if m.lcid == 4]
        return {
            "new3": sum(m.dl_sched_new_bytes for m in drb3),
            "retx3": sum(m.dl_sched_retx_bytes for m in drb3),
            "new4": sum(m.dl_sched_new_bytes for m in drb4),
            "retx4": sum(m.dl_sched_retx_bytes for m in drb4),
            "drops3": sum(m.dl_dropped_sdus for m in drb3),
            "drop_bytes3": sum(m.dl_dropped_bytes for m in drb3),
            "drops4": sum(m.dl_dropped_sdus for m in drb4),
            "grant_ttis": sum(m.dl_grant_ttis for m in drb3),
            "grant_prbs": sum(m.dl_grant_prbs for m in drb3),
            "grant_prbs4": sum(m.dl_grant_prbs for m in drb4),
            "mcs_x_ttis": round(sum(m.mean_mcs * m.dl_grant_ttis for m in drb3 if m.dl_grant_ttis)),
        }

    expected = {
        "new3": 1500,
        "retx3": 1000,
        "new4": 2000,
        "retx4": 0,
        "drops3": 2,
        "drop_bytes3": 2904,
        "drops4": 0,
        "grant_ttis": 3,
        "grant_prbs": 25 + 13 + 25 + 1,
        "grant_prbs4": 25 + 13 + 25 + 1,  # a UE's fields are repeated in each of its bearers' messages
        "mcs_x_ttis": 17 + 18 + 17,
    }
    await until(lambda m: m.lcid == 4 and sums() == expected)
    # A period with nothing new: queue snapshots stay, counters are zero, the last CQI report stands.
    quiet = {lcid: await until(on_bearer(lcid, lambda m: m.dl_grant_ttis == 0)) for lcid in (3, 4)}
    assert sums() == expected
    for lcid, queue in ((3, (45120, 1500, 31)), (4, (700, 0, 0))):
        message = quiet[lcid]
        assert (message.dl_queue_new_bytes, message.dl_queue_retx_bytes, message.dl_queue_sdus) == queue
        assert message.ue_ip == "172.16.0.2" and message.tti == 10240 and message.mean_cqi == 12.0
        assert message.dl_sched_new_bytes == message.dl_dropped_sdus == 0 and math.isnan(message.mean_mcs)
        assert message.dl_grant_prbs == 0 and message.cell_dl_prbs == 50
        assert 4_000 <= message.period_us < 1_000_000

    harness(f"rlf {RNTI:#x} 1")
    await until(lambda m: m.outage)
    harness(f"rlf {RNTI:#x} 0")
    await until(lambda m: m.lcid == 4 and not m.outage)

    # The UE leaves: its streams end. The same RNTI later is a new UE: new streams, numbered from 0.
    harness(f"rem {RNTI:#x}")
    removed = time.monotonic()
    while True:
        try:
            received.append(await asyncio.wait_for(subscriber.receive(), 0.3))
        except TimeoutError:
            break
        assert time.monotonic() - removed < 2, "the UE's streams go on after its removal"
    harness(f"add {RNTI:#x}")
    harness(f"bearer {RNTI:#x} 3 128 0")
    again = await until(lambda m: True)
    assert (again.lcid, again.seq, again.dl_queue_limit_sdus, again.ue_ip) == (3, 0, 128, None)
    assert subscriber.tracker.restarts >= 1

    stopped = harness("stop").split()
    assert stopped[0] == "stopped" and int(stopped[2]) == 0 and int(stopped[1]) >= len(received)
    subscriber.close()

    # Each stream numbered from 0 at the exporter's start, one per period, none lost or repeated on loopback.
    assert not subscriber.tracker.errors
    for lcid in (3, 4):
        seqs = [m.seq for m in received if m.lcid == lcid and m is not again]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), lcid


@pytest.mark.timeout(120)
def test_exporter_publishes_to_the_python_subscriber(build: Path):
    harness = Harness(build / "telemetry_publisher")
    try:
        asyncio.run(exporter_to_python(harness))
    finally:
        log = harness.close()
    assert "Telemetry: publishing every 5 ms on tcp://127.0.0.1:" in log


def copy_series(tmp_path: Path, patch_text: str, extra: str | None = None) -> Path:
    """A series folder holding patch 0001 as given, and optionally a second patch."""
    series = tmp_path / "series-dir"
    series.mkdir()
    (series / "0001.patch").write_text(patch_text)
    names = ["0001.patch"]
    if extra is not None:
        (series / "0002.patch").write_text(extra)
        names.append("0002.patch")
    (series / "series").write_text("\n".join(names) + "\n")
    return series


PATCH_0001 = next(STANDALONE.parent.glob("0001-*.patch")).read_text()
PREFIXES = ["srsenb/hdr/stack/telemetry/", "srsenb/src/stack/telemetry/", "srsenb/test/telemetry/"]


def extract(series: Path, out: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(STANDALONE / "extract.py"), str(series), str(out), *PREFIXES]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_extraction_writes_the_series_new_files_byte_for_byte(tmp_path: Path):
    result = extract(copy_series(tmp_path, PATCH_0001), tmp_path / "tree")
    assert result.returncode == 0, result.stderr
    header = (tmp_path / "tree" / "srsenb/hdr/stack/telemetry/telemetry_message.h").read_text()
    assert "constexpr uint8_t     flag_outage      = 0x01;" in header
    assert len([p for p in (tmp_path / "tree").rglob("*") if p.is_file()]) == 13


def test_extraction_refuses_a_file_that_differs_from_its_blob_id(tmp_path: Path):
    edited = PATCH_0001.replace(
        "+constexpr uint8_t     flag_outage      = 0x01;", "+constexpr uint8_t     flag_outage = 1;"
    )
    assert edited != PATCH_0001
    result = extract(copy_series(tmp_path, edited), tmp_path / "tree")
    assert result.returncode == 1
    # the blob id the patch's `index` line gives the header (it changes with the header, not with this test)
    blob = re.search(r"telemetry_message\.h\n(?:new file mode \d+\n)?index 0+\.\.([0-9a-f]+)", PATCH_0001)
    assert blob is not None
    assert f"telemetry_message.h: extracted content does not match blob {blob[1]}" in result.stderr


def test_extraction_refuses_a_later_patch_that_changes_an_extracted_file(tmp_path: Path):
    later = (
        "diff --git a/srsenb/src/stack/telemetry/telemetry_config.cc b/srsenb/src/stack/telemetry/telemetry_config.cc\n"
        "index b9d04f420..0123456789 100644\n"
        "--- a/srsenb/src/stack/telemetry/telemetry_config.cc\n"
        "+++ b/srsenb/src/stack/telemetry/telemetry_config.cc\n"
        "@@ -1,1 +1,1 @@\n-/**\n+/*\n"
    )
    result = extract(copy_series(tmp_path, PATCH_0001, later), tmp_path / "tree")
    assert result.returncode == 1
    assert "0002.patch modifies srsenb/src/stack/telemetry/telemetry_config.cc" in result.stderr
