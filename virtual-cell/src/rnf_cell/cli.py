"""`rnf cell` runs the virtual cell from a cell file; `rnf trace` inspects and generates capacity traces."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import tempfile
from pathlib import Path

import click
import numpy as np
from rich.console import Console
from rich.table import Table
from rnf_foundation.errors import UserError
from rnf_foundation.numbers import SEED, FiniteFloat
from rnf_telemetry.record import FileRecorder, NullRecorder, Recorder

from rnf_cell import traces
from rnf_cell.cell import VirtualCell
from rnf_cell.config import TraceFile, load_cell

console = Console(highlight=False)


async def _serve(cell: VirtualCell) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with cell:
        names = cell.names
        console.print(
            f"virtual cell up: server ns [bold]{names.server}[/], core ns [bold]{names.core}[/], UEs "
            + ", ".join(f"{names.ue(i)} ({ip})" for i, ip in enumerate(cell.ue_ips))
        )
        console.print(
            f"telemetry on {cell.config.telemetry.endpoint} every {cell.config.telemetry.period_ms} ms; Ctrl-C stops"
        )
        waiting = asyncio.create_task(cell.wait())
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
    _print_totals(cell)


def _print_totals(cell: VirtualCell) -> None:
    table = Table(title="virtual cell totals")
    for column in ("UE", "capacity MB", "scheduled MB", "delivered MB", "drops (SDU)", "outage TTIs"):
        table.add_column(column, justify="right")
    for ue, totals in sorted(cell.totals.items()):
        sched = totals["sched_new_bytes"] + totals["sched_retx_bytes"]
        table.add_row(
            str(ue + 1),
            f"{totals['capacity_bytes'] / 1e6:.2f}",
            f"{sched / 1e6:.2f}",
            f"{totals['delivered_bytes'] / 1e6:.2f}",
            str(totals["dropped_sdus"]),
            str(totals["outage_ttis"]),
        )
    console.print(table)
    if cell.summary:
        lateness = cell.summary.get("tti_lateness_ns", {})
        assert isinstance(lateness, dict)
        console.print(
            f"TTIs {cell.summary.get('ttis')}, lateness p99 {lateness.get('p99', 0) / 1e3:.0f} µs, "
            f"max {lateness.get('max', 0) / 1e3:.0f} µs"
        )


@click.command("cell")
@click.argument("config_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--duration", type=FiniteFloat(min=0.01), help="Stop after this many seconds.")
@click.option(
    "--record",
    "record_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write series.lp, packets.bin and the datapath's files to this folder.",
)
def cell(config_file: Path, duration: float | None, record_dir: Path | None) -> None:
    """Run the virtual cell described by CONFIG_FILE until Ctrl-C (or --duration)."""
    config = load_cell(config_file)
    try:
        traces.check_files(config.ues)
    except traces.TraceError as error:
        raise UserError(f"{config_file}: {error}") from None
    with contextlib.ExitStack() as stack:
        workdir = record_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="rnf-cell-")))
        workdir.mkdir(parents=True, exist_ok=True)
        recorder: Recorder = FileRecorder(workdir / "series.lp") if record_dir else NullRecorder()
        stack.callback(recorder.close)
        asyncio.run(_serve(VirtualCell(config, workdir, recorder, duration)))


@click.group("trace")
def trace() -> None:
    """Capacity traces: inspect a file, or generate one."""


@trace.command("show")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "trace_format",
    type=click.Choice(["csv", "mahimahi", "telemetry"]),
    default=None,
    help="File format; default from the extension (.csv, else mahimahi).",
)
def show(path: Path, trace_format: str | None) -> None:
    """Print a trace's length, mean rate and outage share."""
    fmt = trace_format or ("csv" if path.suffix == ".csv" else "telemetry" if path.suffix == ".lp" else "mahimahi")
    try:
        capacity = traces.build(TraceFile(file=path, format=fmt), np.random.default_rng(0))  # type: ignore[arg-type]
    except traces.TraceError as error:
        raise UserError(str(error)) from None
    rates = traces.capacity_bps(capacity)
    outage = float(np.mean(capacity == traces.OUTAGE))
    console.print(
        f"{path}: {len(capacity)} TTIs ({len(capacity) / 1000:.3f} s), mean {rates.mean() / 1e6:.3f} Mbit/s, "
        f"min/max over 100 ms {_windowed(rates).min() / 1e6:.3f}/{_windowed(rates).max() / 1e6:.3f} Mbit/s, "
        f"outage {outage:.1%}"
    )


def _windowed(rates: np.ndarray) -> np.ndarray:
    window = min(100, len(rates))
    return np.convolve(rates, np.ones(window) / window, mode="valid")


@trace.command("generate")
@click.argument("output", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--min-mbps", type=FiniteFloat(min=0), required=True)
@click.option("--max-mbps", type=FiniteFloat(min=0), required=True)
@click.option("--period", "period_s", type=FiniteFloat(min=0.001), required=True, help="Seconds per level.")
@click.option(
    "--duration",
    "duration_s",
    type=FiniteFloat(min=0.001, max=traces.MAX_TTIS * traces.TTI_S),
    default=60.0,
    show_default=True,
)
@click.option("--seed", type=SEED, default=1, show_default=True)
def generate(output: Path, min_mbps: float, max_mbps: float, period_s: float, duration_s: float, seed: int) -> None:
    """Write a random piecewise-constant trace (paper 000 Fig. 11) as `tti,bytes` CSV."""
    if min_mbps > max_mbps:
        raise UserError(f"--min-mbps {min_mbps:g} is above --max-mbps {max_mbps:g}")
    try:
        capacity = traces.piecewise(min_mbps, max_mbps, period_s, duration_s, np.random.default_rng(seed))
    except traces.TraceError as error:
        raise UserError(f"trace generate: {error}") from None
    try:
        with output.open("w") as handle:
            handle.write("tti,bytes\n")
            handle.writelines(f"{i},{b}\n" for i, b in enumerate(capacity.tolist()))
    except OSError as error:
        raise UserError(f"{output}: {error.strerror}") from None
    console.print(f"wrote {len(capacity)} TTIs to {output}")
