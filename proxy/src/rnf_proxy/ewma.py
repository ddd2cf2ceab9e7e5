"""Adaptive-EWMA bandwidth estimate from ACK timing (paper 002, Sec. 3): the feedback-free baseline.

The proxy's window toward the UE evolves like a Reno sender whose loss response uses the estimate:

- sample (1): `BW_sample = d_k / (t_k - t_{k-1})`, the bytes acknowledged over the time since the previous
  acknowledgement; the proxy samples TCP_INFO once per tick, so `d_k` is what the tick's ACKs covered and
  `t_k - t_{k-1}` the time since the previous tick that saw ACK progress;
- filter (2)-(4): `alpha = min(sample, est) / max(sample, est)`, `est = alpha*est + (1 - alpha)*sample`;
- three duplicate ACKs (a fast retransmit) (5)-(7): `ssthresh = est * RTT_min`, `cwnd = min(cwnd, ssthresh)`;
- timeout (8): `ssthresh = est * RTT_min`, `cwnd = 1 MSS`;
- otherwise slow start below ssthresh (`cwnd += acked`) and congestion avoidance above it
  (`cwnd += MSS * acked / cwnd`), and only while the window held sending back, as in Reno.

Units are bytes (the paper's `/ Packet Size` disappears). No RAN telemetry is used at all. `smvs` and `rnf`
also run this estimator in the background and hand a UE to it when their telemetry goes stale
(`resume()` starts it from `est * RTT_min`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from rnf_foundation.config import Strict

from rnf_proxy.control import AckSample, ControllerState, Decision, Mode, Sample

INITIAL_WINDOW_SEGMENTS = 10  # RFC 6928, the Linux default


class EwmaConfig(Strict):
    """`controller = {kind = "ewma"}`."""

    kind: Literal["ewma"] = "ewma"
    initial_window_segments: int = Field(default=INITIAL_WINDOW_SEGMENTS, ge=1)


class Ewma:
    """Paper 002's estimator driving an in-flight window."""

    kind = "ewma"
    wants_acks = True

    def __init__(self, config: EwmaConfig | None = None) -> None:
        self.config = config or EwmaConfig()
        self.estimate = 0.0  # bytes/s; 0 until the first sample
        self.min_rtt_s = 0.0
        self.mss = 1448
        self.window = float(self.config.initial_window_segments * self.mss)
        self.ssthresh = float("inf")
        self.steps = 0
        self._since_progress_s = 0.0

    def observe(self, ack: AckSample) -> None:
        """Eqs. (1)-(4): one bandwidth sample from the ACKs of the last interval."""
        self.mss = ack.mss
        if ack.min_rtt_s > 0:
            self.min_rtt_s = ack.min_rtt_s
        self._since_progress_s += ack.interval_s
        if ack.acked <= 0 or self._since_progress_s <= 0:
            return
        sample = ack.acked / self._since_progress_s
        self._since_progress_s = 0.0
        if self.estimate <= 0:
            self.estimate = sample
            return
        alpha = min(sample, self.estimate) / max(sample, self.estimate)
        self.estimate = alpha * self.estimate + (1 - alpha) * sample

    def update(self, sample: Sample, now: float) -> Decision:
        if isinstance(sample, AckSample):
            self.follow(sample)
        return self.decision()

    def follow(self, ack: AckSample) -> None:
        """One step on the UE's ACKs (also as the fallback of another controller)."""
        self.observe(ack)
        self._evolve(ack)
        self.steps += 1

    def _evolve(self, ack: AckSample) -> None:
        floor = float(ack.mss)
        if ack.timeouts:
            self.ssthresh = max(self.bdp(), 2 * floor)  # eq. (5)
            self.window = floor  # eq. (8)
        elif ack.retransmits:
            self.ssthresh = max(self.bdp(), 2 * floor)  # eq. (5)
            self.window = min(self.window, self.ssthresh)  # eqs. (6)-(7)
        elif ack.window_limited and ack.acked > 0:
            if self.window < self.ssthresh:
                self.window += ack.acked
            else:
                self.window += ack.mss * ack.acked / self.window
        self.window = max(self.window, floor)

    def bdp(self) -> float:
        """`est * RTT_min`, bytes (eq. (5) without the division by the packet size)."""
        return self.estimate * self.min_rtt_s

    def resume(self) -> None:
        """Take over a UE from a telemetry-driven controller: start at est * RTT_min, in congestion avoidance."""
        start = self.bdp()
        if start > 0:
            self.window = max(start, 2.0 * self.mss)
            self.ssthresh = self.window

    def decision(self) -> Decision:
        return Decision(Mode.WINDOW, limit=int(self.window), step=self.steps)

    def state(self, fallback: bool = False) -> ControllerState:
        return ControllerState(w=self.window, b_bar=self.estimate, fallback=fallback)
