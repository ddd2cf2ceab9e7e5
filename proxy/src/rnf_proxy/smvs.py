"""SMVS window adaptation (paper 000, Sec. 4.2-4.3): a per-step quota that holds the eNB queue near q0.

Step k lasts Ts, the telemetry period, and begins when the UE's telemetry of period k arrives.

- q(k): the UE's RLC downlink queue; b(k)*Ts: what the air interface served during the period (reported
  directly by the eNB, the paper's "Node-B records it" option).
- b_bar <- alpha*b_bar + (1-alpha)*b(k) (eq. 19), then eta(k) = (b(k) - b_bar)*Ts with the updated b_bar.
- eta_l and eta_u (29) are the minimum and maximum of eta over a sliding **horizon** of the last
  `eta_horizon_s` seconds (100 steps at Ts = 10 ms). The paper takes min_k and max_k over all k; over a whole
  run one start-up transient would widen eta_2, and with it the switching term, for ever. The horizon
  should cover at least one period of the bandwidth variation; one second covers five periods of the
  Fig. 11 trace with period 0.2 s and still forgets a rate step after a second. Outage steps are left out.
  The horizon is kept in 10 blocks (of 10 steps at 1 s and 10 ms), so it spans 91 to 100 steps.
- S(k) = q(k) - q0 - n*b_bar*Ts + gamma * sum_{i=1..n} w(k-i): the prediction (34) of the queue once the quotas
  released and not yet in q(k) have arrived; the paper has n = 2d (its report travels d steps back).
- w(k) = (b_bar*Ts + eta_1 - delta*Ts*S(k) - (eta_2 + eps*Ts)*sgn(S(k))) / gamma, clipped at 0 (eq. 36).
  **w(k) is a quota**: the bytes released toward the UE during step k, not a window.
- Switching (`switching`): "saturated" (the default) puts sgn(S) in a boundary layer, sat(S/phi), phi such that the
  law's gain on S inside it is 1/2 (no chatter, and stable with the loop delay one step off), and leaves eta_1 out
  of the feed-forward (its bias after every rate change would offset the queue); b_bar is then eq. (19)'s or a fast
  average (weight 1/2), whichever foretold the served rate better over the last second. "sign" is the paper's law.
- n, the quotas in flight (`loop_delay`): "measured" (the default) is the loop delay L less one, L the lag in steps
  at which the quotas' changes covary most with the changes of the arrivals the eNB reports (q(k) - q(k-1) + served
  + dropped), learnt step by step in control.rs (proxy/README.md: why); until the estimator is trusted, the steps
  from the first release to the report that shows its first initial window in the queue, and before that report
  1 + ceil(min RTT / 2 / Ts); "rtt" is the paper's 2d with d = ceil(tau_p/Ts), tau_p half of the smallest RTT of
  the UE's connections (TCP_INFO min_rtt); a configured d gives 2d.
- b(k) (`channel_rate`, default on): a period whose queue ran empty counts as served at the rate the link offered:
  the served rate plus the capacity of the TTIs with an empty queue where the eNB counts it (contract 1.3), else
  the rate the UE's CQI offers (its efficiency times the rate per unit of efficiency learnt while the queue was
  backlogged), or, before that is known, 2^(1/L) times the last rate (doubling per loop delay); off: the served
  rate (paper).
- The reference: q0 in bytes (`q0_bytes`, the paper's); a delay target (`target_ms`): q0 = target x the smaller of
  b_bar and a fast average of b (weight 1/2 per period), so it follows a rate drop within a few periods; by
  default the forecast margin: the 98th percentile, over the last 2.56 s, of what L periods served beyond the
  L b_bar Ts the law counted on (a loop delay's worth of the rate until 50 such errors are known), plus a reserve
  that grows by half of each byte an empty queue cost the link once they are, and settles where that is 2 % of it.
  With the default eps the band follows q0 (half of min(q0, B_max - q0)).
- Overflow guard (`overflow_guard`): w(k) never takes q(k) + the quotas in flight + w(k) past B_max less 4 % and
  3000 B (headers the quotas do not count), as if nothing were served from now on: no self-inflicted RLC drop.

Outage (flagged by the eNB; a period that served nothing while data waited is a sample of the rate, b = 0 in
eq. (19), not an outage: on a bursty link such gaps are part of the service): the quota is 0 for
that step and is recorded as such in the w history (nothing was released), while b_bar and the eta horizon
freeze; when the link returns, the first step uses the pre-outage b_bar, so sending resumes at once.

Stale telemetry (none for `stale_periods` periods, 5 by default): the UE is handed to the feedback-free
adaptive-EWMA controller (`ewma.py`), which has been following the UE's ACKs all along and starts from its
estimate times the minimum RTT. Its window is ACK-clocked, so it cannot flood a queue it no longer sees.
When telemetry returns, SMVS resumes with its w history set to b_bar*Ts per step (steady state).

Default parameters follow the loop and the paper's rules rather than any trace: the forecast margin (what the loop
cannot foresee), delta*Ts = 0.25 with the boundary layer (0.875 with sgn, the paper's 35 x 0.025, "delta*Ts -> 1"),
and eps so that the predicted band is half of min(q0, B_max - q0), the margin rule (43) allows. With `q0_bytes`
and no eps, eps is fixed from q0 and B_max. Units are bytes, so gamma = 1. B_max is configured or, when not, the
queue limit the eNB reports (`dl_queue_limit_bytes`, or `dl_queue_limit_sdus` x 1500 B where the eNB limits
its queue in SDUs only, as srsenb does).

The law is written once, in the native library (`proxy/relay/src/control.rs`), stepping many UEs per call
(`SmvsBank`, one row per UE, see `feedback.py`); `Smvs` is one UE's view of it with the
`update(sample, now) -> Decision` interface. The tests check it against hand computations of the equations.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field, model_validator
from rnf_foundation.config import Strict

from rnf_proxy.control import ControllerState, Decision, Mode, RanSample
from rnf_proxy.feedback import LAGS, MAX_D, MOMENTS, QUOTA_HISTORY, RanController, RowBank

DEFAULT_DELTA_TS = 0.875  # paper 000 Sec. 5: delta = 35, Ts = 25 ms; with its sgn switching
DEFAULT_DELTA_TS_SATURATED = 0.25  # half of the boundary layer's gain on S, LAYER_GAIN = 1/2 in control.rs
DEFAULT_BAND_FRACTION = 0.5  # predicted band as a fraction of min(q0, B_max - q0)


class SmvsConfig(Strict):
    """`controller = {kind = "smvs", ...}`: paper 000's parameters, in bytes and seconds."""

    kind: Literal["smvs"] = "smvs"
    ts_s: float = Field(default=0.01, gt=0, description="Ts, the step: the telemetry period")
    q0_bytes: int | None = Field(default=None, gt=0, description="reference queue in bytes (the paper's)")
    target_ms: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="reference in time: q0 = rate x target; default the forecast margin",
    )
    loop_delay: Literal["measured", "rtt"] = Field(
        default="measured", description="quotas in flight: the measured loop delay, or 2d from the RTT (paper)"
    )
    overflow_guard: bool = Field(default=True, description="queue + in flight stays under B_max less a margin")
    b_max_bytes: int | None = Field(default=None, gt=0, description="eNB queue limit; default from telemetry")
    switching: Literal["saturated", "sign"] = Field(
        default="saturated", description="sgn(S) in a boundary layer (no chatter), or sgn itself (paper)"
    )
    channel_rate: bool = Field(
        default=True,
        description="a period whose queue ran empty is served at the rate the link offered: the eNB's count of what "
        "the TTIs with an empty queue offered (telemetry 1.3), else the CQI's rate",
    )
    delta: float | None = Field(default=None, gt=0, description="1/s; default 0.25/Ts, 0.875/Ts with sgn")
    eps: float | None = Field(default=None, gt=0, description="bytes/s; default: band = half the margin")
    alpha: float = Field(default=0.85, gt=0, lt=1)
    gamma: float = Field(default=1.0, gt=0, description="queue bytes per window byte")
    d: int | None = Field(default=None, ge=0, le=MAX_D, description="steps; default from the measured RTT")
    eta_horizon_s: float = Field(default=1.0, gt=0)
    stale_periods: int = Field(default=5, ge=1)

    @model_validator(mode="after")
    def _one_reference(self) -> SmvsConfig:
        if self.q0_bytes is not None and self.target_ms is not None:
            raise ValueError("q0_bytes and target_ms exclude each other: a reference in bytes or in time")
        return self


@dataclass(frozen=True)
class SmvsParams:
    """Resolved parameters: every default filled in."""

    ts: float
    q0: float
    b_max: float | None
    delta: float
    eps: float
    alpha: float
    gamma: float
    d: int | None
    horizon: int  # steps
    target_s: float | None = None  # a delay target (q0 = rate x target), 0 for the forecast margin; None: q0 bytes

    @property
    def band(self) -> float:
        """Predicted quasi-sliding band, eps*Ts/(1 - delta*Ts) (paper 000 eq. (37)); NaN with a delay target and
        the default eps, which follows q0."""
        denominator = 1 - self.delta * self.ts
        return self.eps * self.ts / denominator if denominator > 0 else math.inf


def target_s(config: SmvsConfig) -> float | None:
    """The delay target in seconds, 0 for the forecast margin (the default); None with a reference in bytes."""
    if config.q0_bytes is not None:
        return None
    return config.target_ms / 1000 if config.target_ms is not None else 0.0


def default_delta(config: SmvsConfig) -> float:
    """delta, 1/s: configured, or the paper's delta*Ts = 0.875 with sgn, 0.25 with the boundary layer."""
    if config.delta is not None:
        return config.delta
    delta_ts = DEFAULT_DELTA_TS if config.switching == "sign" else DEFAULT_DELTA_TS_SATURATED
    return delta_ts / config.ts_s


def resolve(config: SmvsConfig, reported_b_max: int = 0) -> SmvsParams | None:
    """Fill in the defaults; None while B_max is needed and neither configured nor reported yet."""
    b_max = config.b_max_bytes or reported_b_max or None
    delta = default_delta(config)
    target = target_s(config)
    if config.eps is not None:
        eps = config.eps
    elif config.q0_bytes is None:
        eps = math.nan  # with a delay target q0 and eps follow the rate, step by step (control.rs)
    elif b_max is not None and b_max > config.q0_bytes and delta * config.ts_s < 1:
        q0 = config.q0_bytes
        eps = DEFAULT_BAND_FRACTION * min(q0, b_max - q0) * (1 - delta * config.ts_s) / config.ts_s
    else:
        return None
    return SmvsParams(
        ts=config.ts_s,
        q0=math.nan if config.q0_bytes is None else float(config.q0_bytes),
        b_max=float(b_max) if b_max else None,
        delta=delta,
        eps=eps,
        alpha=config.alpha,
        gamma=config.gamma,
        d=config.d,
        horizon=max(1, round(config.eta_horizon_s / config.ts_s)),
        target_s=target,
    )


class NativeSmvsParams(ctypes.Structure):
    """`SmvsParams` in control.rs."""

    _fields_ = (
        ("ts", ctypes.c_double),
        ("alpha", ctypes.c_double),
        ("gamma", ctypes.c_double),
        ("delta", ctypes.c_double),
        ("d", ctypes.c_int64),  # -1: from the measured RTT or loop
        ("block", ctypes.c_int64),
        ("blocks", ctypes.c_int64),
        ("loop_measured", ctypes.c_int64),
        ("target", ctypes.c_double),  # s; 0: the forecast margin; NaN: q0 in bytes
        ("band_fraction", ctypes.c_double),  # NaN: eps fixed
        ("guard", ctypes.c_int64),
        ("saturate", ctypes.c_int64),  # 1: sgn(S) in a boundary layer; 0: sgn (paper)
        ("channel_rate", ctypes.c_int64),
    )


class SmvsBank(RowBank):
    """Eq. (36) for many UEs at once: one row per UE, one native step per telemetry burst (control.rs)."""

    mode = Mode.QUOTA
    q0: np.ndarray
    eps: np.ndarray
    b_max: np.ndarray
    b_bar: np.ndarray
    eta_low: np.ndarray  # (rows, blocks): min of eta per block of steps, a ring
    eta_high: np.ndarray  # (rows, blocks): max of eta per block of steps
    eta_count: np.ndarray
    quotas: np.ndarray  # (rows, QUOTA_HISTORY) ring of w, slot k mod QUOTA_HISTORY holds w(k)
    d: np.ndarray  # quotas in flight the last step counted (2d in the paper's terms, d recorded)
    lag_cov: np.ndarray  # (rows, LAGS): covariance of w(k - lag) with the arrivals of period k
    means: np.ndarray  # (rows, MOMENTS): running means of the changes of w and of the arrivals, the last arrivals,
    # the changes' variances, the last step of a pause after a stall, the arrivals' last change
    loop_steps: np.ndarray  # the measured loop delay in steps, 0 until it is
    b_fast: np.ndarray  # the fast rate estimate that converts the delay target to bytes
    rate_errors: np.ndarray  # (rows, 2): mean squared one-step errors of b_bar and of b_fast

    def __init__(self, config: SmvsConfig, capacity: int = 16) -> None:
        self.config = config
        self.base = resolve(config)
        self.unresolved: set[int] = set()  # rows waiting for B_max from telemetry
        self.horizon = max(1, round(config.eta_horizon_s / config.ts_s))
        # the horizon is kept in blocks (10 of them at most), so the min and max cover between
        # horizon - block + 1 and horizon steps, at a tenth of the cost of a step-by-step ring
        self.block = max(1, self.horizon // 10)
        self.blocks = -(-self.horizon // self.block)
        self.delta = default_delta(config)
        target = target_s(config)
        parameters = NativeSmvsParams(
            config.ts_s,
            config.alpha,
            config.gamma,
            self.delta,
            -1 if config.d is None else config.d,
            self.block,
            self.blocks,
            config.loop_delay == "measured",
            math.nan if target is None else target,
            DEFAULT_BAND_FRACTION if target is not None and config.eps is None else math.nan,
            config.overflow_guard,
            config.switching == "saturated",
            config.channel_rate,
        )
        super().__init__("rnf_smvs_step", parameters, capacity)

    def columns(self, capacity: int) -> dict[str, np.ndarray]:
        return super().columns(capacity) | {
            "q0": np.full(capacity, np.nan),
            "eps": np.full(capacity, np.nan),
            "b_max": np.full(capacity, np.nan),
            "b_bar": np.full(capacity, np.nan),
            "eta_low": np.zeros((capacity, self.blocks)),
            "eta_high": np.zeros((capacity, self.blocks)),
            "eta_count": np.zeros(capacity, dtype=np.int64),
            "quotas": np.zeros((capacity, QUOTA_HISTORY)),
            "d": np.full(capacity, 1 if self.config.d is None else self.config.d, dtype=np.int64),
            "lag_cov": np.zeros((capacity, LAGS)),
            "means": np.zeros((capacity, MOMENTS)),
            "loop_steps": np.zeros(capacity, dtype=np.int64),
            "b_fast": np.full(capacity, np.nan),
            "rate_errors": np.zeros((capacity, 2)),
        }

    def add(self) -> int:
        row = super().add()
        if self.base is not None:
            self._set_params(row, self.base)
        else:
            self.unresolved.add(row)
        return row

    def _set_params(self, row: int, params: SmvsParams) -> None:
        self.q0[row], self.eps[row] = params.q0, params.eps
        self.b_max[row] = params.b_max if params.b_max is not None else np.nan

    def params(self, row: int) -> SmvsParams | None:
        """The resolved parameters of a row (None until B_max is known when it is needed); q0 and eps as of the
        last step with a delay target."""
        if row in self.unresolved:
            return None
        c = self.config
        return SmvsParams(
            ts=c.ts_s,
            q0=float(self.q0[row]),
            b_max=None if math.isnan(self.b_max[row]) else float(self.b_max[row]),
            delta=self.delta,
            eps=float(self.eps[row]),
            alpha=c.alpha,
            gamma=c.gamma,
            d=c.d,
            horizon=self.horizon,
            target_s=target_s(c),
        )

    def step(self, rows: Sequence[int], samples: Sequence[RanSample], now: float) -> list[Decision | None]:
        if self.unresolved:  # rows still waiting for B_max take it from the queue limit their eNB reports
            for row, sample in zip(rows, samples, strict=True):
                if row in self.unresolved and (params := resolve(self.config, sample.queue_limit)) is not None:
                    self._set_params(row, params)
                    self.unresolved.discard(row)
        return super().step(rows, samples, now)

    def state(self, row: int) -> ControllerState:
        q, q0 = float(self.q[row]), float(self.q0[row])
        resolved = not math.isnan(q0)
        band = float(self.eps[row]) * self.config.ts_s / (1 - self.delta * self.config.ts_s)
        b_bar, s = float(self.b_bar[row]), float(self.s[row])
        return ControllerState(
            w=float(self.w[row]) if resolved else None,
            q=q,
            q0=q0 if resolved else None,
            reserve=float(self.reserve[row]) if resolved and target_s(self.config) == 0 else None,
            b=float(self.b[row]),
            b_bar=None if math.isnan(b_bar) else b_bar,
            s=None if math.isnan(s) else s,
            band=band if resolved else None,
            in_band=abs(q - q0) < band if resolved else None,
            in_flight_steps=int(self.d[row]) if resolved else None,
            outage=bool(self.outage[row]),
        )


class Smvs(RanController):
    """Paper 000 eq. (36) for one UE: a row of an `SmvsBank`, with freshness and fallback (`feedback.py`)."""

    kind = "smvs"

    def __init__(self, config: SmvsConfig | None = None, bank: SmvsBank | None = None) -> None:
        bank = bank or SmvsBank(config or SmvsConfig())
        super().__init__(bank, bank.config.ts_s, bank.config.stale_periods)
        self.config = bank.config
        self.smvs_bank = bank

    @property
    def d(self) -> int:
        """The feedback delay in steps of the last step: configured, or derived from the measured RTT."""
        return int(self.smvs_bank.d[self.row])
