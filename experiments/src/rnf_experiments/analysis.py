"""Reading a results folder back and computing its metrics (the runner writes, this reads: Pantheon's split)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rnf_experiments import lineprotocol, metrics

PACKET_RECORD = np.dtype(
    [("ue", "<u2"), ("length", "<u2"), ("reserved", "<u4"), ("arrival_ns", "<u8"), ("delivery_ns", "<u8")]
)


@dataclass(frozen=True)
class UeSeries:
    """One UE's cell reports over a run, one entry per telemetry period."""

    time_ns: npt.NDArray[np.int64]
    capacity_bytes: npt.NDArray[np.int64]
    delivered_bytes: npt.NDArray[np.int64]
    sched_bytes: npt.NDArray[np.int64]
    queue_bytes: npt.NDArray[np.int64]
    dropped_sdus: npt.NDArray[np.int64]


@dataclass(frozen=True)
class ArmRun:
    """One arm in one repetition, as found in `runs/<repetition>-<arm>/`."""

    arm: str
    repetition: int
    directory: Path
    ues: dict[int, UeSeries]
    flows: list[dict[str, Any]]
    packets: npt.NDArray[Any]


def load_series(path: Path) -> dict[int, UeSeries]:
    columns: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for point in lineprotocol.read(path, "cell"):
        ue = int(point.tags["ue"])
        f = point.fields
        column = columns[ue]
        column["time_ns"].append(point.time_ns)
        column["capacity_bytes"].append(int(f["capacity_bytes"]))
        column["delivered_bytes"].append(int(f["delivered_bytes"]))
        column["sched_bytes"].append(int(f["sched_new_bytes"]) + int(f["sched_retx_bytes"]))
        column["queue_bytes"].append(int(f["queue_new_bytes"]) + int(f["queue_retx_bytes"]))
        column["dropped_sdus"].append(int(f["dropped_sdus"]))
    return {
        ue: UeSeries(**{name: np.asarray(values, dtype=np.int64) for name, values in column.items()})
        for ue, column in sorted(columns.items())
    }


def load_arm_run(directory: Path) -> ArmRun:
    repetition, arm = directory.name.split("-", 1)
    flows = [json.loads(p.read_text()) for p in sorted((directory / "flows").glob("*.json"))]
    packets_path = directory / "packets.bin"
    packets = np.fromfile(packets_path, dtype=PACKET_RECORD) if packets_path.exists() else np.empty(0, PACKET_RECORD)
    return ArmRun(arm, int(repetition), directory, load_series(directory / "series.lp"), flows, packets)


def active_window(flows: list[dict[str, Any]]) -> tuple[int, int]:
    """From the first flow's start to the last byte of the last flow: while data was waiting to be sent."""
    starts = [f["start_ns"] for f in flows]
    ends = [f["last_byte_ns"] for f in flows if f["last_byte_ns"]]
    return (min(starts), max(ends)) if starts and ends else (0, 0)


def summarize(run: ArmRun) -> dict[str, Any]:
    """summary.json's per-run entry (keys documented in experiments/README.md)."""
    start, end = active_window(run.flows)
    per_ue = {}
    for ue, series in run.ues.items():
        # A period whose end falls inside the window counts; the first one is partial, so skip it.
        inside = (series.time_ns > start) & (series.time_ns <= end)
        first = np.flatnonzero(inside)
        if first.size:
            inside[first[0]] = False
        per_ue[ue] = {
            "utilization": metrics.utilization(series.delivered_bytes[inside], series.capacity_bytes[inside]),
            "queue_p50_bytes": metrics.percentile(series.queue_bytes[inside], 50),
            "queue_p95_bytes": metrics.percentile(series.queue_bytes[inside], 95),
            "queue_max_bytes": float(series.queue_bytes[inside].max()) if inside.any() else math.nan,
            "queue_empty_fraction": metrics.empty_fraction(series.queue_bytes[inside]),
            "rlc_drops_sdus": int(series.dropped_sdus[inside].sum()),
        }
    in_window = (run.packets["arrival_ns"] >= start) & (run.packets["delivery_ns"] <= end)
    delays_ms = (run.packets["delivery_ns"][in_window] - run.packets["arrival_ns"][in_window]) / 1e6
    goodputs = [
        metrics.goodput_bps(f["received_bytes"], f["start_ns"], f["last_byte_ns"])
        for f in run.flows
        if f["last_byte_ns"]
    ]
    ues = list(per_ue.values())
    return {
        "arm": run.arm,
        "repetition": run.repetition,
        "duration_s": (end - start) / 1e9,
        "utilization": _mean([u["utilization"] for u in ues]),
        "goodput_mbps": sum(g for g in goodputs if not math.isnan(g)) / 1e6,
        "queue_p50_bytes": _mean([u["queue_p50_bytes"] for u in ues]),
        "queue_p95_bytes": _mean([u["queue_p95_bytes"] for u in ues]),
        "delay_p50_ms": metrics.percentile(delays_ms, 50),
        "delay_p95_ms": metrics.percentile(delays_ms, 95),
        "rlc_drops_sdus": sum(u["rlc_drops_sdus"] for u in ues),
        "jain_fairness": metrics.jain_fairness(goodputs) if len(goodputs) > 1 else math.nan,
        "flows": len(run.flows),
        "flows_complete": sum(1 for f in run.flows if f["complete"] and not f["error"]),
        "ues": {str(ue): values for ue, values in per_ue.items()},
    }


TABLE_KEYS = ("utilization", "goodput_mbps", "queue_p50_bytes", "queue_p95_bytes", "delay_p95_ms")


def _mean(values: list[float]) -> float:
    """Mean of the values that are numbers; NaN when none is."""
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def aggregate(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per arm, the mean over repetitions of every numeric key of the runs."""
    by_arm: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        by_arm[run["arm"]].append(run)
    return {
        arm: {
            key: _mean([float(r[key]) for r in arm_runs])
            for key, value in arm_runs[0].items()
            if isinstance(value, int | float) and key != "repetition"
        }
        | {"repetitions": len(arm_runs)}
        for arm, arm_runs in by_arm.items()
    }


def load_results(results: Path) -> tuple[dict[str, Any], list[ArmRun]]:
    metadata = json.loads((results / "metadata.json").read_text())
    runs = [load_arm_run(d) for d in sorted((results / "runs").iterdir()) if d.is_dir()]
    return metadata, runs
