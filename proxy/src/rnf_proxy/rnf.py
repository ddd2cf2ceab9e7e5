"""Radio network feedback controller (paper 001, Sec. III): an in-flight window from rate and queue reports.

- Feed-forward, eq. (1), whenever the reported rate changes: w = b*tau + q_ref. `b` is the rate the eNB
  served in the period; it counts as a change when it differs from the rate of the last feed-forward by more
  than `rate_change` (10 %), so per-period noise does not reset the window every step. A period that ends with
  an empty queue served less than the link could carry, so it may raise the rate but never lower it.
  `tau` is the RTT between proxy and UE without queueing: configured, or the smallest RTT of the UE's
  connections (TCP_INFO min_rtt). The smoothed RTT would count the queue q_ref twice.
- Feedback, eq. (2), every `feedback_period_s` (1 s in the paper) with the queue averaged over that period:
  w += q_ref - q_avg.
- `w` is a window: it bounds the bytes in flight toward the UE, over all of the UE's connections.
- Paced start: sending toward the UE is paced at w/tau, so a new window (the first one, or after an outage)
  goes out over one RTT instead of as a burst; in steady state the in-flight window binds first.

Outage (flagged, or nothing served for a period while data was queued): w freezes, neither law runs; with
no ACKs nothing more leaves, and when the link returns the frozen window is there at once.
Stale telemetry: as `smvs.py`, the UE is handed to the adaptive-EWMA controller until telemetry returns.

The laws are written once, in the native library (`proxy/relay/src/control.rs`), over the columns of an
`RnfBank` (`feedback.py`); the tests check them against hand computations.
"""

from __future__ import annotations

import ctypes
import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from rnf_proxy.control import ControllerState, Mode
from rnf_proxy.feedback import RanController, RowBank

MIN_WINDOW_BYTES = 2 * 1448


class RnfConfig(BaseModel):
    """`controller = {kind = "rnf", ...}`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["rnf"] = "rnf"
    q_ref_bytes: int = Field(default=50_000, gt=0, description="reference eNB queue")
    tau_s: float | None = Field(default=None, gt=0, description="proxy-UE RTT; default: measured min RTT")
    feedback_period_s: float = Field(default=1.0, gt=0)
    rate_change: float = Field(default=0.1, ge=0, description="relative change that triggers feed-forward")
    ts_s: float = Field(default=0.01, gt=0, description="telemetry period")
    stale_periods: int = Field(default=5, ge=1)


class NativeRnfParams(ctypes.Structure):
    """`RnfParams` in control.rs."""

    _fields_ = (
        ("q_ref", ctypes.c_double),
        ("tau", ctypes.c_double),  # NaN: the measured minimum RTT
        ("feedback_period", ctypes.c_double),
        ("rate_change", ctypes.c_double),
        ("min_window", ctypes.c_double),
    )


class RnfBank(RowBank):
    """Eqs. (1)-(2) for many UEs at once: one row per UE, one native step per telemetry burst (control.rs)."""

    mode = Mode.WINDOW
    rate: np.ndarray
    queue_sum: np.ndarray
    queue_count: np.ndarray
    next_feedback: np.ndarray

    def __init__(self, config: RnfConfig, capacity: int = 16) -> None:
        self.config = config
        parameters = NativeRnfParams(
            config.q_ref_bytes,
            math.nan if config.tau_s is None else config.tau_s,
            config.feedback_period_s,
            config.rate_change,
            MIN_WINDOW_BYTES,
        )
        super().__init__("rnf_rnf_step", parameters, capacity)

    def columns(self, capacity: int) -> dict[str, np.ndarray]:
        return super().columns(capacity) | {
            "rate": np.full(capacity, np.nan),  # the rate of the last feed-forward, bytes/s
            "queue_sum": np.zeros(capacity),
            "queue_count": np.zeros(capacity),
            "next_feedback": np.full(capacity, np.nan),
        }

    def state(self, row: int) -> ControllerState:
        rate = float(self.rate[row])
        down = bool(self.outage[row])
        return ControllerState(
            w=float(self.w[row]),
            q=float(self.q[row]),
            q0=float(self.config.q_ref_bytes),
            b=0.0 if down else float(self.b[row]),
            b_bar=None if math.isnan(rate) else rate,
            outage=down,
        )


class Rnf(RanController):
    """Paper 001's laws for one UE: a row of an `RnfBank`, with freshness and fallback (`feedback.py`)."""

    kind = "rnf"

    def __init__(self, config: RnfConfig | None = None, bank: RnfBank | None = None) -> None:
        bank = bank or RnfBank(config or RnfConfig())
        super().__init__(bank, bank.config.ts_s, bank.config.stale_periods)
        self.config = bank.config
        self.rnf_bank = bank
