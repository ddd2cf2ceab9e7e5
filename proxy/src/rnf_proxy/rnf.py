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
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from rnf_proxy.control import ControllerState, Decision, Mode
from rnf_proxy.feedback import RanBatch, RanController, RowBank

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


class RnfBank(RowBank):
    """Eqs. (1)-(2) for many UEs at once: one row per UE."""

    rate: np.ndarray
    queue_sum: np.ndarray
    queue_count: np.ndarray
    next_feedback: np.ndarray

    def __init__(self, config: RnfConfig, capacity: int = 16) -> None:
        self.config = config
        super().__init__(capacity)

    def columns(self, capacity: int) -> dict[str, np.ndarray]:
        return super().columns(capacity) | {
            "rate": np.full(capacity, np.nan),  # the rate of the last feed-forward, bytes/s
            "queue_sum": np.zeros(capacity),
            "queue_count": np.zeros(capacity),
            "next_feedback": np.full(capacity, np.nan),
        }

    def step(self, rows: np.ndarray, batch: RanBatch, now: float) -> list[Decision | None]:
        c = self.config
        q_ref = float(c.q_ref_bytes)
        queue = batch.queue
        down = batch.link_down(self.prev_queue[rows])
        self.prev_queue[rows] = queue
        steps = self.steps[rows] + 1
        self.steps[rows] = steps
        tau = np.full(len(rows), c.tau_s) if c.tau_s is not None else self.min_rtt[rows]
        b = batch.rate()
        window, rate = self.w[rows], self.rate[rows]
        missing = np.isnan(window)
        window = np.where(missing & down, q_ref, window)
        known_rate = np.where(np.isnan(rate), 0.0, rate)
        changed = np.isnan(rate) | (np.abs(b - known_rate) > c.rate_change * known_rate)
        # an empty queue at the end of the period: the period served less than the link could carry
        forward = ~down & (missing | (changed & ((queue > 0) | (b > known_rate))))
        rate = np.where(forward, b, rate)
        window = np.where(forward, b * tau + q_ref, window)  # eq. (1)
        live = ~down
        queue_sum = self.queue_sum[rows] + np.where(live, queue, 0.0)
        queue_count = self.queue_count[rows] + live
        due_at = self.next_feedback[rows]
        due = live & (now >= due_at)  # NaN (never scheduled) compares False
        window = np.where(due, window + q_ref - queue_sum / np.maximum(queue_count, 1), window)  # eq. (2)
        window = np.where(live, np.maximum(window, MIN_WINDOW_BYTES), window)
        self.queue_sum[rows] = np.where(due, 0.0, queue_sum)
        self.queue_count[rows] = np.where(due, 0, queue_count)
        self.next_feedback[rows] = np.where(due | (live & np.isnan(due_at)), now + c.feedback_period_s, due_at)
        self.w[rows], self.rate[rows], self.q[rows], self.b[rows], self.outage[rows] = window, rate, queue, b, down
        pacing = np.where(tau > 0, window / np.where(tau > 0, tau, 1.0), 0.0)
        mode = Mode.WINDOW
        limits = np.rint(window).astype(np.int64).tolist()
        return [
            Decision(mode, limit, k, 0.0, p)
            for limit, k, p in zip(limits, steps.tolist(), pacing.tolist(), strict=True)
        ]

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
