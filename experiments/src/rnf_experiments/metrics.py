"""The metrics of summary.json, as pure functions on arrays (each unit-tested on a hand-computed fixture)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Array = npt.ArrayLike


def utilization(delivered_bytes: Array, capacity_bytes: Array) -> float:
    """Delivered bytes over the trace capacity of the same periods (the periods while data was waiting)."""
    capacity = float(np.sum(capacity_bytes))
    return float(np.sum(delivered_bytes)) / capacity if capacity > 0 else math.nan


def percentile(values: Array, q: float) -> float:
    data = np.asarray(values, dtype=np.float64)
    return float(np.percentile(data, q)) if data.size else math.nan


def percentiles(values: Array, qs: Sequence[float]) -> list[float]:
    """Several percentiles in one pass over `values` (a run's million delays: one pass, not one per q); NaN for
    each when there are none."""
    data = np.asarray(values, dtype=np.float64)
    return np.percentile(data, qs).tolist() if data.size else [math.nan] * len(qs)


def empty_fraction(queue_bytes: Array) -> float:
    data = np.asarray(queue_bytes)
    return float(np.mean(data == 0)) if data.size else math.nan


def sojourn_ms(queue_bytes: Array, capacity_bytes: Array, period_s: float) -> npt.NDArray[np.float64]:
    """Per period, the time the queue at its end takes to drain at the rate the cell offered in that period
    (the trace's capacity, not what a sender filled): queue / (capacity / period), in ms. Periods without
    capacity (an outage) are left out: nothing drains then, whatever the queue."""
    queue, capacity = np.asarray(queue_bytes, dtype=np.float64), np.asarray(capacity_bytes, dtype=np.float64)
    offered = capacity > 0
    return queue[offered] / capacity[offered] * period_s * 1000


def goodput_bps(received_bytes: int, start_ns: int, end_ns: int) -> float:
    return received_bytes * 8.0 / ((end_ns - start_ns) / 1e9) if end_ns > start_ns else math.nan


def jain_fairness(throughputs: Sequence[float]) -> float:
    """Jain's index (sum x)^2 / (n * sum x^2): 1 when all equal, 1/n when one takes all."""
    values = np.asarray(throughputs, dtype=np.float64)
    denominator = values.size * float(np.sum(values**2))
    return float(np.sum(values)) ** 2 / denominator if denominator > 0 else math.nan


def delay_reference(served_bytes: Array, period_s: float, target_s: float) -> npt.NDArray[np.float64]:
    """Per period, the queue a delay target asks for: the target times the rate the cell served in the period
    (served bytes / period), in bytes."""
    return np.asarray(served_bytes, dtype=np.float64) / period_s * target_s


MIN_BAND_BYTES = 3000.0  # two full-size packets: the queue moves by whole SDUs and is sampled once a period


def margin_band(reference_bytes: Array, limit_bytes: float) -> npt.NDArray[np.float64]:
    """Half of min(reference, limit - reference) (paper 000 rule (43) at half the margin, SMVS's default band),
    at least two full-size packets; half the reference when the queue limit is unknown (NaN)."""
    reference = np.asarray(reference_bytes, dtype=np.float64)
    return np.fmax(0.5 * np.fmin(reference, limit_bytes - reference), MIN_BAND_BYTES)


def band_membership(queue_bytes: Array, q0_bytes: Array, band_bytes: Array) -> npt.NDArray[np.bool_]:
    """Per step, whether the queue is inside the band around its reference: |q - q0| < band."""
    queue, q0, band = (np.asarray(values, dtype=np.float64) for values in (queue_bytes, q0_bytes, band_bytes))
    return np.abs(queue - q0) < band  # NaN band or q0 (not resolved yet) compares False


def band_fraction(inside: Array) -> float:
    """The share of steps inside the band from the first step that reached it on (paper 000: the reaching phase
    is not held against the controller); NaN when the band was never reached."""
    data = np.asarray(inside, dtype=bool)
    if not data.any():
        return math.nan
    return float(np.mean(data[int(np.argmax(data)) :]))


def settling_time_s(time_s: Array, inside: Array, start_s: float) -> float:
    """Seconds from `start_s` (the traffic's start) to the first step inside the band; NaN when never."""
    times, data = np.asarray(time_s, dtype=np.float64), np.asarray(inside, dtype=bool)
    return float(times[int(np.argmax(data))] - start_s) if data.any() else math.nan
