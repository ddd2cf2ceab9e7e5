"""Bridge benchmark: CPU at 6, 15 and 25 PRB with one and two UEs, and whether it keeps real time.

    .venv/bin/python -m rnf_bridge.bench [--seconds 4]

Fake srsRAN radios (`fake_radio.py`, in this process) stand in for srsenb and srsue: srsenb transmits one 1 ms
subframe per millisecond, 4 subframes ahead of what it has received (srsenb's FDD timing), and every UE answers
sample for sample. The bridge runs as `rnf bridge run` runs it, in its own process under /usr/bin/python3, with
AWGN at every receiver. For each case:

- paced: srsenb keeps real time for `--seconds`; the bridge's CPU (user + system, all threads, % of one core) and
  whether the loop kept up (samples moved over wall time, and srsenb's worst lateness);
- unpaced: srsenb as fast as the loop goes; how many times real time the bridge can carry.

The reference, measured in the same run, is srsRAN's own one-UE setup without a bridge: the same fake srsenb
wired straight to one fake UE. Its unpaced speed is what the fake radios alone can do, so it bounds the bridge's.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zmq
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from rnf_bridge.fake_radio import FakeRadio, noise_block
from rnf_bridge.launch import flowgraph_process
from rnf_bridge.plan import Plan, UePlan
from rnf_bridge.schedule import Schedule

console = Console(highlight=False, width=100)
CASES = ((6, 1.92e6), (15, 3.84e6), (25, 5.76e6))
ANY_PORT = "tcp://127.0.0.1:0"
SIGNAL_DBFS = -20.0
NOISE_DBFS = -70.0
ENB_LEAD = 4  # subframes srsenb transmits ahead of what it received
UNPACED_SUBFRAMES = 3000


@dataclass(frozen=True)
class Result:
    prb: int
    ues: int
    bridged: bool
    cpu_percent: float | None  # the bridge process; None without a bridge
    radios_cpu_percent: float  # this process: the fake radios
    realtime: float  # samples moved / wall time / sample rate
    max_lag_ms: float
    unpaced_realtime: float


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and all its threads, from /proc (fields 14 and 15 of stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _radios(context: zmq.Context[Any], rate: float, ues: int, subframes: int, paced: bool) -> list[FakeRadio]:
    block = round(rate / 1000)
    waveform = noise_block(block, SIGNAL_DBFS, seed=1)
    enb = FakeRadio(
        "srsenb",
        context,
        ANY_PORT,
        block=block,
        subframes=subframes,
        waveform=waveform,
        lead=ENB_LEAD,
        period_s=1e-3 if paced else None,
        keep=False,
    )
    return [enb] + [
        FakeRadio(f"ue{i + 1}", context, ANY_PORT, block=block, subframes=subframes, waveform=waveform, keep=False)
        for i in range(ues)
    ]


def _move(radios: list[FakeRadio], enb_rx: str, ue_rx: dict[str, str], bridge_pid: int | None) -> tuple[float, ...]:
    """Run the radios to the end; (wall s, bridge CPU s, this process's CPU s)."""
    cpu_before = _cpu_seconds(bridge_pid) if bridge_pid else 0.0
    own_before = time.process_time()
    began = time.monotonic()
    radios[0].start(enb_rx)
    for ue in radios[1:]:
        ue.start(ue_rx[ue.name])
    for radio in radios:
        radio.join(timeout_s=600)
    wall = time.monotonic() - began
    cpu = _cpu_seconds(bridge_pid) - cpu_before if bridge_pid else 0.0
    return wall, cpu, time.process_time() - own_before


def _bridged(rate: float, ues: int, subframes: int, paced: bool) -> tuple[float, float, float, float]:
    """(wall s, bridge CPU s, radios CPU s, max lag s) through a bridge process."""
    context: zmq.Context[Any] = zmq.Context()
    radios = _radios(context, rate, ues, subframes, paced)
    plan = Plan(
        sample_rate=rate,
        enb_tx=radios[0].tx_endpoint,
        enb_rx=ANY_PORT,
        ues=tuple(
            UePlan(ue.name, ue.tx_endpoint, ANY_PORT, Schedule.constant(-3.0), noise_dbfs=NOISE_DBFS)
            for ue in radios[1:]
        ),
        control=ANY_PORT,
        enb_noise_dbfs=NOISE_DBFS,
        peer_timeout_s=1.0,
    )
    with tempfile.TemporaryDirectory(prefix="rnf-bridge-bench-") as folder:
        ready_file = Path(folder) / "ready.json"
        with (Path(folder) / "bridge.log").open("w") as log, flowgraph_process(plan, ready_file, stderr=log) as bridge:
            deadline = time.monotonic() + 30
            while not ready_file.exists():
                if bridge.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the bridge did not start: {(Path(folder) / 'bridge.log').read_text()}")
                time.sleep(0.05)
            ready = json.loads(ready_file.read_text())
            ue_rx = {name: ue["rx"] for name, ue in ready["ues"].items()}
            wall, cpu, own = _move(radios, ready["enb_rx"], ue_rx, bridge.pid)
    lag = radios[0].max_lag_s
    for radio in radios:
        radio.close()
    context.destroy(linger=0)
    return wall, cpu, own, lag


def _direct(rate: float, subframes: int, paced: bool) -> tuple[float, float, float]:
    """(wall s, radios CPU s, max lag s) with srsenb wired straight to one UE, as srsRAN runs without a bridge."""
    context: zmq.Context[Any] = zmq.Context()
    enb, ue = _radios(context, rate, 1, subframes, paced)
    wall, _, own = _move([enb, ue], ue.tx_endpoint, {ue.name: enb.tx_endpoint}, None)
    lag = enb.max_lag_s
    enb.close()
    ue.close()
    context.destroy(linger=0)
    return wall, own, lag


def measure(prb: int, rate: float, ues: int | None, seconds: float) -> Result:
    """One case: through a bridge with `ues` UEs, or (None) srsenb wired straight to one UE."""
    subframes = round(seconds * 1000)
    cpu: float | None = None
    if ues is None:
        wall, own, lag = _direct(rate, subframes, paced=True)
        unpaced_wall, _, _ = _direct(rate, UNPACED_SUBFRAMES, paced=False)
    else:
        wall, bridge_cpu, own, lag = _bridged(rate, ues, subframes, paced=True)
        unpaced_wall, _, _, _ = _bridged(rate, ues, UNPACED_SUBFRAMES, paced=False)
        cpu = 100 * bridge_cpu / wall
    return Result(
        prb=prb,
        ues=ues or 1,
        bridged=ues is not None,
        cpu_percent=cpu,
        radios_cpu_percent=100 * own / wall,
        realtime=subframes / 1000 / wall,
        max_lag_ms=1000 * lag,
        unpaced_realtime=UNPACED_SUBFRAMES / 1000 / unpaced_wall,
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m rnf_bridge.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="length of each paced run (default 4)")
    args = parser.parse_args()
    console.print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
    results: list[Result] = []
    cases = [(prb, rate, ues) for prb, rate in CASES for ues in (None, 1, 2)]
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("measuring", total=len(cases))
        for prb, rate, ues in cases:
            progress.update(task, description=f"{prb} PRB, {f'{ues} UE(s)' if ues else 'no bridge'}")
            results.append(measure(prb, rate, ues, args.seconds))
            progress.advance(task)
    table = Table(title=f"bridge with AWGN at every receiver; paced runs of {args.seconds:g} s")
    columns = ("PRB", "Msps", "path", "bridge CPU", "radios CPU", "paced xRT", "worst lag", "unpaced xRT")
    for column in columns:
        table.add_column(column, justify="right")
    for result in results:
        rate = dict(CASES)[result.prb] / 1e6
        table.add_row(
            str(result.prb),
            f"{rate:g}",
            f"bridge, {result.ues} UE" if result.bridged else "direct (ref)",
            "-" if result.cpu_percent is None else f"{result.cpu_percent:.0f} %",
            f"{result.radios_cpu_percent:.0f} %",
            f"{result.realtime:.3f}",
            f"{result.max_lag_ms:.1f} ms",
            f"{result.unpaced_realtime:.2f}",
        )
    console.print(table)
    console.print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
