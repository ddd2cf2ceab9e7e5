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


def empty_fraction(queue_bytes: Array) -> float:
    data = np.asarray(queue_bytes)
    return float(np.mean(data == 0)) if data.size else math.nan


def goodput_bps(received_bytes: int, start_ns: int, end_ns: int) -> float:
    return received_bytes * 8.0 / ((end_ns - start_ns) / 1e9) if end_ns > start_ns else math.nan


def jain_fairness(throughputs: Sequence[float]) -> float:
    """Jain's index (sum x)^2 / (n * sum x^2): 1 when all equal, 1/n when one takes all."""
    values = np.asarray(throughputs, dtype=np.float64)
    denominator = values.size * float(np.sum(values**2))
    return float(np.sum(values)) ** 2 / denominator if denominator > 0 else math.nan
