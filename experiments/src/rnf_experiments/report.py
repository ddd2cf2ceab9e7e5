"""Turning results folders into summary.json, plots, and the comparison table."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rnf_foundation.errors import UserError

from rnf_experiments import analysis, plots
from rnf_experiments.scenario import file_name_part


def summarize_results(results: Path) -> dict[str, Any]:
    """Compute summary.json and the plots of one results folder, and write them into it."""
    computed = compute(results)
    write(results, computed)
    return computed.summary


@dataclass(frozen=True)
class Computed:
    """A results folder read whole and summarized, not yet written back."""

    summary: dict[str, Any]
    runs: list[analysis.ArmRun]


def compute(results: Path) -> Computed:
    """summary.json's content for a results folder, from its completed runs; a UserError naming the first file
    that is missing or malformed, or the folder when no run completed. Nothing is written."""
    metadata, arm_runs = analysis.load_results(results)
    complete = [run for run in arm_runs if run.complete]
    incomplete = [run.directory.name for run in arm_runs if not run.complete]
    if not complete:
        raise UserError(f"{results}: no run completed ({', '.join(incomplete)}), nothing to report")
    runs = []
    for run in complete:
        try:
            runs.append(analysis.summarize(run))
        except (KeyError, TypeError, ValueError) as error:
            raise UserError(f"{run.directory}: malformed flow or series values: {error!r}") from None
    summary = {
        "scenario": metadata["scenario"],
        "sweep": (metadata["scenario_data"].get("sweep") or {}).get("parameter"),
        "runs": runs,
        "incomplete": incomplete,
        "arms": analysis.aggregate(runs),
    }
    return Computed(summary, complete)


def write(results: Path, computed: Computed) -> None:
    """summary.json and the plots into the results folder."""
    summary, runs = computed.summary, computed.summary["runs"]
    (results / "summary.json").write_text(json.dumps(summary, indent=1, allow_nan=True) + "\n")
    plot_dir = results / "plots"
    plot_dir.mkdir(exist_ok=True)
    for run in computed.runs:
        plots.time_series(run, plot_dir / f"{run.directory.name}-timeseries.png")
    plots.throughput_delay(runs, plot_dir / "throughput-delay.png")
    if not summary["sweep"]:
        plots.delay_cdf(runs, plot_dir / "delay-cdf.png", title=summary["scenario"])
        return
    plots.sweep(runs, summary["sweep"], plot_dir / "sweep.png")
    for value in sorted({run["sweep_value"] for run in runs}, key=str):
        at = [run for run in runs if run["sweep_value"] == value]
        title = f"{summary['scenario']}, {summary['sweep']} = {value}"
        plots.throughput_delay(at, plot_dir / sweep_plot_name("throughput-delay", summary["sweep"], value), title)
        plots.delay_cdf(at, plot_dir / sweep_plot_name("delay-cdf", summary["sweep"], value), title)


def sweep_plot_name(plot: str, parameter: str, value: object) -> str:
    """The file name of one sweep point's plot: a value may be a path (a trace file), whose separators a file
    name cannot hold."""
    return f"{plot}-{parameter}-{file_name_part(str(value)).strip('_')}.png"


def _cell(value: float | None, scale: float = 1.0, digits: int = 1) -> str:
    return "-" if value is None or math.isnan(value) else f"{value * scale:.{digits}f}"


TABLE_WIDTH = 170
LATE_TTI_MS = 50.0
DECISION_GAP_MS = 50.0  # five telemetry periods of 10 ms, the controllers' default for stale telemetry
# a proxy that stood still for 1 % of a run may have left the link idle that long: a point of utilization, the size
# of the differences the tables are read for
STALLED_SHARE = 0.01
SLOW_ENB_TTIS_PER_MS = 0.5  # half of real time: TCP's and the proxy's timers then see another channel
# (header, summary key, scale, digits); a column whose values are all NaN is left out
COLUMNS = (
    ("util. %", "utilization", 100, 1),
    ("cell util. %", "cell_utilization", 100, 1),
    ("goodput Mbit/s", "goodput_mbps", 1, 2),
    ("queue p50 kB", "queue_p50_bytes", 1e-3, 1),
    ("queue p95 kB", "queue_p95_bytes", 1e-3, 1),
    ("empty %", "queue_empty_fraction", 100, 1),
    ("delay p95 ms", "delay_p95_ms", 1, 1),
    ("in band %", "band_fraction", 100, 1),
    ("settling s", "settling_s", 1, 2),
    ("TTSU s", "ttsu_s", 1, 2),
    ("Jain", "jain_fairness", 1, 3),
    ("retrans.", "retrans_segments", 1, 0),
    ("RTOs", "rto", 1, 0),
    ("drops", "rlc_drops_sdus", 1, 0),
)


def table(summaries: dict[str, dict[str, Any]]) -> Table:
    """One row per arm (and sweep value), with a results column when several results folders are compared."""
    several = len(summaries) > 1
    rows = [(name, values) for name, summary in summaries.items() for values in summary["arms"].values()]
    sweeps: set[str] = {summary["sweep"] for summary in summaries.values() if summary.get("sweep")}
    shown = [c for c in COLUMNS if any(not math.isnan(values[c[1]]) for _, values in rows)]
    # TTSU is over the transfers that completed: where some did not, how many did says what it leaves out
    with_done = any(values["flows_complete"] < values["flows"] for _, values in rows)
    result = Table(title="arms compared (mean over repetitions)")
    headers = (
        (["results"] if several else [])
        + ["arm"]
        + sorted(sweeps)
        + [c[0] for c in shown]
        + (["done"] if with_done else [])
        + ["runs"]
    )
    for header in headers:
        result.add_column(header, justify="left" if header in ("results", "arm") else "right")
    for name, values in rows:
        result.add_row(
            *([name] if several else []),
            values["arm"],
            *([str(values["sweep_value"])] if sweeps else []),
            *(_cell(values[key], scale, digits) for _, key, scale, digits in shown),
            *([f"{_count(values['flows_complete'])} of {_count(values['flows'])}"] if with_done else []),
            str(values["repetitions"]),
        )
    return result


def _count(mean_count: float) -> str:
    """A count averaged over repetitions: whole where it is, else to a tenth."""
    return f"{mean_count:.0f}" if mean_count == round(mean_count) else f"{mean_count:.1f}"


PER_UE_COLUMNS = (
    ("goodput Mbit/s", "goodput_mbps", 1, 2),
    ("util. %", "utilization", 100, 1),
    ("queue p50 kB", "queue_p50_bytes", 1e-3, 1),
    ("in band %", "band_fraction", 100, 1),
)


def per_ue_table(summary: dict[str, Any]) -> Table:
    """One row per arm (and sweep value) and UE: the UE's figures, mean over repetitions."""
    by_group: dict[str, list[dict[str, Any]]] = {}
    for run in summary["runs"]:
        by_group.setdefault(analysis.group_key(run), []).append(run)
    result = Table(title="per UE (mean over repetitions)")
    for header in ("arm", "UE", *(column[0] for column in PER_UE_COLUMNS)):
        result.add_column(header, justify="left" if header == "arm" else "right")
    for group, runs in by_group.items():
        for ue in sorted({ue for run in runs for ue in run["ues"]}, key=int):
            values = [run["ues"][ue] for run in runs if ue in run["ues"]]
            cells = [
                _cell(analysis.mean([v[key] for v in values]), scale, digits)
                for _, key, scale, digits in PER_UE_COLUMNS
            ]
            result.add_row(group, ue, *cells)
    return result


def _run_label(run: dict[str, Any]) -> str:
    """How a warning names a run: its arm (and sweep value) and repetition."""
    return f"{analysis.group_key(run)}, repetition {run['repetition']}"


def late_runs(summary: dict[str, Any]) -> list[tuple[str, float]]:
    """Runs in which the cell's TTI clock fell behind real time by more than LATE_TTI_MS (CPU starvation: other
    real-time work on the machine); their figures do not describe the configured channel."""
    return [
        (_run_label(run), run["tti_late_max_ms"]) for run in summary["runs"] if run["tti_late_max_ms"] > LATE_TTI_MS
    ]


def stalled_runs(summary: dict[str, Any]) -> list[tuple[str, float]]:
    """Runs in which a UE's controller made no step for more than DECISION_GAP_MS: the proxy's process stood still
    (on a small host beside srsRAN) or its telemetry stopped; meanwhile nothing was released toward that UE."""
    return [
        (_run_label(run), gap)
        for run in summary["runs"]
        if (gap := run.get("decision_gap_max_ms", math.nan)) > DECISION_GAP_MS
    ]


def stalled_share_runs(summary: dict[str, Any]) -> list[tuple[str, float]]:
    """Runs in which a UE's controller stood still for more than STALLED_SHARE of the run in steps that came more
    than two periods late (`analysis.decision_stalled_share`): the host starved the proxy in many short stalls, none
    long enough for `stalled_runs`; after a burst of them the default reference's reserve holds the queue that
    covered them for seconds (proxy/README.md)."""
    return [
        (_run_label(run), share)
        for run in summary["runs"]
        if (share := run.get("decision_stalled_share", math.nan)) > STALLED_SHARE
    ]


def slow_enb_runs(summary: dict[str, Any]) -> list[tuple[str, float]]:
    """Runs in which a srsRAN eNB ran fewer than SLOW_ENB_TTIS_PER_MS TTIs per millisecond (its own count): the stack
    could not keep up, or nearly stood still; what the arm met was not the configured channel in real time."""
    return [
        (_run_label(run), rate)
        for run in summary["runs"]
        if (rate := run.get("enb_ttis_per_ms", math.nan)) < SLOW_ENB_TTIS_PER_MS
    ]


def lossy_delay_runs(summary: dict[str, Any]) -> list[tuple[str, int, int]]:
    """Runs whose delay measurement lost packets (the virtual cell's packet log, a srsRAN cell's captures): the run,
    the packets lost and the SDUs the delay percentiles cover."""
    return [
        (_run_label(run), int(lost), run["delay_sdus"])
        for run in summary["runs"]
        if (lost := run.get("delay_records_lost", math.nan)) > 0
    ]


def print_table(summaries: dict[str, dict[str, Any]], console: Console) -> None:
    console.width = max(console.width, TABLE_WIDTH)  # a pipe or CI log reports 80 columns: never squeeze the figures
    console.print(table(summaries))
    for name, summary in summaries.items():
        for folder in summary.get("incomplete", []):
            console.print(f"[bold red]warning[/]: {name}, runs/{folder}: the run did not complete; left out")
        for run, late_ms in late_runs(summary):
            console.print(
                f"[bold red]warning[/]: {name}, {run}: the cell fell {late_ms:.0f} ms behind real time "
                "(CPU starved by other work); its figures are suspect, run it again on a quiet machine"
            )
        for run, gap_ms in stalled_runs(summary):
            console.print(
                f"[bold red]warning[/]: {name}, {run}: the controller made no step for {gap_ms:.0f} ms (the proxy's "
                "process stood still, or its telemetry stopped); nothing was released toward the UE meanwhile"
            )
        for run, share in stalled_share_runs(summary):
            console.print(
                f"[bold red]warning[/]: {name}, {run}: the controller stood still for {share:.1%} of the run, in "
                "steps more than two periods late (CPU starved by other work); its figures are suspect, run it again "
                "on a quiet machine"
            )
        for run, rate in slow_enb_runs(summary):
            console.print(
                f"[bold red]warning[/]: {name}, {run}: the eNB ran {rate:.2f} TTIs per ms (its own count; real time "
                "is 1): the stack could not keep up; its figures are not comparable, run it again"
            )
        for run, lost, sdus in lossy_delay_runs(summary):
            console.print(
                f"[bold red]warning[/]: {name}, {run}: the delay measurement lost {lost} packets; "
                f"the delay percentiles cover the {sdus} SDUs it recorded"
            )


def by_host(computed: Computed, metadata: dict[str, Any]) -> Table:
    """Per node (run.json's node.host; a local run's metadata host): its runs, and per arm (and sweep value) the
    mean goodput and p95 delay with their ratios to the scenario's first arm in the same blocks (one sweep point, one
    repetition: the pairs a cluster keeps on one node), so a node that measures differently stands out."""
    reference = str(metadata["scenario_data"]["arms"][0]["name"])
    hosts: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for run, values in zip(computed.runs, computed.summary["runs"], strict=True):
        node = run.description.get("node") or {}
        hosts.setdefault(str(node.get("host", metadata.get("host", "?"))), []).append((node, values))
    result = Table(title=f"per node (ratios: to arm {reference!r} of the same block, mean over blocks)")
    for header in ("host", "workers", "runs", "arm", "goodput Mbit/s", "delay p95 ms", "goodput ratio", "p95 ratio"):
        result.add_column(header, justify="left" if header in ("host", "arm") else "right")
    for host, runs in sorted(hosts.items()):
        workers = len({node.get("worker") for node, _ in runs})
        references = {
            (values["sweep_index"], values["repetition"]): values for _, values in runs if values["arm"] == reference
        }
        groups: dict[str, list[dict[str, Any]]] = {}
        for _, values in runs:
            groups.setdefault(analysis.group_key(values), []).append(values)
        for index, (group, members) in enumerate(groups.items()):
            ratios: dict[str, list[float]] = {"goodput_mbps": [], "delay_p95_ms": []}
            for values in members:
                paired = references.get((values["sweep_index"], values["repetition"]))
                for key, found in ratios.items():
                    if paired is not None and paired[key] and not math.isnan(paired[key]):
                        found.append(values[key] / paired[key])
            result.add_row(
                host if index == 0 else "",
                str(workers) if index == 0 else "",
                str(len(runs)) if index == 0 else "",
                f"{group} ({len(members)})",
                _cell(analysis.mean([v["goodput_mbps"] for v in members]), digits=2),
                _cell(analysis.mean([v["delay_p95_ms"] for v in members])),
                _cell(analysis.mean(ratios["goodput_mbps"]), digits=3),
                _cell(analysis.mean(ratios["delay_p95_ms"]), digits=3),
            )
    return result
