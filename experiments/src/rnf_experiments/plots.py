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
    """Per UE: capacity against delivered rate; the RLC queue against the controller's q0 and SMVS band; and the
    controller's decision (quota or window), when the run had a controller."""
    panels = 3 if run.controllers else 2
    figure, axes = plt.subplots(panels, 1, figsize=(10, 2.6 * panels + 1), sharex=True)
    rate_axis, queue_axis = axes[0], axes[1]
    t0 = min((s.time_ns[0] for s in run.ues.values() if s.time_ns.size), default=0)
    for ue, series in run.ues.items():
        seconds = (series.time_ns - t0) / 1e9
        period_s = float(np.median(np.diff(seconds))) if seconds.size > 1 else 0.01
        rate_axis.plot(seconds, series.capacity_bytes * 8 / period_s / 1e6, lw=0.8, label=f"UE {ue} capacity")
        rate_axis.plot(seconds, series.delivered_bytes * 8 / period_s / 1e6, lw=0.8, label=f"UE {ue} delivered")
        queue_axis.plot(seconds, series.queue_bytes / 1e3, lw=0.8, label=f"UE {ue} RLC queue")
    for ue, controller in run.controllers.items():
        seconds = (controller.time_ns - t0) / 1e9
        q0 = controller.q0_bytes / 1e3
        if not np.isnan(q0).all():
            queue_axis.plot(seconds, q0, lw=0.8, ls="--", color="black", label=f"UE {ue} q0")
        band = controller.band_bytes / 1e3
        if not np.isnan(band).all():
            queue_axis.fill_between(seconds, q0 - band, q0 + band, color="grey", alpha=0.25, label=f"UE {ue} band")
        axes[2].plot(seconds, controller.w_bytes / 1e3, lw=0.8, label=f"UE {ue} w")
    rate_axis.set_ylabel("Mbit/s")
    queue_axis.set_ylabel("queue (kB)")
    if run.controllers:
        axes[2].set_ylabel("decision (kB)")
    for axis in axes:
        axis.legend(loc="upper right", fontsize="small")
    axes[-1].set_xlabel("time (s)")
    where = "" if run.sweep_value is None else f", {run.description['sweep']['parameter']} = {run.sweep_value}"
    figure.suptitle(f"{run.arm}{where}, repetition {run.repetition}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def sweep(runs: list[dict[str, Any]], parameter: str, path: Path) -> None:
    """Utilization (paper 000 Fig. 11) and, for fixed-size transfers, TTSU (paper 001 Fig. 5) against the swept
    parameter, one line per arm; bars span the repetitions."""
    shown = [("utilization", "link utilization (%)", 100.0)]
    if any(not np.isnan(r["ttsu_s"]) for r in runs):
        shown.append(("ttsu_s", "TTSU (s)", 1.0))
    figure, axes = plt.subplots(len(shown), 1, figsize=(7, 4 * len(shown)), sharex=True, squeeze=False)
    points = sorted({(r["sweep_index"], r["sweep_value"]) for r in runs})
    numeric = all(isinstance(value, int | float) and value > 0 for _, value in points)
    x = [value for _, value in points] if numeric else [str(value) for _, value in points]
    for axis, (key, label, scale) in zip(axes[:, 0], shown, strict=True):
        for arm in dict.fromkeys(r["arm"] for r in runs):
            per_point = [[r[key] * scale for r in runs if r["arm"] == arm and r["sweep_index"] == i] for i, _ in points]
            means = np.array([np.nanmean(u) if u else np.nan for u in per_point])
            low = means - np.array([np.nanmin(u) if u else np.nan for u in per_point])
            high = np.array([np.nanmax(u) if u else np.nan for u in per_point]) - means
            axis.errorbar(x, means, yerr=[low, high], marker="o", capsize=3, label=arm)
        if numeric:
            axis.set_xscale("log")
        axis.set_ylabel(label)
        axis.grid(alpha=0.3)
        axis.legend()
    axes[-1, 0].set_xlabel(parameter)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def throughput_delay(runs: list[dict[str, Any]], path: Path, title: str = "") -> None:
    """Pantheon's plot: goodput against 95th-percentile one-way delay, one point per run, one colour per arm."""
    figure, axis = plt.subplots(figsize=(7, 5))
    if title:
        axis.set_title(title)
    arms = sorted({r["arm"] for r in runs})
    for arm in arms:
        points = [(r["delay_p95_ms"], r["goodput_mbps"]) for r in runs if r["arm"] == arm]
        delays, goodputs = zip(*points, strict=True)
        axis.scatter(delays, goodputs, label=arm, s=40)
    axis.set_xlabel("95th percentile one-way delay in the cell (ms)")
    axis.set_ylabel("goodput (Mbit/s)")
    axis.invert_xaxis()  # better is up and to the right, as in Pantheon
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
