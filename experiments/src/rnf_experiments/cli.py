"""`rnf run SCENARIO` and `rnf report RESULTS...`."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rnf_cli.errors import UserError

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
def run(scenario_file: Path, overrides: tuple[str, ...], output: Path) -> None:
    """Run every arm of SCENARIO_FILE on the same traces and seed, then print the comparison."""
    scenario, raw = load_scenario(scenario_file, list(overrides))
    console.print(
        f"scenario [bold]{scenario.name}[/]: {len(scenario.arms)} arms x {scenario.repetitions} "
        f"repetitions x {scenario.duration_s:g} s"
    )
    results = run_scenario(scenario, raw, list(overrides), output)
    summary = reporting.summarize_results(results)
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
