"""The GNU Radio bridge on the real stack: its CPU, and whether srsenb and srsue still keep real time
(docs/benchmarks.md, zmq-bridge/README.md). Needs root and a patched srsRAN build:

    SRSRAN_BUILD=/path/to/build python -m rnf_experiments.cells.bench [--seconds 10] [--prb 6 15 25]

For each PRB count, three cells in turn, each with every UE's downlink saturated (UDP from the core at twice the
cell's rate per UE):
- `srsran`: srsenb wired to one srsue on srsRAN's own ZeroMQ radio, the reference without the bridge;
- `srsran-zmq` with one UE, and with two UEs, through the bridge.

Over the measurement window, after the load has settled:
- CPU of the bridge, srsenb and the srsue processes (summed), from /proc/PID/stat (utime + stime), % of one core;
- the eNB's real-time factor: TTIs run (the telemetry's 64-bit `tti`) per wall-clock millisecond of its timestamps;
- the bridge's own: seconds of srsenb's samples carried per wall-clock second (its `status` request);
- the downlink bytes the eNB scheduled, Mbit/s, summed over the UEs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from rnf_bridge import client as bridge_client
from rnf_telemetry.message import TelemetryMessage
from rnf_telemetry.record import NullRecorder
from rnf_telemetry.transport import Subscriber

from rnf_experiments.cells.spec import SrsranCellSpec, SrsranUeSpec, SrsranZmqCellSpec, ZmqUeSpec
from rnf_experiments.cells.srsran import SrsranCell
from rnf_experiments.cells.stack import DRB_LCID, ue_ip

console = Console(highlight=False)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SETTLE_S = 3.0
# srsRAN's TCP downlink on the ZeroMQ radio here is about 3, 9 and 16 Mbit/s at 6, 15 and 25 PRB
# (../shared/tools/sctp-udp-shim/README.md): twice that keeps every queue backlogged.
LOAD_MBPS = {6: 6, 15: 18, 25: 32}


@dataclass(frozen=True)
class Measurement:
    """One cell over the measurement window."""

    prb: int
    path: str
    bridge_cpu: float | None  # % of one core
    enb_cpu: float
    ues_cpu: float
    enb_realtime: float  # TTIs per wall-clock ms
    bridge_realtime: float | None  # seconds of samples per wall-clock second
    scheduled_mbps: float


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, all its threads, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # fields 14 and 15 of proc(5)


def spec_for(prb: int, ues: int | None, prefix: str) -> SrsranCellSpec | SrsranZmqCellSpec:
    """`ues` None: the direct radio, one UE; else the bridge with that many UEs at 0 dB."""
    if ues is None:
        return SrsranCellSpec(kind="srsran", namespace_prefix=prefix, n_prb=prb, ues=[SrsranUeSpec()])  # type: ignore[arg-type]
    return SrsranZmqCellSpec(
        kind="srsran-zmq",
        namespace_prefix=prefix,
        n_prb=prb,  # type: ignore[arg-type]
        ues=[ZmqUeSpec(gain_db=0) for _ in range(ues)],
    )


def bridge_status(cell: SrsranCell) -> dict[str, Any] | None:
    """The bridge's `status` reply (sample and wall-clock time so far); None on the direct radio."""
    return None if cell.bridge is None else bridge_client.request(cell.bridge_control, {"command": "status"})


async def measure(prb: int, ues: int | None, seconds: float, workdir: Path) -> Measurement:
    spec = spec_for(prb, ues, "bch" + uuid.uuid4().hex[:5])
    messages: list[TelemetryMessage] = []
    async with SrsranCell(spec, workdir, NullRecorder()) as cell:
        assert cell.stack is not None
        n_ues = len(spec.ues)
        load = []
        for index in range(n_ues):
            server = ["ip", "netns", "exec", cell.names.ue(index), "iperf3", "-s", "-1", "-B", ue_ip(index)]
            load.append(subprocess.Popen(server, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        await asyncio.sleep(0.5)
        for index in range(n_ues):
            client = ["ip", "netns", "exec", cell.names.core, "iperf3", "-c", ue_ip(index), "-u", "-l", "1400"]
            client += ["-b", f"{LOAD_MBPS[prb]}M", "-t", str(round(SETTLE_S + seconds + 3))]
            load.append(subprocess.Popen(client, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        subscriber = Subscriber(cell.telemetry_endpoint)
        try:
            await asyncio.sleep(SETTLE_S)
            processes = {name: process.pid for name, process in cell.stack.processes.items()}
            if cell.bridge is not None:
                processes["bridge"] = cell.bridge.pid
            status_before = (
                None if cell.bridge is None else bridge_client.request(cell.bridge_control, {"command": "status"})
            )
            cpu_before = {name: cpu_seconds(pid) for name, pid in processes.items()}
            started = time.monotonic()
            deadline = started + seconds
            while (left := deadline - time.monotonic()) > 0:
                try:
                    messages += await asyncio.wait_for(subscriber.receive_burst(), max(left, 0.01))
                except TimeoutError:
                    break
            elapsed = time.monotonic() - started
            cpu = {name: 100 * (cpu_seconds(pid) - cpu_before[name]) / elapsed for name, pid in processes.items()}
            status_after = (
                None if cell.bridge is None else bridge_client.request(cell.bridge_control, {"command": "status"})
            )
        finally:
            subscriber.close()
            for process in load:
                process.kill()
                process.wait()
    bearer = [m for m in messages if m.lcid == DRB_LCID]
    if len(bearer) < 2:
        raise RuntimeError(f"{len(bearer)} telemetry messages of the data bearer in {seconds:g} s at {prb} PRB")
    first = min(bearer, key=lambda m: m.timestamp_ns)
    last = max(bearer, key=lambda m: m.timestamp_ns)
    enb_realtime = (last.tti - first.tti) / ((last.timestamp_ns - first.timestamp_ns) / 1e6)
    bridge_realtime = None
    if status_before is not None and status_after is not None:
        stream = status_after["stream_time_s"] - status_before["stream_time_s"]
        bridge_realtime = stream / (status_after["wall_time_s"] - status_before["wall_time_s"])
    span_s = sum(m.period_us for m in bearer) / 1e6 / n_ues
    return Measurement(
        prb=prb,
        path="direct (reference)" if ues is None else f"bridge, {ues} UE{'s' if ues > 1 else ''}",
        bridge_cpu=cpu.get("bridge"),
        enb_cpu=cpu["enb"],
        ues_cpu=sum(value for name, value in cpu.items() if name.startswith("ue")),
        enb_realtime=enb_realtime,
        bridge_realtime=bridge_realtime,
        scheduled_mbps=8 * sum(m.sched_bytes for m in bearer) / span_s / 1e6,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="measurement window per cell")
    parser.add_argument("--prb", type=int, nargs="+", choices=sorted(LOAD_MBPS), default=sorted(LOAD_MBPS))
    args = parser.parse_args()
    cases = [(prb, ues) for prb in args.prb for ues in (None, 1, 2)]
    rows: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="rnf-bridge-bench-") as folder, Progress(console=console) as progress:
        task = progress.add_task("cells", total=len(cases))
        for number, (prb, ues) in enumerate(cases):
            rows.append(asyncio.run(measure(prb, ues, args.seconds, Path(folder) / str(number))))
            progress.advance(task)
    table = Table(
        "PRB",
        "path",
        "bridge CPU %",
        "srsenb CPU %",
        "srsue CPU %",
        "eNB TTIs per ms",
        "bridge x real time",
        "scheduled Mbit/s",
        title=f"the bridge on the real stack, every downlink saturated, {args.seconds:g} s per cell",
    )
    for row in rows:
        table.add_row(
            str(row.prb),
            row.path,
            "-" if row.bridge_cpu is None else f"{row.bridge_cpu:.0f}",
            f"{row.enb_cpu:.0f}",
            f"{row.ues_cpu:.0f}",
            f"{row.enb_realtime:.3f}",
            "-" if row.bridge_realtime is None else f"{row.bridge_realtime:.3f}",
            f"{row.scheduled_mbps:.2f}",
        )
    console.print(table)


if __name__ == "__main__":
    main()
