"""Radio network feedback controller (paper 001, Sec. III): an in-flight window from rate and queue reports.

- Feed-forward, eq. (1), whenever the rate changes: w = b*tau + q_ref. It counts as a change when `b` differs
  from the rate of the last feed-forward by more than `rate_change` (10 %), so noise does not reset the window
  every step. `b` is the served rate averaged over tau (`smooth_rate`, weight exp(-Ts/tau) per period: a window
  carries what one RTT serves, and on a bursty link one period's rate swings from nothing to several times the
  mean) or at weight 1/2 per period, whichever has foretold the served rate better over the last second (a link
  that steps: the fast one; as `smvs.py` chooses between b_bar and its fast average), or one period's rate as in
  the paper. A period that ends with an empty queue served less than the link could carry, so it may raise the
  rate but never lower it; with `channel_rate` (the default) it counts as served at the rate the link offered,
  counted by the eNB (contract 1.3) or from the UE's CQI (as `smvs.py`), or at 2^(1/n) times the last rate before
  that is known, n the RTT in periods (doubling per RTT).
  `tau` (on the ACK clock) is the RTT between proxy and UE without queueing: configured; or, by default
  (`loop_delay = "measured"`), the loop as measured under load: by Little's law the bytes in flight outside the
  eNB queue (the sockets' unacknowledged bytes less the reported queue, averaged over tau) over b, never below the
  smallest RTT of the UE's connections (TCP_INFO min_rtt) nor above their smoothed RTT. On the real eNB the loaded
  loop is longer than the idle one (HARQ, RLC AM status, the UE's uplink grants for its ACKs), and a window of b
  times the idle RTT leaves the queue empty (proxy/README.md). `loop_delay = "rtt"` is the paper's: the smallest
  RTT (the smoothed RTT would count the queue q_ref twice). On the RAN clock tau is the loop it measures (below).
- q_ref: in bytes (`q_ref_bytes`, the paper's); a delay target (`target_ms`) times the rate of the last
  feed-forward; by default the forecast margin: the 98th percentile, over the last 2.56 s, of what one tau served
  beyond the b*tau the window counted on (before 50 such errors are known, tau/2 + Ts of the rate: the period
  the report waits for and the forward half of the RTT; on the RAN clock, tau of it); at least 3000 B; plus a
  reserve that grows by half of each byte an empty queue cost the link once the margin is the reference, and
  settles where that is 2 % of it.
- Feedback, eq. (2), every `feedback_period_s` with the queue averaged over that period: w += q_ref - q_avg. By
  default every 2 tau, at least 4 telemetry periods (its last correction must have reached the queue); the paper
  says about 1 s. The feed-forward replaces the window, correction included, as in the paper. On the RAN clock no
  correction is counted before the UE's first release: while its connection is not up the window limits nothing,
  and adding q_ref less its empty queue wound the window up to the guard's cap in a 4 s handshake wait.
- What `w` bounds (`clock`):
  - `"ran"` (the default): what the eNB has not yet served, its queue and the bytes on their way to it. Each
    report releases the difference for the next period, u(k) = w - q(k) - T(k) (a quota, as `smvs.py`'s, in TCP
    payload: 1448 of every 1500 bytes the eNB counts). T(k), in transit, is counted by conservation: the last
    count, plus what the proxy released since the last report, less what the report shows arriving (q(k) -
    q(k-1) + served + dropped); exact whatever the loop's delay, so the release is clocked by what the eNB serves
    as a TCP window is by ACKs, and stable for any delay. Each period the count leans 5 % toward the quotas
    released over the measured loop (a 20-period time constant), so an error of units cannot accumulate. tau is
    then that loop, release to the report that shows it, measured as `smvs` measures it (the lag at which the
    quotas' changes covary most with the arrivals'): w = b tau + q_ref is what one loop serves plus the queue.
    Why: on srsRAN the UE sends its ACKs in bunches at its scheduling-request occasions (every 20 ms for
    srsue), so TCP's unacknowledged bytes swing by 20 ms of the rate from one occasion to the next, and a window
    of them drains the queue between bunches (proxy/README.md).
  - `"acks"` (the paper's): the bytes in flight toward the UE, sent and not acknowledged, over all of the UE's
    connections. Sending toward the UE is paced at w/tau, so a new window (the first one, or after an outage)
    goes out over one RTT instead of as a burst; in steady state the in-flight window binds first.

  With `overflow_guard` w stays under the queue limit the eNB reports less 4 % and 3000 B: what is in flight
  bounds what can reach the queue, so the controller itself never overflows it (with the RAN clock, the UE's
  sockets are capped at it too, as `smvs`'s).

Outage (flagged by the eNB; a period that served nothing while data waited is the rate falling, not an outage):
w freezes, neither law runs; nothing more leaves (no ACKs, or a quota of 0), and when the link returns the frozen
window is there at once.
Stale telemetry: as `smvs.py`, the UE is handed to the adaptive-EWMA controller until telemetry returns.

The laws are written once, in the native library (`proxy/relay/src/control.rs`), over the columns of an
`RnfBank` (`feedback.py`); the tests check them against hand computations.
"""

from __future__ import annotations

import ctypes
import math
from typing import Literal

import numpy as np
from pydantic import Field, model_validator
from rnf_foundation.config import Strict

from rnf_proxy.control import AckSample, ControllerState, Decision, Mode, Sample
from rnf_proxy.feedback import LAGS, MOMENTS, QUOTA_HISTORY, RanController, RowBank

MIN_WINDOW_BYTES = 2 * 1448


class RnfConfig(Strict):
    """`controller = {kind = "rnf", ...}`."""

    kind: Literal["rnf"] = "rnf"
    q_ref_bytes: int | None = Field(default=None, gt=0, description="reference eNB queue in bytes (the paper's)")
    target_ms: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, description="reference in time: q_ref = rate x target"
    )
    tau_s: float | None = Field(default=None, gt=0, description="proxy-UE RTT; default: measured min RTT")
    feedback_period_s: float | None = Field(
        default=None, gt=0, description="eq. (2)'s period; default 2 tau, at least 4 telemetry periods"
    )
    smooth_rate: bool = Field(
        default=True, description="b: the served rate averaged (over tau, or fast where that foretells better)"
    )
    overflow_guard: bool = Field(default=True, description="the window stays under B_max less a margin")
    channel_rate: bool = Field(
        default=True,
        description="a period whose queue ran empty is served at the rate the link offered: the eNB's count of what "
        "the TTIs with an empty queue offered (telemetry 1.3), else the CQI's rate",
    )
    loop_delay: Literal["measured", "rtt"] = Field(
        default="measured", description="tau: the loop measured under load, or the smallest RTT (paper)"
    )
    clock: Literal["ran", "acks"] = Field(
        default="ran", description="the window bounds what the eNB has not served (ran) or TCP's unacked bytes (paper)"
    )
    rate_change: float = Field(default=0.1, ge=0, description="relative change that triggers feed-forward")
    ts_s: float = Field(default=0.01, gt=0, description="telemetry period")
    stale_periods: int = Field(default=5, ge=1)

    @model_validator(mode="after")
    def _one_reference(self) -> RnfConfig:
        if self.q_ref_bytes is not None and self.target_ms is not None:
            raise ValueError("q_ref_bytes and target_ms exclude each other: a reference in bytes or in time")
        return self


class NativeRnfParams(ctypes.Structure):
    """`RnfParams` in control.rs."""

    _fields_ = (
        ("q_ref", ctypes.c_double),  # NaN: from the delay target
        ("target", ctypes.c_double),  # s; 0: the forecast margin
        ("tau", ctypes.c_double),  # NaN: the measured minimum RTT
        ("feedback_period", ctypes.c_double),  # NaN: 2 tau
        ("rate_change", ctypes.c_double),
        ("min_window", ctypes.c_double),
        ("smooth_rate", ctypes.c_int64),
        ("guard", ctypes.c_int64),
        ("channel_rate", ctypes.c_int64),
        ("loop_measured", ctypes.c_int64),
        ("ran_clock", ctypes.c_int64),
    )


class RnfBank(RowBank):
    """Eqs. (1)-(2) for many UEs at once: one row per UE, one native step per telemetry burst (control.rs)."""

    rate: np.ndarray
    queue_sum: np.ndarray
    queue_count: np.ndarray
    next_feedback: np.ndarray
    q_ref: np.ndarray
    smoothed: np.ndarray
    in_flight: np.ndarray
    srtt: np.ndarray
    pipe: np.ndarray
    loop_tau: np.ndarray
    quotas: np.ndarray
    transit: np.ndarray
    lag_cov: np.ndarray
    means: np.ndarray
    loop_steps: np.ndarray
    loop_now: np.ndarray
    fast: np.ndarray  # the served rate averaged at weight 1/2 per period
    rate_errors: np.ndarray  # (rows, 2): mean squared one-step errors of the average over tau and of the fast one

    def __init__(self, config: RnfConfig, capacity: int = 16) -> None:
        self.config = config
        self.mode = Mode.QUOTA if config.clock == "ran" else Mode.WINDOW
        parameters = NativeRnfParams(
            math.nan if config.q_ref_bytes is None else config.q_ref_bytes,
            config.target_ms / 1000 if config.target_ms is not None else 0.0,
            math.nan if config.tau_s is None else config.tau_s,
            math.nan if config.feedback_period_s is None else config.feedback_period_s,
            config.rate_change,
            MIN_WINDOW_BYTES,
            config.smooth_rate,
            config.overflow_guard,
            config.channel_rate,
            config.loop_delay == "measured",
            config.clock == "ran",
        )
        super().__init__("rnf_rnf_step", parameters, capacity)

    def columns(self, capacity: int) -> dict[str, np.ndarray]:
        return super().columns(capacity) | {
            "rate": np.full(capacity, np.nan),  # the rate of the last feed-forward, bytes/s
            "queue_sum": np.zeros(capacity),
            "queue_count": np.zeros(capacity),
            "next_feedback": np.full(capacity, np.nan),
            "q_ref": np.full(capacity, np.nan),
            "smoothed": np.full(capacity, np.nan),
            "in_flight": np.full(capacity, np.nan),  # bytes, the sockets' last sample
            "srtt": np.zeros(capacity),  # s, the sockets' last sample
            "pipe": np.full(capacity, np.nan),  # bytes in flight outside the queue, averaged over tau
            "loop_tau": np.full(capacity, np.nan),  # s, pipe / b
            "quotas": np.zeros((capacity, QUOTA_HISTORY)),  # the RAN clock's releases, slot k mod QUOTA_HISTORY
            "transit": np.full(capacity, np.nan),  # bytes on their way to the eNB's queue
            "lag_cov": np.zeros((capacity, LAGS)),  # the loop delay's estimator, as SMVS's
            "means": np.zeros((capacity, MOMENTS)),
            "loop_steps": np.zeros(capacity, dtype=np.int64),
            "loop_now": np.zeros(capacity, dtype=np.int64),  # the RAN clock's loop delay in use, steps
            "fast": np.full(capacity, np.nan),
            "rate_errors": np.zeros((capacity, 2)),
        }

    def state(self, row: int) -> ControllerState:
        rate = float(self.rate[row])
        down = bool(self.outage[row])
        default_reference = self.config.q_ref_bytes is None and self.config.target_ms is None
        return ControllerState(
            w=float(self.w[row]),
            q=float(self.q[row]),
            q0=float(self.q_ref[row]),
            reserve=float(self.reserve[row]) if default_reference else None,
            b=0.0 if down else float(self.b[row]),
            b_bar=None if math.isnan(rate) else rate,
            # the RAN clock counts the quotas of all but the last period of its loop on their way to the eNB
            in_flight_steps=int(self.loop_now[row]) - 1 if self.loop_now[row] > 0 else None,
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

    def update(self, sample: Sample, now: float) -> Decision:
        if isinstance(sample, AckSample):  # what the sockets hold in flight, for the measured loop
            self.rnf_bank.in_flight[self.row] = sample.in_flight
            self.rnf_bank.srtt[self.row] = sample.srtt_s
        return super().update(sample, now)
