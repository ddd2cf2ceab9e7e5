"""A results folder into InfluxDB: its recorded series as they are, and summary.json as the `summary` measurement.

The series go as recorded: `runs/*/series.lp` already carries every tag and nanosecond timestamps, so its lines
are sent unchanged, in batches. summary.json becomes one `summary` point per arm and repetition
(grafana/SCHEMA.md), stamped with the run's start from metadata.json: the Run comparison dashboard reads it.
Importing a folder twice stores the same points again (same tags, same timestamps): nothing is duplicated.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from rnf_foundation.errors import UserError
from rnf_telemetry.record import FieldValue, line

from rnf_monitoring.client import InfluxClient
from rnf_monitoring.influx import BATCH_LINES, Outcome, backoff_s

RETRY_FOR_S = 30.0  # an import waits this long for an unreachable or failing server before giving up

# summary.json's per-run keys (experiments/README.md) and the field type each is written as: fixed, because
# InfluxDB refuses a field whose type differs from the one already stored.
SUMMARY_FIELDS: dict[str, type[int] | type[float]] = {
    "duration_s": float,
    "utilization": float,
    "goodput_mbps": float,
    "queue_p50_bytes": float,
    "queue_p95_bytes": float,
    "delay_p50_ms": float,
    "delay_p95_ms": float,
    "rlc_drops_sdus": int,
    "jain_fairness": float,
    "flows": int,
    "flows_complete": int,
}


@dataclass(frozen=True)
class ImportReport:
    series_points: int
    summary_points: int
    rejected: int


def time_ns(iso: str) -> int:
    """An ISO 8601 time with its UTC offset (metadata.json's `started`) in nanoseconds since the epoch."""
    moment = datetime.fromisoformat(iso)
    if moment.tzinfo is None:
        raise ValueError(f"{iso}: no UTC offset")
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def summary_lines(run_id: str, metadata: Mapping[str, Any], summary: Mapping[str, Any]) -> list[str]:
    """The `summary` measurement of one results folder, as line protocol."""
    stamp = time_ns(metadata["started"])
    cell_kind = metadata.get("scenario_data", {}).get("cell", {}).get("kind", "")
    lines = []
    for run in summary["runs"]:
        tags = {
            "run": run_id,
            "scenario": summary["scenario"],
            "arm": run["arm"],
            "repetition": str(run["repetition"]),
            "cell_kind": cell_kind,
        }
        fields: dict[str, FieldValue] = {
            key: kind(run[key])
            for key, kind in SUMMARY_FIELDS.items()
            if isinstance(run.get(key), int | float) and not math.isnan(run[key])
        }
        text = line("summary", tags, fields, stamp)
        if text is not None:
            lines.append(text)
    return lines


def series_files(results: Path) -> list[Path]:
    if not (results / "metadata.json").is_file():
        raise UserError(f"{results}: not a results folder (no metadata.json)")
    return sorted((results / "runs").glob("*/series.lp"))


def read_batches(path: Path, size: int = BATCH_LINES) -> Iterator[tuple[list[str], int]]:
    """The file's lines of line protocol in batches, each with the number of bytes it took in the file."""
    batch: list[str] = []
    consumed = 0
    with path.open("rb") as handle:
        for raw in handle:
            consumed += len(raw)
            text = raw.decode("utf-8").rstrip("\r\n")
            if text and not text.startswith("#"):
                batch.append(text)
            if len(batch) == size:
                yield batch, consumed
                batch, consumed = [], 0
    if batch or consumed:
        yield batch, consumed


def send(client: InfluxClient, lines: list[str]) -> int:
    """Write one batch, retrying an unreachable or failing server for up to RETRY_FOR_S; the lines rejected."""
    if not lines:
        return 0
    failures = 0
    give_up = time.monotonic() + RETRY_FOR_S
    while True:
        result = client.write(lines)
        if result.outcome is not Outcome.RETRY:
            return result.rejected
        failures += 1
        if time.monotonic() + backoff_s(failures) > give_up:
            raise UserError(f"InfluxDB {client.target}: {result.message}")
        time.sleep(backoff_s(failures))


def import_summary(client: InfluxClient, results: Path) -> tuple[int, int]:
    """summary.json (when the folder has one) as the `summary` measurement: (points, rejected)."""
    summary_path = results / "summary.json"
    if not summary_path.is_file():
        return 0, 0
    metadata = json.loads((results / "metadata.json").read_text())
    lines = summary_lines(results.name, metadata, json.loads(summary_path.read_text()))
    return len(lines), send(client, lines)


def import_results(
    client: InfluxClient, results: Path, advance: Callable[[int, int], None] = lambda size, points: None
) -> ImportReport:
    """Every series.lp of the folder, then its summary; `advance(bytes, points)` after each batch."""
    points = rejected = 0
    for path in series_files(results):
        for batch, consumed in read_batches(path):
            rejected += send(client, batch)
            points += len(batch)
            advance(consumed, len(batch))
    summary_points, summary_rejected = import_summary(client, results)
    return ImportReport(points, summary_points, rejected + summary_rejected)
