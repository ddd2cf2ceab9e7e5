"""`rnf run SCENARIO`, `rnf report RESULTS...`, `rnf calibrate RESULTS`, `rnf model TRACE` and `rnf frontier TRACE`."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table
from rnf_cell import traces
from rnf_cell.config import MAX_TRACE_S, TRACE_TAGS, CellConfig, TraceFile, TraceSpec, UeConfig
from rnf_foundation.config import resolve_paths, validate
from rnf_foundation.errors import UserError
from rnf_foundation.numbers import SEED, FiniteFloat
from rnf_monitoring.client import InfluxClient
from rnf_monitoring.importer import import_summary
from rnf_monitoring.influx import InfluxTarget, parse_url

from rnf_experiments import analysis, cluster, frontier, goals, model
from rnf_experiments import calibrate as calibration
from rnf_experiments import report as reporting
from rnf_experiments.cells.spec import VirtualCellSpec
from rnf_experiments.runner import run_scenario
from rnf_experiments.scenario import check_inputs, describe, load_scenario, parse_override

console = Console(highlight=False)


def _tls_options(command: Any) -> Any:
    """--tls-ca-file, --tls-cert, --tls-key (as `dask scheduler` names them) and --insecure."""
    for option in reversed(
        (
            click.option("--tls-ca-file", type=click.Path(dir_okay=False, path_type=Path), help="The cluster's CA."),
            click.option(
                "--tls-cert", type=click.Path(dir_okay=False, path_type=Path), help="This node's certificate."
            ),
            click.option("--tls-key", type=click.Path(dir_okay=False, path_type=Path), help="This node's private key."),
            click.option(
                "--insecure",
                is_flag=True,
                help="Allow a non-loopback tcp:// scheduler (anyone on that network can run code as root here).",
            ),
        )
    ):
        command = option(command)
    return command


@click.command("run")
@click.argument("scenario_file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a scenario value, e.g. --set duration_s=5 --set cell.ues.0.backhaul_delay_ms=20.",
)
@click.option(
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Folder the results folder is created in.",
)
@click.option(
    "--influx",
    "influx_url",
    metavar="URL",
    help="Also write the series to InfluxDB (v1 /write API), e.g. http://127.0.0.1:8086?db=rnf. "
    "Credentials from INFLUX_TOKEN or INFLUX_USERNAME/INFLUX_PASSWORD.",
)
@click.option(
    "--scheduler",
    metavar="ADDR",
    help="Run the scenario's blocks on a Dask cluster (rnf worker nodes), e.g. tcp://127.0.0.1:8786.",
)
@click.option(
    "--resume",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run the blocks of this results folder whose runs are not complete, on --scheduler [default: the one it "
    "was run on]; no SCENARIO_FILE.",
)
@_tls_options
def run(
    scenario_file: Path | None,
    overrides: tuple[str, ...],
    output: Path,
    influx_url: str | None,
    scheduler: str | None,
    resume: Path | None,
    tls_ca_file: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    insecure: bool,
) -> None:
    """Run every arm of SCENARIO_FILE on the same traces and seed, then print the comparison."""
    tls = cluster.Tls(tls_ca_file, tls_cert, tls_key)
    if resume is not None and scheduler is None:
        scheduler = cluster.recorded_scheduler(resume)
    if scheduler is not None:
        _run_on_cluster(scenario_file, list(overrides), output, influx_url, scheduler, resume, tls, insecure)
        return
    for given, option in ((resume, "--resume"), (tls.given or None, "--tls-*"), (insecure or None, "--insecure")):
        if given is not None:
            raise UserError(f"{option} needs --scheduler")
    if scenario_file is None:
        raise click.UsageError("Missing argument 'SCENARIO_FILE'.")
    scenario, raw = load_scenario(scenario_file, list(overrides))
    check_inputs(scenario_file, scenario, raw, describe(scenario_file, list(overrides)))
    target = parse_url(influx_url, os.environ) if influx_url else None
    console.print(
        f"scenario [bold]{scenario.name}[/]: {len(scenario.arms)} arms x {scenario.repetitions} "
        f"repetitions x {scenario.duration_s:g} s"
    )
    results = run_scenario(
        scenario,
        raw,
        list(overrides),
        output,
        influx_url,
        on_recorder_stats=lambda run, stats: console.print(f"InfluxDB, {run}: {stats}"),
    )
    _report(results, reporting.summarize_results(results), target)
    console.print(f"results: {results} (summary.json, plots/)")


def _report(results: Path, summary: dict[str, Any], target: InfluxTarget | None) -> None:
    """The summary to InfluxDB (when `target` is one) and the comparison table to the console."""
    if target is not None:
        try:
            points, rejected = import_summary(InfluxClient(target), results)
            console.print(f"InfluxDB: summary of {points} points written, {rejected} rejected")
        except UserError as error:
            console.print(f"InfluxDB: summary not written ({error.message}); `rnf record import {results}` later")
    reporting.print_table({results.name: summary}, console)


def _run_on_cluster(
    scenario_file: Path | None,
    overrides: list[str],
    output: Path,
    influx_url: str | None,
    scheduler: str,
    resume: Path | None,
    tls: cluster.Tls,
    insecure: bool,
) -> None:
    """`rnf run --scheduler`: the blocks on the cluster; validation, the results folder and the report as locally."""
    address = cluster.check_address(scheduler, tls, insecure)
    if resume is not None:
        if scenario_file is not None or overrides:
            raise UserError("--resume RESULTS takes the scenario from RESULTS/metadata.json: no SCENARIO_FILE or --set")
        scenario, raw, overrides = cluster.load_resumed(resume)
        check_inputs(resume / "metadata.json", scenario, raw, str(resume / "metadata.json"), build=False)
    else:
        if scenario_file is None:
            raise click.UsageError("Missing argument 'SCENARIO_FILE'.")
        scenario, raw = load_scenario(scenario_file, overrides)
        check_inputs(scenario_file, scenario, raw, describe(scenario_file, overrides), build=False)
    target = parse_url(influx_url, os.environ) if influx_url else None
    console.print(
        f"scenario [bold]{scenario.name}[/]: {len(scenario.arms)} arms x {scenario.repetitions} "
        f"repetitions x {scenario.duration_s:g} s, in blocks on {address}"
    )
    outcome = cluster.run_on_cluster(scenario, raw, overrides, output, address, tls, console, influx_url, resume)
    results = outcome.results
    try:
        summary = reporting.summarize_results(results)
    except UserError as error:
        if not outcome.failures:
            raise
        summary = None
        console.print(f"no report: {error.message}")
    if summary is not None:
        _report(results, summary, target)
    console.print(f"results: {results} (summary.json, plots/)")
    if outcome.failures:
        raise click.ClickException(
            f"{len(outcome.failures)} block(s) failed; after a fix, rnf run --resume {results} --scheduler {address}"
        )


@click.command("worker")
@click.option("--scheduler", required=True, metavar="ADDR", help="The Dask scheduler, e.g. tcp://127.0.0.1:8786.")
@click.option("--resources", metavar="NAME=AMOUNT ...", help='What this node offers, e.g. "usrp=1".')
@click.option("--name", help="The worker's name in Dask [default: its address].")
@click.option("--dashboard", is_flag=True, help="Serve Dask's worker dashboard (off by default).")
@_tls_options
def worker(
    scheduler: str,
    resources: str | None,
    name: str | None,
    dashboard: bool,
    tls_ca_file: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    insecure: bool,
) -> None:
    """Run the blocks a Dask scheduler sends this node, one at a time (as root: they build namespaces)."""
    tls = cluster.Tls(tls_ca_file, tls_cert, tls_key)
    address = cluster.check_address(scheduler, tls, insecure)
    cluster.serve_worker(address, tls, cluster.parse_resources(resources), name, dashboard)


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--per-ue", is_flag=True, help="Also print each results folder's figures per UE.")
@click.option(
    "--by",
    "by",
    type=click.Choice(["host"]),
    help="Also print each results folder's runs per node, with the arms' ratios within blocks on that node.",
)
def report(results: tuple[Path, ...], per_ue: bool, by: str | None) -> None:
    """Recompute summaries and plots of RESULTS folders and compare them in one table."""
    for folder in results:
        if not (folder / "metadata.json").exists():
            raise UserError(f"{folder}: not a results folder (no metadata.json)")
    computed = {folder: reporting.compute(folder) for folder in results}  # all of them, before writing any
    for folder, values in computed.items():
        reporting.write(folder, values)
    summaries = {folder.name: values.summary for folder, values in computed.items()}
    reporting.print_table(summaries, console)
    if per_ue:
        for summary in summaries.values():
            console.print(reporting.per_ue_table(summary))
    if by == "host":
        for folder, values in computed.items():
            metadata = analysis.read_json(folder / "metadata.json", ("scenario_data",))
            console.print(reporting.by_host(values, metadata))


@click.command("calibrate")
@click.argument("results", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for scenario.toml, the capacity traces and calibration.json [default: RESULTS/calibrated].",
)
@click.option(
    "--check",
    "checked",
    type=click.Path(file_okay=False, path_type=Path),
    help="A results folder of the calibrated scenario: compare it with RESULTS arm by arm instead.",
)
def calibrate(results: Path, output: Path | None, checked: Path | None) -> None:
    """A virtual cell calibrated against a srsRAN RESULTS folder: capacity, delays, uplink transmissions, HARQ and
    queue limit as that run measured them, in a scenario with the same arms; or, with --check, how close a run of it
    came."""
    if checked is not None:
        rows = calibration.fidelity(
            analysis.read_summary(results / "summary.json"),
            analysis.read_summary(checked / "summary.json"),
        )
        if not rows:
            raise UserError(f"{checked}: no arm in common with {results}")
        table = Table(
            title=f"{results.name} (srsRAN) against {checked.name} (calibrated virtual cell)",
            caption="the means of each run's repetitions, ± the standard error of the mean where there are several",
        )
        for column in ("arm", "figure", "srsRAN", "virtual", "bound", "met"):
            table.add_column(column, justify="left" if column in ("arm", "figure", "bound") else "right")
        for row in rows:
            met = "" if row.met is None else ("yes" if row.met else "NO")
            table.add_row(
                row.arm,
                row.figure,
                _with_error(row.srsran, row.srsran_error),
                _with_error(row.virtual, row.virtual_error),
                row.bound,
                met,
            )
        console.print(table)
        return
    found = calibration.calibrate(results)
    metadata = analysis.read_json(results / "metadata.json", ("scenario_data",))
    path = calibration.write(found, metadata["scenario_data"], output or results / "calibrated")
    for ue in found.ues:
        transmissions = len(ue.uplink) - 1
        full = sum(limit is not None for _, limit in ue.uplink[:-1])
        console.print(
            f"UE {ue.ue}: capacity from arm {found.reference_arm!r}, {ue.mean_rate_mbps:.2f} Mbit/s mean "
            f"(the eNB at {ue.ttis_per_ms:.3f} TTIs per ms); backhaul {ue.backhaul_delay_ms:.1f} ms before the queue, "
            f"{ue.delivery_delay_ms:.1f} ms after it; uplink: its "
            f"{transmissions} transmissions replayed, {full} of them full, at least {ue.uplink_delay_ms:.1f} ms "
            f"(its packets {ue.uplink_p50_ms:.1f} ms at the median); HARQ BLER {ue.harq_bler:.3f}, queue limit "
            f"{ue.queue_limit_bytes} B / {ue.queue_limit_sdus} SDUs"
        )
    console.print(f"wrote {path}; run it with: rnf run {path}, then: rnf calibrate {results} --check RESULTS")


def _with_error(value: float, error: float | None) -> str:
    return f"{value:.1f}" if error is None else f"{value:.1f} ± {error:.1f}"


@dataclass(frozen=True)
class _Measured:
    """An end-to-end arm of a results folder: its goodput and the losses the cell's RLC queue made."""

    label: str
    results: Path
    goodput_mbps: float
    drops: float  # SDUs per run
    kinds: tuple[float, float, float]  # loss events with 1, 2, >= 3 losses, per run
    packets: float  # delivered packets per run


class _TraceOnly(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trace: TraceSpec


def _cell_for(
    trace_arg: str | None, trace_format: str | None, scenario_file: Path | None, sets: list[str]
) -> tuple[CellConfig, float | None, str]:
    """The cell the trace comes from and the duration to model: the scenario's, or the cell defaults for TRACE."""
    if scenario_file is not None:
        scenario, raw = load_scenario(scenario_file, sets)
        source = describe(scenario_file, sets)
        if not isinstance(scenario.cell, VirtualCellSpec):
            raise UserError(
                f"{source}: cell.kind: a {scenario.cell.kind!r} cell has no capacity trace to model (its capacity "
                "comes from the radio); model a virtual cell's scenario or a TRACE"
            )
        check_inputs(scenario_file, scenario, raw, source)
        cell = CellConfig.model_validate(scenario.cell.model_dump(exclude={"kind"}) | {"seed": scenario.seed})
        return cell, scenario.duration_s, scenario_file.name
    if sets:
        raise UserError("--set needs --scenario")
    if trace_arg is None:
        raise UserError("give a TRACE or --scenario FILE")
    if trace_arg.lstrip().startswith("{"):
        data = parse_override(f"trace={trace_arg}")[1]
        spec = validate(_TraceOnly, {"trace": resolve_paths(data, Path.cwd())}, "TRACE", TRACE_TAGS).trace
    else:
        path = Path(trace_arg)
        fmt = trace_format or ("csv" if path.suffix == ".csv" else "telemetry" if path.suffix == ".lp" else "mahimahi")
        spec = TraceFile(file=path, format=fmt)  # type: ignore[arg-type]
    return CellConfig(ues=[UeConfig(trace=spec)]), None, trace_arg


def _measured(results: Path, ue: int, gap_s: float, packet_bytes: int, label: str) -> list[_Measured]:
    """The e2e arms of a results folder (summary.json's goodput, the cell series' drops per run), as `label`+arm."""
    summary_path = results / "summary.json"
    if not summary_path.exists():
        raise UserError(f"{summary_path}: no such file (`rnf report {results}` writes summary.json)")
    summary_arms = analysis.read_json(summary_path, ("arms",))["arms"]
    if not isinstance(summary_arms, dict):
        raise UserError(f"{summary_path}: arms is not an object")
    metadata_path = results / "metadata.json"
    try:
        arms = [
            a["name"]
            for a in analysis.read_json(metadata_path, ("scenario_data",))["scenario_data"]["arms"]
            if a.get("kind", "e2e") == "e2e"
        ]
    except (KeyError, TypeError, AttributeError):
        raise UserError(f"{metadata_path}: scenario_data.arms is not a list of arms with names") from None
    found = []
    for arm in arms:
        drops, kinds, packets = [], [], []
        for run in sorted((results / "runs").glob(f"*-{arm}")):
            series = run / "series.lp"
            points = [p for p in analysis.read_points(series, "cell") if p.tags.get("ue") == str(ue)]
            times = np.array([p.time_ns / 1e9 for p in points])
            try:
                dropped = np.array([int(p.fields["dropped_sdus"]) for p in points])
                delivered = sum(int(p.fields["delivered_bytes"]) for p in points)
            except (KeyError, ValueError) as error:
                raise UserError(f"{series}: a cell point has no valid {error}") from None
            drops.append(float(dropped.sum()))
            kinds.append(model.loss_kinds(model.loss_events(times, dropped, gap_s)))
            packets.append(delivered / packet_bytes)
        entry = summary_arms.get(arm)
        if entry is None or not drops:
            continue
        goodput = entry.get("goodput_mbps") if isinstance(entry, dict) else None
        if not isinstance(goodput, int | float):
            raise UserError(f"{summary_path}: arms.{arm}.goodput_mbps is not a number")
        found.append(
            _Measured(
                label + arm,
                results,
                goodput,
                float(np.mean(drops)),
                tuple(np.mean(kinds, axis=0).tolist()),  # type: ignore[arg-type]
                float(np.mean(packets)),
            )
        )
    return found


def _f(value: float, digits: int = 2) -> str:
    return "-" if math.isnan(value) or math.isinf(value) else f"{value:.{digits}f}"


@click.command("model")
@click.argument("trace", required=False)
@click.option(
    "--format",
    "trace_format",
    type=click.Choice(["csv", "mahimahi", "telemetry"]),
    help="TRACE's file format; default from the extension (.csv, .lp telemetry, else mahimahi).",
)
@click.option(
    "--scenario",
    "scenario_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Take the trace and path from this scenario's cell (the trace as its first repetition builds it).",
)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Override a --scenario value, as rnf run.")
@click.option("--ue", type=click.IntRange(min=1), default=1, show_default=True, help="Which UE of the cell.")
@click.option(
    "--rtt-ms",
    type=FiniteFloat(min=0),
    help="Propagation round trip tau [default: 2 x wired delay + backhaul + uplink delay of the cell].",
)
@click.option("--buffer-bytes", type=click.IntRange(min=1), help="Bottleneck buffer B [default: the UE's RLC limit].")
@click.option("--packet-bytes", type=click.IntRange(min=100), default=model.PACKET_BYTES, show_default=True)
@click.option("--mss", "mss_bytes", type=click.IntRange(min=100), default=model.MSS_BYTES, show_default=True)
@click.option("--rto-ms", type=FiniteFloat(min=0, min_open=True), help="Timeout T0 [default: 2 rtt, paper 000].")
@click.option(
    "--sample",
    "sample_s",
    type=FiniteFloat(min=0.001),
    default=model.SAMPLE_S,
    show_default=True,
    help="Seconds per profile sample (one cycle of paper 000 eqs. 12-14).",
)
@click.option(
    "--duration",
    "duration_s",
    type=FiniteFloat(min=0, min_open=True, max=MAX_TRACE_S),
    help="Seconds of the (looped) trace to model [default: the scenario's duration, else one loop of the trace].",
)
@click.option("--seed", type=SEED, help="Seed of generated traces [default: the scenario's, else 1].")
@click.option(
    "--measured",
    "measured_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A results folder whose end-to-end arms are set beside the predictions (repeatable).",
)
def model_command(
    trace: str | None,
    trace_format: str | None,
    scenario_file: Path | None,
    sets: tuple[str, ...],
    ue: int,
    rtt_ms: float | None,
    buffer_bytes: int | None,
    packet_bytes: int,
    mss_bytes: int,
    rto_ms: float | None,
    sample_s: float,
    duration_s: float | None,
    seed: int | None,
    measured_dirs: tuple[Path, ...],
) -> None:
    """Predict end-to-end TCP throughput over TRACE (a trace file or a generator table such as
    '{ generator = "piecewise", min_mbps = 2, max_mbps = 20, period_s = 0.2 }'): paper 000 eq. (15), paper
    003 eq. (19) and Padhye's model. Units and assumptions: experiments/README.md."""
    cell, scenario_duration, name = _cell_for(trace, trace_format, scenario_file, list(sets))
    if seed is not None:
        cell = cell.model_copy(update={"seed": seed})
    spec = _ue_spec(cell, ue)
    capacity, _ = _ue_capacity(cell, ue, duration_s or scenario_duration)
    if buffer_bytes is not None:
        buffer_packets = buffer_bytes / packet_bytes
    else:  # the tighter of the RLC queue's limits; 0 means no limit of that kind
        limits = (spec.queue_limit_bytes / packet_bytes, spec.queue_limit_sdus)
        buffer_packets = min(limit for limit in limits if limit > 0)
    tau_s = (
        rtt_ms / 1e3
        if rtt_ms is not None
        else (2 * cell.wired.delay_ms + spec.backhaul_delay_ms + spec.uplink_delay_ms) / 1e3
    )
    path = model.PathParams(tau_s, buffer_packets, rto_ms / 1e3 if rto_ms else None)
    try:
        profile = model.profile_from_bytes(capacity, traces.TTI_S, sample_s, packet_bytes)
        ren = model.ren2011(profile, path)
        chan = model.chan_ramjee2002(profile, path)
    except ValueError as error:
        raise UserError(f"{name}: {error}") from None
    loss_rate, padhye_pps = model.padhye_for(profile, path, ren)
    mean_mbps = float(capacity.mean()) * 8 / traces.TTI_S / 1e6
    console.print(
        f"{name}, UE {ue}: {profile.duration_s:g} s in {len(profile.rates_pps)} samples of {profile.sample_s:g} s, "
        f"mean capacity {mean_mbps:.2f} Mbit/s ({ren.b:.1f} packets/s of {packet_bytes} B), "
        f"tau {path.tau_s * 1e3:g} ms, B {path.buffer_packets:.1f} packets, T0 {chan.t0 * 1e3:.0f} ms"
    )
    labels = {d: f"{i + 1}:" if len(measured_dirs) > 1 else "" for i, d in enumerate(measured_dirs)}
    measured = [m for d in measured_dirs for m in _measured(d, ue, chan.t_r, packet_bytes, labels[d])]
    rows: list[tuple[str, str, str, float]] = [
        (
            "paper 000 eq. (15)",
            "profile",
            f"N_to {ren.n_to}, N_d {ren.n_d:.1f}, p1 {ren.p1:.3f}, p2 {ren.p2:.3f}",
            ren.throughput_pps,
        ),
        (
            "paper 003 eq. (19)",
            "profile",
            "events {:.1f}/{:.0f}/{:.0f}, p {:.3f}/{:.3f}/{:.3f}".format(*chan.events, *chan.p),
            chan.throughput_pps,
        ),
        (
            "Padhye (approx.)",
            "profile",
            f"p {loss_rate:.2e}, rtt {model.rtt_mean(ren.b, path) * 1e3:.0f} ms",
            padhye_pps,
        ),
    ]
    for m in measured:
        r = model.ren2011(profile, path, n_d=m.drops)
        c = model.chan_ramjee2002(profile, path, kinds=m.kinds)
        p = sum(m.kinds) / m.packets if m.packets else math.nan
        rows += [
            ("paper 000 eq. (15)", m.label, f"N_to {r.n_to}, N_d {r.n_d:.1f} drops, p1 {r.p1:.3f}", r.throughput_pps),
            (
                "paper 003 eq. (19)",
                m.label,
                "events {:.1f}/{:.1f}/{:.1f}, p {:.3f}/{:.3f}/{:.3f}".format(*m.kinds, *c.p),
                c.throughput_pps,
            ),
            ("Padhye (approx.)", m.label, f"p {p:.2e}", model.padhye(p, model.rtt_mean(ren.b, path), chan.t0)),
        ]
    table = Table(title=f"predicted end-to-end TCP throughput (goodput: packets/s x {mss_bytes} B)")
    for column in ("model", "losses from", "loss parameters", "packets/s", "goodput Mbit/s"):
        table.add_column(column, justify="left" if column in ("model", "losses from", "loss parameters") else "right")
    for m in measured:
        table.add_column(f"error vs {m.label}", justify="right")
    for label, source, params, pps in rows:
        goodput = model.goodput_mbps(pps, mss_bytes)
        errors = [_f(abs(m.goodput_mbps - goodput) / m.goodput_mbps, 3) for m in measured]  # paper 000 eq. (16)
        table.add_row(label, source, params, _f(pps, 1), _f(goodput), *errors)
    console.print(table, width=max(console.width, 120))
    if measured:
        result = Table(title="measured (end-to-end arms, mean over repetitions)")
        for column in ("arm", "results", "goodput Mbit/s", "RLC drops", "loss events 1/2/3+"):
            result.add_column(column, justify="left" if column in ("arm", "results") else "right")
        for m in measured:
            row = (_f(m.goodput_mbps), _f(m.drops, 0), "{:.1f}/{:.1f}/{:.1f}".format(*m.kinds))
            result.add_row(m.label, str(m.results), *row)
        console.print(result, width=max(console.width, 120))


FRONTIER_MILESTONES = (0.90, 0.95, goals.UTILIZATION_GOAL, 0.98, 0.99, 0.995)
FRONTIER_WINDOWS_MS = (100, 1000)  # beside one report period: see frontier.py
FRONTIER_TARGETS = 40
FRONTIER_UNLIMITED_BYTES = 400_000  # the largest target where the UE's queue has no byte limit


@click.command("frontier")
@click.argument("trace", required=False)
@click.option(
    "--format",
    "trace_format",
    type=click.Choice(["csv", "mahimahi", "telemetry"]),
    help="TRACE's file format; default from the extension (.csv, .lp telemetry, else mahimahi).",
)
@click.option(
    "--scenario",
    "scenario_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Take the trace, the backhaul delay and the report period from this scenario's cell.",
)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Override a key of --scenario (repeatable).")
@click.option("--ue", default=1, show_default=True, type=click.IntRange(min=1), help="The UE whose trace to use.")
@click.option(
    "--results",
    type=click.Path(file_okay=False, path_type=Path),
    help="A results folder of the scenario: its arms are set beside the frontier, with the latency goals.",
)
@click.option("--point", help="The sweep point of --results to compare (its arms' 'ARM @ POINT' entries).")
def frontier_command(
    trace: str | None,
    trace_format: str | None,
    scenario_file: Path | None,
    sets: tuple[str, ...],
    ue: int,
    results: Path | None,
    point: str | None,
) -> None:
    """What an ideal fixed-target sender reaches over TRACE's loop: the p95 one-way delay each utilization costs a
    law that holds a fixed queue at the eNB knowing the queue and the capacity at every report
    (experiments/src/rnf_experiments/frontier.py)."""
    cell, scenario_duration, name = _cell_for(trace, trace_format, scenario_file, list(sets))
    if point is not None and results is None:
        raise UserError("--point needs --results")
    arms = _arms_at(results, point) if results is not None else None  # a bad folder fails before the runs
    spec = _ue_spec(cell, ue)
    capacity, duration = _ue_capacity(cell, ue, scenario_duration)
    period = cell.telemetry.period_ms
    forward = round(spec.backhaul_delay_ms)
    largest = spec.queue_limit_bytes or FRONTIER_UNLIMITED_BYTES
    targets = np.unique(np.round(np.geomspace(frontier.MIN_TARGET_BYTES, largest / 2, FRONTIER_TARGETS)))
    loops = [frontier.Loop(forward, period, window) for window in (period, *FRONTIER_WINDOWS_MS)]
    try:
        points = frontier.frontier(capacity, targets.tolist(), loops)
    except ValueError as error:
        raise UserError(f"{name}: {error}") from None
    mean_mbps = float(capacity.mean()) * 8 / traces.TTI_S / 1e6
    console.print(
        f"{name}, UE {ue}: {duration:g} s, mean capacity {mean_mbps:.2f} Mbit/s; the ideal sender learns the queue "
        f"and the capacity every {period} ms report, its bytes reach the queue {forward} ms after it sends them"
    )
    table = Table(title="ideal fixed-target sender: the smallest p95 one-way delay that reaches each utilization")
    for column in ("utilization %", "p95 delay ms", "target kB", "forecast window ms"):
        table.add_column(column, justify="right")
    for milestone in FRONTIER_MILESTONES:
        reaching = [p for p in points if p.utilization >= milestone]
        best = min(reaching, key=lambda p: p.delay_p95_ms) if reaching else None
        if best is None:
            table.add_row(f"{milestone * 100:g}", "not reached", "-", "-")
        else:
            table.add_row(
                f"{milestone * 100:g}", _f(best.delay_p95_ms, 1), _f(best.target_bytes / 1e3, 1), str(best.window_ms)
            )
    console.print(table)
    least = points[0]  # the envelope, by delay
    console.print(
        f"the least p95 delay any target reaches: {least.delay_p95_ms:.1f} ms, at {least.utilization * 100:.1f} % "
        f"(target {least.target_bytes / 1e3:.1f} kB)"
    )
    if results is not None and arms is not None:
        _frontier_beside(f"{results.name}{f' @ {point}' if point else ''}", arms, points)


def _ue_spec(cell: CellConfig, ue: int) -> UeConfig:
    if ue > len(cell.ues):
        raise UserError(f"--ue {ue}: the cell has {len(cell.ues)} UE(s)")
    return cell.ues[ue - 1]


def _ue_capacity(cell: CellConfig, ue: int, duration_s: float | None) -> tuple[npt.NDArray[np.int64], float]:
    """UE `ue`'s capacity per TTI as the cell builds it (seed, outages), looped to `duration_s` (default: the
    trace's own length), and that duration."""
    rng = np.random.default_rng(cell.seed)
    try:
        built = [traces.with_outages(traces.build(u.trace, rng), u.outages) for u in cell.ues]  # as the cell does
    except traces.TraceError as error:
        raise UserError(str(error)) from None
    capacity = traces.usable_bytes(built[ue - 1])
    duration = duration_s or len(capacity) * traces.TTI_S
    return np.resize(capacity, round(duration / traces.TTI_S)), duration  # the trace loops


def _arms_at(results: Path, point: str | None) -> dict[str, dict[str, Any]]:
    """The arms of a results folder's summary.json at sweep point `point` (None: a scenario without a sweep)."""
    summary_path = results / "summary.json"
    if not summary_path.exists():
        raise UserError(f"{summary_path}: no such file (`rnf report {results}` writes summary.json)")
    arms = analysis.read_summary(summary_path)["arms"]
    suffix = f" @ {point}" if point else ""
    chosen = {
        key.removesuffix(suffix): values
        for key, values in arms.items()
        if (" @ " in key) == bool(point) and key.endswith(suffix)
    }
    if not chosen:
        where = f"at point {point!r}" if point else "without a sweep point (give --point)"
        raise UserError(f"{summary_path}: no arm {where}; its arms: {', '.join(sorted(arms))}")
    return chosen


def _frontier_beside(title: str, chosen: dict[str, dict[str, Any]], points: list[frontier.FrontierPoint]) -> None:
    """The arms against the frontier, and the latency goals against what it allows."""
    table = Table(title=f"{title}: the arms against the ideal sender")
    for column in ("arm", "utilization %", "p95 delay ms", "ideal p95 at that utilization", "excess ms"):
        table.add_column(column, justify="left" if column == "arm" else "right")
    for arm, values in sorted(chosen.items()):
        utilization, delay = values.get("utilization", math.nan), values.get("delay_p95_ms", math.nan)
        ideal = frontier.delay_at(points, utilization)
        table.add_row(arm, _f(utilization * 100, 1), _f(delay, 1), _f(ideal, 1), _f(delay - ideal, 1))
    console.print(table)
    references = [chosen.get(arm, {}).get("delay_p95_ms", math.nan) for arm in goals.REFERENCES]
    ceiling = min(goals.BBR_DELAY_GOAL * references[0], goals.CUBIC_DELAY_GOAL * references[1])
    if math.isnan(ceiling):
        return
    needed = frontier.delay_at(points, goals.UTILIZATION_GOAL)
    least = points[0].delay_p95_ms
    below = f"; the goal's delay is under the least any target reaches ({least:.1f} ms)" if ceiling < least else ""
    console.print(
        f"goal: utilization >= {goals.UTILIZATION_GOAL * 100:g} % at p95 <= {ceiling:.1f} ms (min of "
        f"{goals.BBR_DELAY_GOAL:g} x BBR's, {goals.CUBIC_DELAY_GOAL:g} x CUBIC's); the ideal fixed-target sender "
        f"needs {_f(needed, 1)} ms there ({_f(needed / ceiling, 2)} x the goal's){below}"
    )
    # the controllers are to beat the senders that know nothing of the RAN in utilization as well
    reference, reference_utilization = max(
        ((arm, chosen.get(arm, {}).get("utilization", math.nan)) for arm in goals.REFERENCES),
        key=lambda pair: -math.inf if math.isnan(pair[1]) else pair[1],
    )
    if reference_utilization > goals.UTILIZATION_GOAL:
        matched = frontier.delay_at(points, reference_utilization)
        needs = "no target reaches it" if math.isnan(matched) else f"it needs {matched:.1f} ms"
        console.print(
            f"at {reference.upper()}'s utilization, {reference_utilization * 100:.1f} %, {needs}"
            + ("" if math.isnan(matched) else f" ({matched / ceiling:.2f} x the goal's)")
        )
