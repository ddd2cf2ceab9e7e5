"""`rnf run SCENARIO` and `rnf report RESULTS...`."""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich.console import Console
from rnf_cli.errors import UserError
from rnf_monitoring.client import InfluxClient
from rnf_monitoring.importer import import_summary
from rnf_monitoring.influx import parse_url

from rnf_experiments import report as reporting
from rnf_experiments.runner import run_scenario
from rnf_experiments.scenario import load_scenario

console = Console(highlight=False)


@click.command("run")
@click.argument("scenario_file", type=click.Path(dir_okay=False, path_type=Path))
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
def run(scenario_file: Path, overrides: tuple[str, ...], output: Path, influx_url: str | None) -> None:
    """Run every arm of SCENARIO_FILE on the same traces and seed, then print the comparison."""
    scenario, raw = load_scenario(scenario_file, list(overrides))
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
    summary = reporting.summarize_results(results)
    if target is not None:
        try:
            points, rejected = import_summary(InfluxClient(target), results)
            console.print(f"InfluxDB: summary of {points} points written, {rejected} rejected")
        except UserError as error:
            console.print(f"InfluxDB: summary not written ({error.message}); `rnf record import {results}` later")
    reporting.print_table({results.name: summary}, console)
    console.print(f"results: {results} (summary.json, plots/)")


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path))
def report(results: tuple[Path, ...]) -> None:
    """Recompute summaries and plots of RESULTS folders and compare them in one table."""
    summaries = {}
    for folder in results:
        if not (folder / "metadata.json").exists():
            raise UserError(f"{folder}: not a results folder (no metadata.json)")
        summaries[folder.name] = reporting.summarize_results(folder)
    reporting.print_table(summaries, console)
