"""Plots of a results folder: rate, queue and each transfer's rate over time per run, and the arms side by side
(throughput against delay, the delay's distribution)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker

from rnf_experiments.analysis import DELAY_PERCENTILES, ArmRun, received_by

ARM_MARKERS = "os^DvP"  # one per ten arms, the length of matplotlib's colour cycle
ARM_LINES = ("-", "--", "-.", ":")  # as the markers, for lines
SHARE_PERIODS = 10  # the resource-block panel sums this many telemetry periods: 100 ms at 10 ms, readable at 20 s
RATE_STEPS = 200  # the transfers' panel: at most this many steps over the run, each at least a progress report's 100 ms
PAGE_SUFFIX = re.compile(r"-page\d+$")  # a web session's pages (traffic.py's names) share one colour


def rolling_share(granted: np.ndarray, capacity: np.ndarray, periods: int = SHARE_PERIODS) -> np.ndarray:
    """Granted over capacity summed over the last `periods` periods, at each period (NaN where the capacity is 0)."""
    granted_sum = np.convolve(granted.astype(np.float64), np.ones(periods))[: granted.size]
    capacity_sum = np.convolve(capacity.astype(np.float64), np.ones(periods))[: capacity.size]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(capacity_sum > 0, granted_sum / capacity_sum, np.nan)


def transfer_rate(flow: dict[str, Any], step_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """A transfer's received rate in steps of `step_ns` from its start to its last byte (the last step shorter): the
    step edges (ns) and the rate in each step (Mbit/s), from its progress reports."""
    edges = np.append(np.arange(flow["start_ns"], flow["last_byte_ns"], step_ns), flow["last_byte_ns"])
    return edges, np.diff(received_by(flow, edges)) * 8e3 / np.diff(edges)


def time_series(run: ArmRun, path: Path) -> None:
    """Per UE: capacity against delivered rate; the RLC queue against the controller's q0 and SMVS band; the
    controller's decision (quota or window), when the run had a controller; each UE's share of the cell's resource
    blocks, when the eNB reported them (contract 1.2); and each transfer's rate, when several ran (who waited for
    whom)."""
    with_prbs = any(series.capacity_prbs.sum() > 0 for series in run.ues.values())
    transfers = [flow for flow in run.flows if flow["last_byte_ns"] > flow["start_ns"]]
    with_transfers = len(transfers) > 1
    panels = 2 + bool(run.controllers) + with_prbs + with_transfers
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
    if with_transfers:
        _transfers_panel(axes[-1 - with_prbs], transfers, t0)
    if with_prbs:
        share_axis = axes[-1]
        longest = max(run.ues.values(), key=lambda series: series.time_ns.size)
        cell = np.zeros(longest.time_ns.size)
        for ue, series in run.ues.items():
            share = rolling_share(series.grant_prbs, series.capacity_prbs)
            share_axis.plot((series.time_ns - t0) / 1e9, share * 100, lw=0.8, label=f"UE {ue}")
            # the UEs' reports come from one exporter tick: on the longest one's times, a UE that left adds nothing
            cell += np.interp(longest.time_ns, series.time_ns, np.nan_to_num(share), right=0.0)
        if len(run.ues) > 1:
            share_axis.plot((longest.time_ns - t0) / 1e9, cell * 100, lw=0.8, color="black", label="cell")
        share_axis.set_ylabel(f"cell PRBs % ({SHARE_PERIODS} periods)")
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


def _transfers_panel(axis: plt.Axes, transfers: list[dict[str, Any]], t0: int) -> None:
    """Each transfer's rate from its start (a handshake that waits is a rate of 0) to its last byte."""
    span_ns = max(flow["last_byte_ns"] for flow in transfers) - t0
    step_ns = max(100_000_000, span_ns // RATE_STEPS)
    colours: dict[str, str] = {}
    for flow in transfers:
        name = PAGE_SUFFIX.sub(" pages", flow["flow"])
        edges, rates = transfer_rate(flow, step_ns)
        first = name not in colours
        colours.setdefault(name, f"C{len(colours) % 10}")
        axis.stairs(rates, (edges - t0) / 1e9, color=colours[name], lw=0.8, label=name if first else None)
    axis.set_ylabel("transfers (Mbit/s)")


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


def _arm_styles(runs: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """Each arm of `runs`, by name, with its colour and how many times the colour cycle has turned before it: past
    the cycle the marker or line changes, so that no two arms look alike."""
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    arms = sorted({r["arm"] for r in runs})
    return [(arm, colours[index % len(colours)], index // len(colours)) for index, arm in enumerate(arms)]


def throughput_delay(runs: list[dict[str, Any]], path: Path, title: str = "") -> None:
    """Pantheon's plot: goodput against 95th-percentile one-way delay, one point per run, one colour and marker per
    arm, each arm named beside its mean."""
    figure, axis = plt.subplots(figsize=(7, 5))
    if title:
        axis.set_title(title)
    for arm, colour, turn in _arm_styles(runs):
        points = [(r["delay_p95_ms"], r["goodput_mbps"]) for r in runs if r["arm"] == arm]
        delays, goodputs = zip(*points, strict=True)
        axis.scatter(delays, goodputs, label=arm, s=40, color=colour, marker=ARM_MARKERS[turn % len(ARM_MARKERS)])
        axis.annotate(
            arm,
            (float(np.mean(delays)), float(np.mean(goodputs))),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=7,
        )
    axis.set_xlabel("95th percentile one-way delay in the cell (ms)")
    axis.set_ylabel("goodput (Mbit/s)")
    axis.invert_xaxis()  # better is up and to the right, as in Pantheon
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def delay_cdf(runs: list[dict[str, Any]], path: Path, title: str = "") -> None:
    """The one-way delay's distribution, one line per run (summary.json's `delay_percentiles_ms`), one colour per
    arm: where the arms' curves cross shows whether a 95th percentile ranks them as the rest of the distribution
    does."""
    figure, axis = plt.subplots(figsize=(7, 5))
    if title:
        axis.set_title(title)
    for arm, colour, turn in _arm_styles(runs):
        for number, run in enumerate(r for r in runs if r["arm"] == arm):
            axis.plot(
                np.asarray(run["delay_percentiles_ms"], dtype=np.float64),
                DELAY_PERCENTILES,
                color=colour,
                linestyle=ARM_LINES[turn % len(ARM_LINES)],
                linewidth=1.2,
                label=arm if number == 0 else None,
            )
    axis.axhline(95, color="0.5", linestyle=":", linewidth=0.8)
    delays = np.asarray([r["delay_percentiles_ms"] for r in runs], dtype=np.float64)
    if np.any(delays > 0):
        axis.set_xscale("log")
        # ms at 1, 2 and 5 of each decade, written out: a run's delays span one or two decades
        axis.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.xaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
        axis.xaxis.set_minor_formatter(ticker.NullFormatter())
    else:  # no run has packet records (a log scale would have nothing to scale)
        axis.text(0.5, 0.5, "no delay measured", transform=axis.transAxes, ha="center")
    axis.set_xlabel("one-way delay in the cell (ms)")
    axis.set_ylabel("SDUs delivered within it (%)")
    axis.set_ylim(0, 100)
    axis.grid(alpha=0.3, which="both")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
