"""The patched srsenb on the real stack: srsepc, srsenb and srsue on the ZeroMQ radio, telemetry read by `rnf`.

All three run in a network namespace of their own, `<prefix>-core`: S1 on its loopback (through the SCTP-over-UDP
shim where the kernel has no SCTP), the ZeroMQ radio, the telemetry socket (tcp://127.0.0.1:5555) and srsepc's SGi
interface `srs_spgw_sgi` (172.16.0.1). That namespace has no route out, so no packet of the test leaves the machine.
srsue puts its TUN (`tun_srsue`, 172.16.0.2) into a second namespace, `<prefix>-ue`. The UE's default bearer is
QCI 9 (RLC AM). Each test prints its figures (pytest -s shows them).

Environment:
- SRSRAN_BUILD: a srsRAN_4G build tree (cmake -DENABLE_ZEROMQ=ON) with the enb-patches series applied; the tests
  are skipped, with that reason, when it is not set or its srsenb has no [telemetry] section.
- SCTPSHIM: the SCTP-over-UDP shim (libsctpshim.so) for kernels without SCTP; when unset, the shim is built from
  ../shared/tools/sctp-udp-shim/ next to the repository.
"""

from __future__ import annotations

import errno
import itertools
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHIM_SOURCE = REPO.parent / "shared" / "tools" / "sctp-udp-shim" / "sctpshim.c"
RNF = Path(sys.executable).parent / "rnf"
TELEMETRY_ENDPOINT = "tcp://127.0.0.1:5555"
UE_IP = "172.16.0.2"
SGI_IP = "172.16.0.1"
DRB_LCID = 3
# base_srate equal to the sample rate of the cell's PRB count (the shim's README: less CPU, less ZeroMQ traffic).
SAMPLE_RATE = {6: 1.92e6, 15: 3.84e6, 25: 5.76e6, 50: 11.52e6, 100: 23.04e6}


@dataclass(frozen=True)
class SrsranBuild:
    """Binaries of a patched build, and the source tree its example configurations come from."""

    build: Path
    source: Path

    @property
    def srsenb(self) -> Path:
        return self.build / "srsenb" / "src" / "srsenb"

    @property
    def srsue(self) -> Path:
        return self.build / "srsue" / "src" / "srsue"

    @property
    def srsepc(self) -> Path:
        return self.build / "srsepc" / "src" / "srsepc"


def _find_build() -> SrsranBuild | str:
    """The build named by SRSRAN_BUILD, or why the integration tests cannot run."""
    value = os.environ.get("SRSRAN_BUILD")
    if not value:
        return "SRSRAN_BUILD is not set (a srsRAN_4G build with the enb-patches series applied)"
    build = Path(value)
    cache = build / "CMakeCache.txt"
    if not cache.is_file():
        return f"SRSRAN_BUILD={build}: no CMakeCache.txt, not a cmake build tree"
    match = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", cache.read_text(), re.MULTILINE)
    if match is None:
        return f"{cache}: no CMAKE_HOME_DIRECTORY"
    found = SrsranBuild(build=build, source=Path(match[1]))
    for binary in (found.srsenb, found.srsue, found.srsepc):
        if not os.access(binary, os.X_OK):
            return f"SRSRAN_BUILD={build}: {binary} is not built (make srsenb srsue srsepc)"
    help_text = subprocess.run([str(found.srsenb), "--help"], capture_output=True, text=True, timeout=30).stdout
    if "telemetry.enable" not in help_text:
        return f"SRSRAN_BUILD={build}: its srsenb has no [telemetry] options (the enb-patches series is not applied)"
    return found


def _kernel_has_sctp() -> bool:
    try:
        socket.socket(socket.AF_INET, socket.SOCK_SEQPACKET, socket.IPPROTO_SCTP).close()
    except OSError as error:
        if error.errno in (errno.EPROTONOSUPPORT, errno.ESOCKTNOSUPPORT, errno.EAFNOSUPPORT):
            return False
        raise
    return True


@pytest.fixture(scope="session")
def srsran_build() -> SrsranBuild:
    found = _find_build()
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.fixture(scope="session")
def sctp_preload(tmp_path_factory: pytest.TempPathFactory) -> str | None:
    """The LD_PRELOAD value srsepc and srsenb need for S1: None where the kernel has SCTP."""
    if _kernel_has_sctp():
        return None
    if os.environ.get("SCTPSHIM"):
        shim = Path(os.environ["SCTPSHIM"])
        if not shim.is_file():
            pytest.fail(f"SCTPSHIM={shim}: no such file")
        return str(shim)
    if not SHIM_SOURCE.is_file():
        pytest.fail(f"the kernel has no SCTP, SCTPSHIM is not set and {SHIM_SOURCE} does not exist")
    shim = tmp_path_factory.mktemp("sctpshim") / "libsctpshim.so"
    subprocess.run(
        ["gcc", "-O2", "-Wall", "-fPIC", "-shared", "-o", str(shim), str(SHIM_SOURCE), "-ldl", "-lpthread"],
        check=True,
    )
    return str(shim)


def _wait_for(path: Path, pattern: str, timeout_s: float, process: subprocess.Popen[bytes]) -> re.Match[str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        match = re.search(pattern, text)
        if match:
            return match
        if process.poll() is not None:
            raise RuntimeError(f"{path.name}: exited with {process.returncode} before '{pattern}':\n{text[-3000:]}")
        time.sleep(0.2)
    raise TimeoutError(f"{path.name}: no '{pattern}' after {timeout_s} s:\n{path.read_text(errors='replace')[-3000:]}")


class SrsStack:
    """srsepc, srsenb and srsue on the ZeroMQ radio, in namespaces of their own, until `stop()`."""

    def __init__(
        self,
        build: SrsranBuild,
        preload: str | None,
        workdir: Path,
        telemetry_period_ms: int | None,
        n_prb: int = 25,
    ) -> None:
        self.build = build
        self.preload = preload
        self.workdir = workdir
        self.telemetry_period_ms = telemetry_period_ms
        self.n_prb = n_prb
        prefix = "tlm" + uuid.uuid4().hex[:6]
        self.core_ns = f"{prefix}-core"
        self.ue_ns = f"{prefix}-ue"
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.rnti = 0

    # --- configuration -------------------------------------------------------------------------------------

    def _write_configs(self) -> None:
        w = self.workdir
        for name in ("sib", "rr", "rb"):
            shutil.copy(self.build.source / "srsenb" / f"{name}.conf.example", w / f"{name}.conf")
        rate = SAMPLE_RATE[self.n_prb]
        telemetry = (
            f"[telemetry]\nenable = true\nzmq_endpoint = {TELEMETRY_ENDPOINT}\nperiod_ms = {self.telemetry_period_ms}\n"
            if self.telemetry_period_ms is not None
            else "[telemetry]\nenable = false\n"
        )
        (w / "enb.conf").write_text(
            f"""[enb]
enb_id = 0x19B
mcc = 001
mnc = 01
mme_addr = 127.0.1.100
gtp_bind_addr = 127.0.1.1
s1c_bind_addr = 127.0.1.1
s1c_bind_port = 0
n_prb = {self.n_prb}

[enb_files]
sib_config = {w / "sib.conf"}
rr_config = {w / "rr.conf"}
rb_config = {w / "rb.conf"}

[rf]
device_name = zmq
device_args = fail_on_disconnect=true,tx_port=tcp://127.0.0.1:2000,rx_port=tcp://127.0.0.1:2001,id=enb,base_srate={rate}
tx_gain = 80
rx_gain = 40

[log]
all_level = warning
filename = {w / "enb.log"}

{telemetry}
[expert]
# keep the UE connected (and its RNTI) through the test; srsRAN's default releases it after 30 s idle
rrc_inactivity_timer = 3600000
"""
        )
        (w / "ue.conf").write_text(
            f"""[rf]
device_name = zmq
device_args = tx_port=tcp://127.0.0.1:2001,rx_port=tcp://127.0.0.1:2000,id=ue,base_srate={rate}
tx_gain = 80
rx_gain = 40

[rat.eutra]
dl_earfcn = 3350
nof_carriers = 1

[log]
all_level = warning
filename = {w / "ue.log"}

[usim]
mode = soft
algo = milenage
opc = 63BFA50EE6523365FF14C1F45F88737D
k = 00112233445566778899aabbccddeeff
imsi = 001010123456780
imei = 353490069873319

[gw]
netns = {self.ue_ns}
ip_devname = tun_srsue
"""
        )
        (w / "epc.conf").write_text(
            f"""[mme]
mme_code = 0x1a
mme_group = 0x0001
tac = 0x0007
mcc = 001
mnc = 01
mme_bind_addr = 127.0.1.100
apn = srsapn
dns_addr = 127.0.0.1
encryption_algo = EEA0
integrity_algo = EIA1
paging_timer = 2

[hss]
db_file = {w / "user_db.csv"}

[spgw]
gtpu_bind_addr = 127.0.1.100
sgi_if_addr = {SGI_IP}
sgi_if_name = srs_spgw_sgi
max_paging_queue = 100

[log]
all_level = warning
filename = {w / "epc.log"}
"""
        )
        # QCI 9: the default bearer on RLC AM (rb.conf), where the queue has retransmissions; a static UE address.
        (w / "user_db.csv").write_text(
            "ue1,mil,001010123456780,00112233445566778899aabbccddeeff,opc,"
            f"63bfa50ee6523365ff14c1f45f88737d,8000,000000001234,9,{UE_IP}\n"
        )

    # --- life cycle ----------------------------------------------------------------------------------------

    def _start(self, name: str, argv: list[str], preload: bool) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        if preload and self.preload:
            env["LD_PRELOAD"] = self.preload
        out = (self.workdir / f"{name}.out").open("wb")
        process = subprocess.Popen(
            ["ip", "netns", "exec", self.core_ns, *argv],
            cwd=self.workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        self.processes[name] = process
        return process

    def start(self) -> None:
        self._write_configs()
        for ns in (self.core_ns, self.ue_ns):
            subprocess.run(["ip", "netns", "add", ns], check=True)
            subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        w = self.workdir
        epc = self._start("epc", [str(self.build.srsepc), str(w / "epc.conf")], preload=True)
        _wait_for(w / "epc.out", r"SP-GW Initialized", 30, epc)
        enb = self._start("enb", [str(self.build.srsenb), str(w / "enb.conf")], preload=True)
        _wait_for(w / "enb.out", r"eNodeB started", 60, enb)
        ue = self._start("ue", [str(self.build.srsue), str(w / "ue.conf")], preload=False)
        _wait_for(w / "ue.out", r"Network attach successful\. IP: " + re.escape(UE_IP), 120, ue)
        self.rnti = int(_wait_for(w / "enb.out", r"User (0x[0-9a-f]+) connected", 30, enb)[1], 16)

    def stop(self) -> None:
        for name in ("ue", "enb", "epc"):
            process = self.processes.get(name)
            if process is None or process.poll() is not None:
                continue
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        for ns in (self.ue_ns, self.core_ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def __enter__(self) -> SrsStack:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- measurements --------------------------------------------------------------------------------------

    @property
    def enb_pid(self) -> int:
        """srsenb's own pid (`ip netns exec` execs it, so the Popen pid is srsenb's)."""
        return self.processes["enb"].pid

    def ue_rx_bytes(self) -> int:
        """The UE kernel's count of bytes received on its TUN (IP packets, headers included)."""
        out = subprocess.run(
            ["ip", "-n", self.ue_ns, "-s", "-j", "link", "show", "dev", "tun_srsue"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return int(json.loads(out)[0]["stats64"]["rx"]["bytes"])

    def ping_ue(self, count: int = 3) -> None:
        subprocess.run(
            ["ip", "netns", "exec", self.core_ns, "ping", "-c", str(count), "-i", "0.3", "-W", "2", UE_IP],
            check=True,
            capture_output=True,
        )

    def iperf_to_ue(self, seconds: float, udp_rate: str | None = None) -> subprocess.Popen[str]:
        """Starts a download from the SGi side to the UE (iperf3 server on the UE); TCP unless `udp_rate`."""
        server = subprocess.Popen(
            ["ip", "netns", "exec", self.ue_ns, "iperf3", "-s", "-1", "-B", UE_IP],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.5)
        command = ["ip", "netns", "exec", self.core_ns, "iperf3", "-c", UE_IP, "-t", str(seconds), "-J"]
        if udp_rate:
            command += ["-u", "-b", udp_rate, "-l", "1400"]
        client = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        client.server = server  # type: ignore[attr-defined]
        return client


def finish_iperf(client: subprocess.Popen[str], timeout_s: float) -> dict[str, object]:
    """Waits for an iperf3 client of `iperf_to_ue` (and its one-shot server); its JSON report."""
    out, err = client.communicate(timeout=timeout_s)
    client.server.wait(timeout=15)  # type: ignore[attr-defined]
    if client.returncode != 0:
        raise RuntimeError(f"iperf3 failed ({client.returncode}): {err or out[-2000:]}")
    return json.loads(out)


def cpu_ticks(pid: int, tid: int | None = None) -> int:
    """utime + stime of a process (or one of its threads), in clock ticks."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of proc(5), counted after "pid (comm)"


def telemetry_threads(pid: int) -> list[int]:
    """srsenb's telemetry threads: the exporter (TELEMETRY) and its ZeroMQ context's I/O thread, which the exporter
    creates just before it (the ZeroMQ radio's context, created later, has I/O threads of the same name)."""
    names = {int(task.name): (task / "comm").read_text().strip() for task in Path(f"/proc/{pid}/task").iterdir()}
    exporter = [tid for tid, name in names.items() if name == "TELEMETRY"]
    if not exporter:
        return []
    io = [tid for tid, name in names.items() if name.startswith("ZMQbg/IO/") and tid < exporter[0]]
    return exporter + ([max(io)] if io else [])


@dataclass(frozen=True)
class Sample:
    """One telemetry message as `rnf telemetry listen --record` wrote it (line protocol)."""

    time_ns: int
    rnti: int
    lcid: int
    fields: dict[str, float | int | bool | str]


def parse_line_protocol(path: Path) -> list[Sample]:
    samples = []
    for line in path.read_text().splitlines():
        head, field_text, stamp = line.rsplit(" ", 2)
        tags = dict(item.split("=", 1) for item in head.split(",")[1:])
        fields: dict[str, float | int | bool | str] = {}
        for item in field_text.split(","):
            key, value = item.split("=", 1)
            if value.endswith("i"):
                fields[key] = int(value[:-1])
            elif value in ("true", "false"):
                fields[key] = value == "true"
            else:
                fields[key] = float(value)
        samples.append(Sample(int(stamp), int(tags["rnti"]), int(tags["lcid"]), fields))
    return samples


class TelemetryListener:
    """`rnf telemetry listen` in the core namespace, printing and recording until `stop()`."""

    def __init__(self, stack: SrsStack) -> None:
        self.stdout_path = stack.workdir / "listen.out"
        self.record_path = stack.workdir / "telemetry.lp"
        self.process = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                stack.core_ns,
                str(RNF),
                "telemetry",
                "listen",
                TELEMETRY_ENDPOINT,
                "--record",
                str(self.record_path),
            ],
            stdout=self.stdout_path.open("w"),
            stderr=subprocess.STDOUT,
            env={**os.environ, "COLUMNS": "250"},
        )
        _wait_for(self.stdout_path, r"seq=", 30, self.process)

    def stop(self) -> tuple[list[str], list[Sample]]:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=15)
        lines = self.stdout_path.read_text().splitlines()
        return lines, parse_line_protocol(self.record_path)


@pytest.fixture
def stack_factory(
    srsran_build: SrsranBuild, sctp_preload: str | None, tmp_path: Path
) -> Iterator[Callable[..., SrsStack]]:
    """Builds SrsStack objects for this test, each in a working folder of its own under tmp_path."""
    made: list[SrsStack] = []

    def make(telemetry_period_ms: int | None, n_prb: int = 25) -> SrsStack:
        workdir = tmp_path / f"stack{len(made)}"
        workdir.mkdir()
        stack = SrsStack(srsran_build, sctp_preload, workdir, telemetry_period_ms, n_prb)
        made.append(stack)
        return stack

    yield make
    for stack in made:
        stack.stop()


def mean_and_sd(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return mean, sd


DOWNLOAD_S = 15
DRAIN_S = 6


@pytest.mark.root
@pytest.mark.timeout(600)
def test_queue_grows_under_a_download_drains_after_and_scheduled_bytes_match_received(
    stack_factory: Callable[..., SrsStack],
) -> None:
    with stack_factory(telemetry_period_ms=10) as stack:
        stack.ping_ue()  # the eNB learns the UE's address from its first downlink packets
        listener = TelemetryListener(stack)
        time.sleep(2)
        rx_before, t_before = stack.ue_rx_bytes(), time.time_ns()
        report = finish_iperf(stack.iperf_to_ue(DOWNLOAD_S), timeout_s=DOWNLOAD_S + 60)
        t_download_end = time.time_ns()
        time.sleep(DRAIN_S)
        rx_after, t_after = stack.ue_rx_bytes(), time.time_ns()
        time.sleep(1)
        lines, samples = listener.stop()

    ue_lines = [line for line in lines if f"rnti=0x{stack.rnti:04x} lcid={DRB_LCID} " in line]
    print(f"\nrnf telemetry listen: {len(lines)} lines, e.g.")
    for index in (0, len(ue_lines) // 3, len(ue_lines) // 2, -1):
        print("   ", ue_lines[index])
    assert ue_lines, "no telemetry line for the UE's default bearer"
    assert all(f"ip={UE_IP} " in line for line in ue_lines), "a line without the UE's IP"

    stream = [s for s in samples if s.rnti == stack.rnti and s.lcid == DRB_LCID]
    before = [s for s in stream if s.time_ns < t_before]
    during = [s for s in stream if t_before <= s.time_ns <= t_download_end]
    settled = [s for s in stream if t_after - 2_000_000_000 <= s.time_ns <= t_after]
    window = [s for s in stream if t_before <= s.time_ns <= t_after]
    peak = max(during, key=lambda s: s.fields["queue_bytes"])
    print(
        f"queue: {before[-1].fields['queue_bytes']} B before the download, peak {peak.fields['queue_bytes']} B "
        f"({peak.fields['queue_sdus']} SDUs) during it, {settled[-1].fields['queue_bytes']} B {DRAIN_S} s after"
    )
    assert before[-1].fields["queue_bytes"] == 0
    assert peak.fields["queue_bytes"] > 30_000, "the RLC queue did not grow under a TCP download"
    assert all(s.fields["queue_bytes"] == 0 for s in settled), "the queue did not drain after the download"

    scheduled = sum(int(s.fields["sched_new_bytes"]) for s in window)
    retransmitted = sum(int(s.fields["sched_retx_bytes"]) for s in window)
    received = rx_after - rx_before
    sent = report["end"]["sum_sent"]["bytes"]  # type: ignore[index]
    seqs = [int(s.fields["seq"]) for s in stream]
    lost = sum(b - a - 1 for a, b in itertools.pairwise(seqs))
    print(
        f"download {DOWNLOAD_S} s: iperf3 sent {sent} B; UE TUN received {received} B; scheduled new "
        f"{scheduled} B (ratio {scheduled / received:.4f}), HARQ retransmissions {retransmitted} B; "
        f"{len(window)} messages in the window, {lost} lost"
    )
    assert abs(scheduled / received - 1) <= 0.05


@pytest.mark.root
@pytest.mark.timeout(1800)
def test_srsenb_cpu_with_and_without_telemetry(stack_factory: Callable[..., SrsStack]) -> None:
    """The same UDP download (8 Mbit/s, below the cell's capacity) with telemetry off, every 10 ms and every 1 ms,
    three times each, interleaved: srsenb's utime+stime over a fixed interval, and that of the telemetry's own threads
    (the exporter, and the I/O thread of its ZeroMQ context)."""
    interval_s, rounds = 20.0, 3
    hz = os.sysconf("SC_CLK_TCK")
    results: dict[str, list[tuple[float, float]]] = {"off": [], "10 ms": [], "1 ms": []}
    for _ in range(rounds):
        for label, period in (("off", None), ("10 ms", 10), ("1 ms", 1)):
            with stack_factory(telemetry_period_ms=period) as stack:
                stack.ping_ue()
                client = stack.iperf_to_ue(interval_s + 8, udp_rate="8M")
                time.sleep(4)
                threads = telemetry_threads(stack.enb_pid)
                assert bool(threads) == (period is not None)
                ticks0 = cpu_ticks(stack.enb_pid)
                own0 = sum(cpu_ticks(stack.enb_pid, tid) for tid in threads)
                t0 = time.monotonic()
                time.sleep(interval_s)
                ticks1 = cpu_ticks(stack.enb_pid)
                own1 = sum(cpu_ticks(stack.enb_pid, tid) for tid in threads)
                elapsed = time.monotonic() - t0
                report = finish_iperf(client, timeout_s=60)
                received = report["end"]["sum"]["bytes"]  # type: ignore[index]
            share = 100.0 * (ticks1 - ticks0) / hz / elapsed
            own = 100.0 * (own1 - own0) / hz / elapsed
            results[label].append((share, own))
            print(f"\n{label:>5}: srsenb {share:.1f} % of a core, telemetry threads {own:.2f} % ({received} B sent)")

    off_mean, _ = mean_and_sd([share for share, _ in results["off"]])
    print("\n| telemetry | srsenb CPU, % of one core (mean ± sd) | vs off | telemetry threads (mean, max) |")
    print("|---|---|---|---|")
    for label, runs in results.items():
        mean, sd = mean_and_sd([share for share, _ in runs])
        own_mean, _ = mean_and_sd([own for _, own in runs])
        delta = "" if label == "off" else f"{mean - off_mean:+.1f}"
        own_text = "-" if label == "off" else f"{own_mean:.2f} %, {max(own for _, own in runs):.2f} %"
        print(f"| {label} | {mean:.1f} ± {sd:.1f} | {delta} | {own_text} |")
    # The goal, under 2 % of one core, at the default period. At 1 ms the threads wake 1000 times a second, whose
    # cost alone is about 2 % of a core on a virtual machine: only a bound against a runaway loop there.
    assert max(own for _, own in results["10 ms"]) < 2.0
    assert max(own for _, own in results["1 ms"]) < 5.0


def _skip_reason(env: dict[str, str], cwd: Path) -> str:
    """The skip line pytest prints for the download test, run in a child pytest with `env`."""
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(Path(__file__))]
    result = subprocess.run([*command, "-k", "queue_grows"], env=env, capture_output=True, text=True, cwd=cwd)
    return result.stdout


def test_without_a_patched_build_the_stack_tests_are_skipped_with_the_reason(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SRSRAN_BUILD"}
    assert "SRSRAN_BUILD is not set" in _skip_reason(env, tmp_path)
    assert f"SRSRAN_BUILD={tmp_path}: no CMakeCache.txt" in _skip_reason(
        {**env, "SRSRAN_BUILD": str(tmp_path)}, tmp_path
    )
