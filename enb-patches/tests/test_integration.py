"""The patched srsenb on the real stack: srsepc, srsenb and srsue on the ZeroMQ radio, telemetry read by `rnf`;
`rnf run` on the `srsran` cell kind; two srsue through the GNU Radio bridge (`srsran-zmq`).

The stack is started by `rnf_experiments.cells.stack`, the launcher `rnf run`'s srsRAN cells use.

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

import asyncio
import itertools
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rnf_bridge import client as bridge_client
from rnf_experiments.cells import stack as srs_stack
from rnf_experiments.cells.capture import read_pcap
from rnf_experiments.cells.owd import PACKET_RECORD
from rnf_experiments.cells.spec import SrsranZmqCellSpec, ZmqUeSpec
from rnf_experiments.cells.srsran import SrsranCell
from rnf_experiments.cells.stack import (
    DRB_LCID,
    Radio,
    SrsranBuild,
    StackConfig,
    StackError,
    find_build,
    ue_ip,
    wait_for,
)
from rnf_telemetry.record import FileRecorder
from rnf_telemetry.transport import Subscriber

RNF = Path(sys.executable).parent / "rnf"
REPO = Path(__file__).resolve().parents[2]
TELEMETRY_ENDPOINT = "tcp://127.0.0.1:5555"
UE_IP = ue_ip(0)
TCP, TCP_FLAGS, TCP_RST = 6, 13, 0x04  # the IP protocol, the flags' byte offset in the TCP header and RST's bit


@pytest.fixture(scope="session")
def srsran_build() -> SrsranBuild:
    found = find_build(os.environ.get("SRSRAN_BUILD"))
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.fixture(scope="session")
def sctp_preload(tmp_path_factory: pytest.TempPathFactory) -> str | None:
    """The LD_PRELOAD value srsepc and srsenb need for S1: None where the kernel has SCTP."""
    try:
        return srs_stack.sctp_preload(os.environ.get("SCTPSHIM"), tmp_path_factory.mktemp("sctpshim"))
    except StackError as error:
        pytest.fail(str(error))


class SrsStack(srs_stack.SrsStack):
    """One srsue wired to srsenb (the direct radio), in namespaces with a per-test prefix, and iperf3 downloads."""

    def __init__(
        self,
        build: SrsranBuild,
        preload: str | None,
        workdir: Path,
        telemetry_period_ms: int | None,
        n_prb: int = 25,
    ) -> None:
        prefix = "tlm" + uuid.uuid4().hex[:6]
        self.core_ns, self.ue_ns = f"{prefix}-core", f"{prefix}-ue"
        super().__init__(
            StackConfig(
                build=build,
                workdir=workdir,
                core_ns=self.core_ns,
                ue_namespaces=(self.ue_ns,),
                radio=Radio.direct(n_prb),
                preload=preload,
                n_prb=n_prb,
                telemetry_endpoint=TELEMETRY_ENDPOINT if telemetry_period_ms is not None else None,
                telemetry_period_ms=telemetry_period_ms or 10,
            )
        )
        self.workdir = workdir

    @property
    def rnti(self) -> int:
        return self.rntis[0]

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
        wait_for(self.stdout_path, r"seq=", 30, self.process)

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

    # Resource blocks (contract 1.2): a grant never holds more than the carrier's 25 PRBs, and a lone UE whose data
    # waits through a period is given the whole carrier in its TTIs (but those that carry system information).
    assert all(s.fields["cell_prbs"] == 25 for s in stream)
    assert all(s.fields["grant_prbs"] <= 25 * s.fields["grant_ttis"] for s in stream)
    waited = [
        b.fields["grant_prbs"] / b.fields["grant_ttis"]
        for a, b in itertools.pairwise(during)
        if a.fields["queue_bytes"] and b.fields["queue_bytes"] and b.fields["grant_ttis"]
    ]
    print(f"PRBs per granted TTI in the {len(waited)} periods data waited through: median {statistics.median(waited)}")
    assert statistics.median(waited) >= 24

    # Idle TTIs (contract 1.3): with the queue empty through a period, every TTI the eNB ran counts (the difference
    # of the periods' last TTIs; a TTI scheduled across the export may fall on either side), and what the unused
    # PRBs would have carried is about what the link served in the periods data waited through.
    idle = [
        (b.fields["idle_ttis"], int(b.fields["tti"]) - int(a.fields["tti"])) for a, b in itertools.pairwise(settled)
    ]
    print(f"idle TTIs of the periods after the download against the TTIs they ran: {idle[:5]} ...")
    assert all(abs(counted - ran) <= 1 for counted, ran in idle) and statistics.median(c - r for c, r in idle) == 0
    full = statistics.median(
        b.fields["sched_new_bytes"] + b.fields["sched_retx_bytes"]
        for a, b in itertools.pairwise(during)
        if a.fields["queue_bytes"] and b.fields["queue_bytes"] and b.fields["idle_ttis"] == 0
    )
    unused = statistics.median(s.fields["idle_capacity_bytes"] for s in settled)
    print(f"bytes per period: {full} served where data waited in every TTI, {unused} unused by an empty queue")
    assert 0.8 <= unused / full <= 1.2


def thread_policies(pid: int) -> dict[str, set[int]]:
    """The scheduling policy of each thread of a process, by thread name."""
    policies: dict[str, set[int]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        name = (task / "comm").read_text().strip()
        policies.setdefault(name, set()).add(os.sched_getscheduler(int(task.name)))
    return policies


@pytest.mark.root
@pytest.mark.timeout(300)
def test_on_the_zeromq_radio_no_thread_of_the_stack_runs_real_time(stack_factory: Callable[..., SrsStack]) -> None:
    """srsenb and srsue ask for SCHED_FIFO for their PHY workers and stack thread; the launcher starts them without
    CAP_SYS_NICE, so srsRAN falls back to normal priority and leaves the proxy and the bridge their share."""
    with stack_factory(telemetry_period_ms=10) as stack:
        stack.ping_ue()
        processes = {name: stack.processes[name].pid for name in ("enb", "ue1")}
        policies = {name: thread_policies(pid) for name, pid in processes.items()}
    print(f"\nthreads: {policies}")
    for name, threads in policies.items():
        assert {"WORKER0", "STACK"} <= threads.keys(), f"{name}: srsRAN's real-time threads are not there"
        assert all(policy == {os.SCHED_OTHER} for policy in threads.values()), f"{name}: {threads}"
    out = (stack.workdir / "enb.out").read_text(errors="replace")
    assert "Creating it with normal priority" in out


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


RUN_S = 12


def _run_shortened(
    name: str,
    srsran_build: SrsranBuild,
    sctp_preload: str | None,
    output: Path,
    timeout_s: float,
    duration_s: float = RUN_S,
) -> Path:
    """`rnf run experiments/scenarios/NAME.toml` for `duration_s` seconds per arm, in namespaces of its own; its
    results folder. The comparison table is printed, for the figures a passing run quotes."""
    env = {**os.environ, "SRSRAN_BUILD": str(srsran_build.build), "COLUMNS": "160"}
    if sctp_preload:
        env["SCTPSHIM"] = sctp_preload
    command = [str(RNF), "run", str(REPO / "experiments" / "scenarios" / f"{name}.toml")]
    command += ["--set", f"duration_s={duration_s}", "--set", f"cell.namespace_prefix=run{uuid.uuid4().hex[:5]}"]
    command += ["--output", str(output)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout_s)
    print(f"\n$ rnf run experiments/scenarios/{name}.toml --set duration_s={duration_s} ...\n" + result.stdout[-3000:])
    assert result.returncode == 0, result.stderr[-3000:]
    (results,) = output.glob(f"*-{name}")
    return results


@pytest.mark.root
@pytest.mark.timeout(900)
def test_rnf_run_on_the_srsran_cell_compares_smvs_with_cubic(
    srsran_build: SrsranBuild, sctp_preload: str | None, tmp_path: Path
) -> None:
    """`rnf run experiments/scenarios/srsran-smvs.toml`, shortened: the results folder has both arms, utilization
    figures that are numbers, each run's queue series (the `telemetry` and `cell` measurements), and the one-way
    delay through the cell from the packet captures, none lost, carrying the bytes the UE received; and the
    uplink's, its ACKs timed by srsue's scheduling requests."""
    results = _run_shortened("srsran-smvs", srsran_build, sctp_preload, tmp_path, timeout_s=800)
    summary = json.loads((results / "summary.json").read_text())
    assert set(summary["arms"]) == {"smvs", "cubic"}
    for arm, values in summary["arms"].items():
        assert isinstance(values["utilization"], float) and 0 < values["utilization"] <= 1.2, (arm, values)
        assert values["queue_p95_bytes"] > 0, (arm, values)
    q0 = []
    for run in ("0-smvs", "0-cubic"):
        lines = (results / "runs" / run / "series.lp").read_text().splitlines()
        queue = [line for line in lines if line.startswith("telemetry,") and "queue_bytes=" in line]
        cells = [line for line in lines if line.startswith("cell,") and "capacity_bytes=" in line]
        assert len(queue) > RUN_S * 50 and len(cells) == len(queue), (run, len(queue), len(cells))
        q0 += [int(line.split("q0_bytes=")[1].split("i")[0]) for line in lines if "q0_bytes=" in line]
    assert q0 and set(q0) == {64000}, "smvs did not run on the eNB's telemetry with the scenario's q0"
    for arm in ("smvs", "cubic"):
        values = summary["arms"][arm]
        print(
            f"{arm}: utilization {values['utilization']:.3f}, goodput {values['goodput_mbps']:.2f} Mbit/s, queue p50 "
            f"{values['queue_p50_bytes'] / 1000:.1f} kB (q0 = 64 kB), p95 {values['queue_p95_bytes'] / 1000:.1f} kB"
        )
    for arm, run in (("smvs", "0-smvs"), ("cubic", "0-cubic")):
        values = summary["arms"][arm]
        delay = json.loads((results / "runs" / run / "cell-summary.json").read_text())["delay"]
        print(
            f"{arm}: one-way delay p50 {values['delay_p50_ms']:.1f} ms, p95 {values['delay_p95_ms']:.1f} ms over "
            f"{values['delay_sdus']:.0f} SDUs; captures: {delay['matched']} matched of {delay['departures']} "
            f"departures and {delay['arrivals']} arrivals, {delay['lost']} lost"
        )
        assert delay["lost"] == 0 and values["delay_records_lost"] == 0, (arm, delay)
        assert delay["unmatched_arrivals"] == 0, (arm, delay)
        assert 0 < values["delay_p50_ms"] <= values["delay_p95_ms"] < 2000, (arm, values)
        # every byte the UE's client received went through a matched packet: IP and TCP headers on top (3.6 %)
        records = np.fromfile(results / "runs" / run / "packets.bin", PACKET_RECORD)
        received = sum(transfer["bytes"] for r in summary["runs"] if r["arm"] == arm for transfer in r["transfers"])
        assert 1.0 <= int(records["length"].sum()) / received < 1.1, (arm, int(records["length"].sum()), received)
        # the uplink, the other way (uplink-packets.bin): the client's ACKs, every one matched, and delayed as
        # srsue sends them, at its scheduling-request occasions every 20 subframes of rr.conf (20 ms or more on a
        # stack slower than real time): spread over at least 0.8 of a period, the earliest catching a grant
        uplink = delay["uplink"]
        print(
            f"{arm}: uplink delay p0.1 {uplink['delay']['p0.1_ms']:.1f} ms, p50 {uplink['delay']['p50_ms']:.1f} ms, "
            f"p95 {uplink['delay']['p95_ms']:.1f} ms; {uplink['matched']} matched of {uplink['departures']}"
        )
        assert uplink["lost"] == 0 and uplink["unmatched_arrivals"] == 0, (arm, uplink)
        # but the resets of the run's end: the client closes while the eNB still delivers its queue, and its kernel
        # answers each segment with the same RST (IP ID 0), up to one per queued packet, which the captures' stop
        # leaves partly in the uplink (CUBIC's 265 kB: 183 resets, 47 of them unmatched, 2026-11-28). With no
        # arrival unmatched, a reset the core did not receive is an unmatched departure
        resets_sent = _tcp_resets(results / "runs" / run / "capture-ue1-up.pcap")
        resets_received = _tcp_resets(results / "runs" / run / "capture-sgi-up.pcap")
        departures = uplink["departures"] - resets_sent
        unmatched = uplink["unmatched_departures"] - (resets_sent - resets_received)
        assert departures - unmatched >= 0.99 * departures > 0, (arm, uplink, resets_sent, resets_received)
        assert uplink["delay"]["p95_ms"] - uplink["delay"]["p0.1_ms"] >= 0.8 * 20, (arm, uplink["delay"])
        assert uplink["delay"]["p0.1_ms"] < 8, (arm, uplink["delay"])


@pytest.mark.root
@pytest.mark.timeout(1200)
def test_the_controllers_with_their_defaults_keep_the_real_queue_short_without_loss(
    srsran_build: SrsranBuild, sctp_preload: str | None, tmp_path: Path
) -> None:
    """`rnf run experiments/scenarios/srsran-latency.toml`, one repetition: smvs and rnf, configured with nothing
    for this stack, close the loop on srsenb's telemetry. Each holds the queue it reads: no RLC drop, and issue 18's
    goal against end-to-end BBR in the same run, at least its utilization and at most half its p95 one-way delay
    through the cell (from the captures), with a point of utilization to spare for one repetition (BBR's
    utilization varied by 1.1 points between repetitions; the controllers measured 0.4-2.0 points above it, at
    0.35-0.46 x its delay). CUBIC fills the queue (160-175 ms against the controllers' 20-30). The scenario's own
    20 s per arm, the length its goal is stated for: `rnf`'s start-up holds about three times its steady queue for
    1-1.5 s, a tenth of a 12 s run, and there it set `rnf`'s p95 (0.62 x BBR's in one run, 2026-11-26 15:41)."""
    results = _run_shortened("srsran-latency", srsran_build, sctp_preload, tmp_path, timeout_s=1100, duration_s=20)
    arms = json.loads((results / "summary.json").read_text())["arms"]
    assert set(arms) == {"smvs", "rnf", "cubic", "bbr"}
    bbr = arms["bbr"]
    for arm in ("smvs", "rnf"):
        values = arms[arm]
        print(
            f"{arm}: utilization {values['utilization']:.3f} (CUBIC {arms['cubic']['utilization']:.3f}, BBR "
            f"{arms['bbr']['utilization']:.3f}), queue p50 {values['queue_p50_bytes'] / 1000:.1f} kB, delay p95 "
            f"{values['delay_p95_ms']:.1f} ms (CUBIC {arms['cubic']['delay_p95_ms']:.1f}, BBR "
            f"{arms['bbr']['delay_p95_ms']:.1f}), RLC drops {values['rlc_drops_sdus']}"
        )
        assert values["rlc_drops_sdus"] == 0, (arm, values)
        assert values["utilization"] >= bbr["utilization"] - 0.01, (arm, values["utilization"], bbr["utilization"])
        assert values["delay_p95_ms"] <= 0.5 * bbr["delay_p95_ms"], (arm, values["delay_p95_ms"], bbr["delay_p95_ms"])


def _tcp_resets(path: Path) -> int:
    """The TCP segments with RST set in a raw-IP capture."""
    resets = 0
    for frame in read_pcap(path).frames:
        header = (frame.data[0] & 0x0F) * 4
        if frame.data[0] >> 4 == 4 and frame.data[9] == TCP and len(frame.data) > header + TCP_FLAGS:
            resets += bool(frame.data[header + TCP_FLAGS] & TCP_RST)
    return resets


@dataclass(frozen=True)
class Period:
    """One telemetry period of a UE's data bearer, with the wall time it arrived."""

    received_ns: int
    tti: int
    grant_ttis: int
    sched_bytes: int
    period_us: int
    mcs: float
    cqi: float
    grant_prbs: int
    cell_prbs: int


def _window(periods: list[Period], start_ns: int, end_ns: int) -> dict[str, float]:
    """Mean MCS and CQI (over granted TTIs, and periods), bytes per granted TTI and scheduled Mbit/s in a window."""
    inside = [p for p in periods if start_ns <= p.received_ns < end_ns]
    grants = sum(p.grant_ttis for p in inside)
    cqis = [p.cqi for p in inside if not math.isnan(p.cqi)]
    return {
        "mcs": sum(p.mcs * p.grant_ttis for p in inside if p.grant_ttis) / grants,
        "cqi": sum(cqis) / len(cqis),
        "bytes_per_grant": sum(p.sched_bytes for p in inside) / grants,
        "mbps": 8 * sum(p.sched_bytes for p in inside) / sum(p.period_us for p in inside),
    }


@pytest.mark.root
@pytest.mark.timeout(900)
def test_two_ues_through_the_bridge_a_10_db_step_lowers_one_ues_mcs_and_rate_only(
    srsran_build: SrsranBuild, sctp_preload: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """srsepc, srsenb, the bridge and two srsue (`srsran-zmq`, 15 PRB): both attach; with both downlinks backlogged
    (UDP above the cell's rate), ue2's gain steps down 10 dB over the bridge's control socket. ue2's MCS and scheduled
    rate fall within a second; ue1's stay. SNR at 0 dB: the UEs' downlink input is about 56-64 dBFS (`rnf bridge
    status`), so noise at 42 dBFS puts CQI near 13, below its ceiling, where 10 dB shows."""
    spec = SrsranZmqCellSpec(
        kind="srsran-zmq",
        namespace_prefix="brg" + uuid.uuid4().hex[:5],
        n_prb=15,
        enb_noise_dbfs=16,
        ues=[ZmqUeSpec(gain_db=0, noise_dbfs=42), ZmqUeSpec(gain_db=0, noise_dbfs=42)],
    )
    monkeypatch.setenv("SRSRAN_BUILD", str(srsran_build.build))
    if sctp_preload:
        monkeypatch.setenv("SCTPSHIM", sctp_preload)
    periods: dict[str, list[Period]] = {ue_ip(0): [], ue_ip(1): []}
    settle_s, before_s, after_s = 3.0, 6.0, 6.0

    async def run() -> tuple[int, dict[str, Any], dict[str, Any]]:
        recorder = FileRecorder(tmp_path / "series.lp")
        cell = SrsranCell(spec, tmp_path / "cell", recorder)
        async with cell:
            subscriber = Subscriber(cell.telemetry_endpoint)
            servers, clients = [], []
            for index in range(2):
                server = ["ip", "netns", "exec", cell.names.ue(index), "iperf3", "-s", "-1", "-B", ue_ip(index)]
                servers.append(subprocess.Popen(server, stdout=subprocess.DEVNULL))
            time.sleep(0.5)
            for index in range(2):
                client = ["ip", "netns", "exec", cell.names.core, "iperf3", "-c", ue_ip(index), "-u", "-b", "8M"]
                client += ["-l", "1400", "-t", str(settle_s + before_s + after_s + 2)]  # above 15 PRB's rate for one UE
                clients.append(subprocess.Popen(client, stdout=subprocess.DEVNULL))

            async def collect(seconds: float) -> None:
                deadline = time.monotonic() + seconds
                while time.monotonic() < deadline:
                    try:
                        burst = await asyncio.wait_for(subscriber.receive_burst(), 1.0)
                    except TimeoutError:
                        continue
                    now = time.time_ns()
                    for m in burst:
                        if m.lcid == DRB_LCID and m.ue_ip in periods:
                            periods[m.ue_ip].append(
                                Period(
                                    now,
                                    m.tti,
                                    m.dl_grant_ttis,
                                    m.sched_bytes,
                                    m.period_us,
                                    m.mean_mcs,
                                    m.mean_cqi,
                                    m.dl_grant_prbs,
                                    m.cell_dl_prbs,
                                )
                            )

            await collect(settle_s + before_s)
            reply = bridge_client.request(cell.bridge_control, {"command": "set_gain", "ue": "ue2", "gain_db": -10})
            step_ns = time.time_ns()
            await collect(after_s)
            status = bridge_client.request(cell.bridge_control, {"command": "status"})
            subscriber.close()
            for process in clients + servers:
                process.kill()
                process.wait()
        recorder.close()
        return step_ns, reply, status

    step_ns, reply, status = asyncio.run(run())
    second = 1_000_000_000
    before = {ip: _window(p, step_ns - int(before_s * second), step_ns) for ip, p in periods.items()}
    after = {ip: _window(p, step_ns + second, step_ns + int(after_s * second)) for ip, p in periods.items()}
    print(
        f"\nbridge: ue2's gain -10 dB from sample {reply['at_sample']}; "
        f"{status['stream_time_s']:.1f} s of samples in {status['wall_time_s']:.1f} s"
    )
    for ip, name in ((ue_ip(0), "ue1"), (ue_ip(1), "ue2")):
        b, a = before[ip], after[ip]
        print(
            f"{name} ({ip}): MCS {b['mcs']:.1f} -> {a['mcs']:.1f}, CQI {b['cqi']:.1f} -> {a['cqi']:.1f}, "
            f"bytes per granted TTI {b['bytes_per_grant']:.0f} -> {a['bytes_per_grant']:.0f}, "
            f"scheduled {b['mbps']:.2f} -> {a['mbps']:.2f} Mbit/s (6 s before the step, 1-6 s after)"
        )
    ue2 = periods[ue_ip(1)]
    threshold = before[ue_ip(1)]["mcs"] - 3
    first = next(p for p in ue2 if p.received_ns > step_ns and p.grant_ttis and p.mcs < threshold)
    tti_at_step = max(p.tti for p in ue2 if p.received_ns <= step_ns)  # the end of the last period before it
    print(
        f"ue2's first period with MCS below {threshold:.1f}: {(first.received_ns - step_ns) / 1e6:.0f} ms after the "
        f"step ({first.tti - tti_at_step} TTIs of the eNB)"
    )
    assert first.received_ns - step_ns < second
    assert after[ue_ip(1)]["mcs"] <= before[ue_ip(1)]["mcs"] - 3
    assert after[ue_ip(1)]["bytes_per_grant"] < 0.8 * before[ue_ip(1)]["bytes_per_grant"]
    assert after[ue_ip(1)]["mbps"] < before[ue_ip(1)]["mbps"]
    assert abs(after[ue_ip(0)]["mcs"] - before[ue_ip(0)]["mcs"]) <= 1
    assert abs(after[ue_ip(0)]["bytes_per_grant"] / before[ue_ip(0)]["bytes_per_grant"] - 1) <= 0.15

    # Resource blocks (contract 1.2): both downlinks backlogged, the two UEs' grants fill the 15-PRB carrier (but the
    # TTIs' system information) and never hold more, in the eNB's TTIs (a period's grants fall in the TTIs after the
    # previous period's `tti`, up to its own).
    ue1 = periods[ue_ip(0)]
    assert all(p.cell_prbs == 15 for ip in periods for p in periods[ip])
    first_tti = min(p.tti for p in ue1 if p.received_ns >= step_ns - int(before_s * second))
    last_tti = max(p.tti for p in ue1 if p.received_ns < step_ns + int(after_s * second))
    granted = sum(p.grant_prbs for ip in periods for p in periods[ip] if first_tti < p.tti <= last_tti)
    share = granted / (15 * (last_tti - first_tti))
    print(f"the two UEs' share of the cell's PRBs over {last_tti - first_tti} TTIs: {share:.4f}")
    assert 0.9 <= share <= 1.0


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
