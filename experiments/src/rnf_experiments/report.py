"""Turning results folders into summary.json, plots, and the comparison table."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from rnf_experiments import analysis, plots


def summarize_results(results: Path) -> dict[str, Any]:
    """Compute summary.json and the plots of one results folder, and write them into it."""
    metadata, arm_runs = analysis.load_results(results)
    runs = [analysis.summarize(run) for run in arm_runs]
    summary = {"scenario": metadata["scenario"], "runs": runs, "arms": analysis.aggregate(runs)}
    (results / "summary.json").write_text(json.dumps(summary, indent=1, allow_nan=True) + "\n")
    plot_dir = results / "plots"
    plot_dir.mkdir(exist_ok=True)
    for run in arm_runs:
        plots.time_series(run, plot_dir / f"{run.repetition}-{run.arm}-timeseries.png")
    if runs:
        plots.throughput_delay(runs, plot_dir / "throughput-delay.png")
    return summary


def _cell(value: float, scale: float = 1.0, digits: int = 1) -> str:
    return "-" if value is None or math.isnan(value) else f"{value * scale:.{digits}f}"


def table(summaries: dict[str, dict[str, Any]]) -> Table:
    """One row per arm, with a results column when several results folders are compared."""
    several = len(summaries) > 1
    result = Table(title="arms compared (mean over repetitions)")
    columns = ["results"] if several else []
    columns += ["arm", "util. %", "goodput Mbit/s", "queue p50 kB", "queue p95 kB", "delay p95 ms", "drops", "runs"]
    for column in columns:
        result.add_column(column, justify="left" if column in ("results", "arm") else "right")
    for name, summary in summaries.items():
        for arm, values in summary["arms"].items():
            result.add_row(
                *([name] if several else []),
                arm,
                _cell(values["utilization"], 100),
                _cell(values["goodput_mbps"], digits=2),
                _cell(values["queue_p50_bytes"], 1e-3),
                _cell(values["queue_p95_bytes"], 1e-3),
                _cell(values["delay_p95_ms"]),
                _cell(values["rlc_drops_sdus"], digits=0),
                str(values["repetitions"]),
            )
    return result


def print_table(summaries: dict[str, dict[str, Any]], console: Console) -> None:
    console.print(table(summaries), width=max(console.width, 110))
