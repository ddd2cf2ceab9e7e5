"""Plots of a results folder: rate and queue over time per run, and the arms side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from rnf_experiments.analysis import ArmRun


def time_series(run: ArmRun, path: Path) -> None:
    """Capacity against delivered rate, and the RLC queue, for every UE of one run."""
    figure, (rate_axis, queue_axis) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    t0 = min((s.time_ns[0] for s in run.ues.values() if s.time_ns.size), default=0)
    for ue, series in run.ues.items():
        seconds = (series.time_ns - t0) / 1e9
        period_s = float(np.median(np.diff(seconds))) if seconds.size > 1 else 0.01
        rate_axis.plot(seconds, series.capacity_bytes * 8 / period_s / 1e6, lw=0.8, label=f"UE {ue} capacity")
        rate_axis.plot(seconds, series.delivered_bytes * 8 / period_s / 1e6, lw=0.8, label=f"UE {ue} delivered")
        queue_axis.plot(seconds, series.queue_bytes / 1e3, lw=0.8, label=f"UE {ue} RLC queue")
    rate_axis.set_ylabel("Mbit/s")
    rate_axis.legend(loc="upper right", fontsize="small")
    queue_axis.set_ylabel("queue (kB)")
    queue_axis.set_xlabel("time (s)")
    queue_axis.legend(loc="upper right", fontsize="small")
    figure.suptitle(f"{run.arm}, repetition {run.repetition}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def throughput_delay(runs: list[dict[str, Any]], path: Path) -> None:
    """Pantheon's plot: goodput against 95th-percentile one-way delay, one point per run, one colour per arm."""
    figure, axis = plt.subplots(figsize=(7, 5))
    arms = sorted({r["arm"] for r in runs})
    for arm in arms:
        points = [(r["delay_p95_ms"], r["goodput_mbps"]) for r in runs if r["arm"] == arm]
        axis.scatter(*zip(*points, strict=True), label=arm, s=40)
    axis.set_xlabel("95th percentile one-way delay in the cell (ms)")
    axis.set_ylabel("goodput (Mbit/s)")
    axis.invert_xaxis()  # better is up and to the right, as in Pantheon
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
