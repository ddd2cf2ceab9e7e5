"""`rnf record import RESULTS_DIR --influx URL` and `rnf grafana generate`."""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rnf_foundation.errors import UserError

from rnf_monitoring import dashboards, importer
from rnf_monitoring.client import InfluxClient
from rnf_monitoring.influx import parse_url

console = Console(highlight=False, soft_wrap=True)


@click.group("record")
def record() -> None:
    """Recorded runs and InfluxDB."""


@record.command("import")
@click.argument("results", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--influx",
    "url",
    required=True,
    metavar="URL",
    help="InfluxDB's HTTP API, e.g. http://127.0.0.1:8086 (1.x, 2.x through its v1 API, 3.x). Credentials come "
    "from INFLUX_TOKEN or INFLUX_USERNAME/INFLUX_PASSWORD (or INFLUX_TOKEN_FILE, INFLUX_PASSWORD_FILE).",
)
@click.option("--database", metavar="NAME", help="Database (default: the URL's ?db=, else rnf).")
def import_results(results: tuple[Path, ...], url: str, database: str | None) -> None:
    """Load RESULTS folders (their runs/*/series.lp and summary.json) into InfluxDB, to browse them in Grafana."""
    client = InfluxClient(parse_url(url, os.environ, database))
    for folder in results:
        report = _import_with_progress(client, folder)
        console.print(
            f"{folder.name}: {report.series_points} points, {report.summary_points} summary points into {client.target}"
        )
        if report.rejected:
            raise UserError(f"{folder}: InfluxDB rejected {report.rejected} points (see its log)")


def _import_with_progress(client: InfluxClient, folder: Path) -> importer.ImportReport:
    files = importer.series_files(folder)
    if not files:
        raise UserError(f"{folder}: no runs/*/series.lp")
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(folder.name, total=sum(path.stat().st_size for path in files))
        return importer.import_results(client, folder, lambda size, points: progress.advance(task, size))


@click.group("grafana")
def grafana() -> None:
    """Grafana dashboards as code."""


@grafana.command("generate")
@click.option(
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=dashboards.DASHBOARDS_DIR,
    show_default=True,
    help="Folder the dashboards' JSON is written to.",
)
def generate(output: Path) -> None:
    """Write the dashboards' JSON (cell and UE, proxy, run comparison) from rnf_monitoring.dashboards."""
    changed = dashboards.write(output)
    for path in changed:
        console.print(f"wrote {path}")
    console.print(f"{len(dashboards.DASHBOARDS)} dashboards in {output}, {len(changed)} changed")
