"""Flow aggregation with a clamped window (paper 004, Sec. IV-C and IV-D): the aggregate baseline.

- One aggregate per UE, one shared window over all its connections, clamped at `overprovision` (1.2, "about
  20 % larger than the effective link BDP") times the effective BDP, with no slow start: the window is in
  force from the first byte.
- The effective BDP is configured (`bdp_bytes`, the paper's "relatively static estimate") or estimated from
  the proxy's own ACKs, without RAN feedback: the largest delivery rate over `bdp_window_s` times the smallest
  RTT. A rate sample covers at least one smoothed RTT, so ACK compression does not inflate it. Until there is
  a sample, `initial_bdp_bytes` stands in (the paper's RTT_init x S_init).
- The scheduler over the aggregate's connections (stride scheduling by tickets plus strict priority) is the
  proxy's (`scheduler.py`, `[scheduling]` in the proxy configuration).
- Link stall (the paper's Wireless_Link_Timeout): no ACK progress for `stall_rtts` smoothed RTTs (at least
  `min_stall_s`) while data is in flight. The proxy then stops reading from the UE's servers, so their
  receive windows close to zero; on the first ACK after the stall the windows are restored and the clamp is
  unchanged, so sending resumes at full window.
"""

from __future__ import annotations

from collections import deque
from typing import Literal

from pydantic import Field
from rnf_foundation.config import Strict

from rnf_proxy.control import AckSample, ControllerState, Decision, Mode, Sample


class ClampConfig(Strict):
    """`controller = {kind = "clamp", ...}`."""

    kind: Literal["clamp"] = "clamp"
    bdp_bytes: int | None = Field(default=None, gt=0, description="static effective BDP; default: estimated")
    overprovision: float = Field(default=1.2, ge=1.0)
    initial_bdp_bytes: int = Field(default=64_000, gt=0)
    bdp_window_s: float = Field(default=10.0, gt=0)
    stall_rtts: float = Field(default=3.0, gt=0)
    min_stall_s: float = Field(default=0.2, gt=0)


class Clamp:
    """Paper 004's clamped aggregate window for one UE."""

    kind = "clamp"
    wants_acks = True

    def __init__(self, config: ClampConfig | None = None) -> None:
        self.config = config or ClampConfig()
        self.min_rtt_s = 0.0
        self.srtt_s = 0.0
        self.stalled = False
        self._rates: deque[tuple[float, float]] = deque()  # (time, rate), decreasing rates: a windowed max
        self._acked = 0
        self._elapsed = 0.0
        self._no_progress_s = 0.0
        self.steps = 0

    def bdp(self) -> float:
        if self.config.bdp_bytes is not None:
            return float(self.config.bdp_bytes)
        if not self._rates or self.min_rtt_s <= 0:
            return float(self.config.initial_bdp_bytes)
        return self._rates[0][1] * self.min_rtt_s

    def update(self, sample: Sample, now: float) -> Decision:
        if not isinstance(sample, AckSample):
            return self._decision()
        self.steps += 1
        if sample.min_rtt_s > 0:
            self.min_rtt_s = sample.min_rtt_s
        if sample.srtt_s > 0:
            self.srtt_s = sample.srtt_s
        self._sample_rate(sample, now)
        if sample.acked > 0:
            self._no_progress_s = 0.0
            self.stalled = False
        elif sample.in_flight > 0:
            self._no_progress_s += sample.interval_s
            limit = max(self.config.min_stall_s, self.config.stall_rtts * self.srtt_s)
            self.stalled = self._no_progress_s >= limit
        return self._decision()

    def _sample_rate(self, sample: AckSample, now: float) -> None:
        self._acked += sample.acked
        self._elapsed += sample.interval_s
        if self._elapsed <= 0 or self._elapsed < self.srtt_s:
            return
        rate = self._acked / self._elapsed
        self._acked, self._elapsed = 0, 0.0
        if rate <= 0:
            return  # no ACKs, no information about the link's rate (a stall is handled apart)
        while self._rates and self._rates[-1][1] <= rate:
            self._rates.pop()
        self._rates.append((now, rate))
        while self._rates[0][0] < now - self.config.bdp_window_s:
            self._rates.popleft()

    def window(self) -> float:
        return max(self.config.overprovision * self.bdp(), 2 * 1448.0)

    def _decision(self) -> Decision:
        return Decision(Mode.WINDOW, round(self.window()), step=self.steps, hold_wired=self.stalled)

    def state(self) -> ControllerState:
        """w, and the delivery rate behind the BDP estimate as b_bar."""
        return ControllerState(w=self.window(), b_bar=self._rates[0][1] if self._rates else None)
