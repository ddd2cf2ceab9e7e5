"""One UE: its controller, its connections, and the decision in force carried out on the wire (enforcement).

- `FREE` (itcp): each connection drains into its socket as far as TCP_NOTSENT_LOWAT allows, inside the relay
  engine without a word from Python; the kernel's congestion control decides when bytes leave.
- `WINDOW` (rnf, clamp, ewma, the fallback): what the UE's sockets hold, in flight plus not yet sent
  (SIOCOUTQ, summed over the UE's connections, plus what was granted and not yet copied), never exceeds the
  window; the proxy releases the difference.
  ACKs shrink the send queues, and the proxy refills every `pump_interval_s` (1 ms) while window-limited, so
  what is in flight stays at the window.
- `QUOTA` (smvs): at the start of step k the quota w(k) is released into the UE's sockets, shared among the
  connections; bytes that arrive from the server during the step come out of the remainder. The release is
  exact, so what leaves during the step is w(k), and over a run the sum of the quotas. What the sockets still
  hold unsent from earlier steps is capped at one quota: when the network cannot take the quotas (the UE's
  receive window, a lost telemetry step that starts two steps at once), the release shrinks instead of the
  kernel's backlog growing without bound. With a `cap` (the SMVS overflow guard), what the UE's sockets hold,
  sent and unacknowledged or unsent (SIOCOUTQ), plus the release never exceeds it: a byte that could still reach
  the eNB's queue is in there, so the queue cannot overflow whatever the loop's timing. The sockets are paced
  at 1.1 w(k)/Ts (SO_MAX_PACING_RATE, TCP's internal pacing), so the step's bytes are spread over the step
  rather than sent as a burst, with a tenth of the step to spare for the jitter of the step clock, and never
  below 10 segments per step. A step with
  w(k) = 0 leaves the pacing rate alone: the kernel lowers its pacing rate at once but raises it only on the
  next ACK, so a rate cut to nothing (or to a trickle) would hold back the steps after it, when too little is in
  flight to bring ACKs.
- `hold_wired` stops reading from the servers, so their receive windows close (paper 004's link stall).

Connections share an allowance by stride scheduling with priorities (`scheduler.py`). In `WINDOW` and `QUOTA`
modes the connections are *controlled*: the relay engine moves their downlink only as far as `Relay.grant`
says, in one call for all the grants of a pump; a grant is released when it is made (the engine's threads
copy it as fast as the UE socket takes it), so the window and the quota count it at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from rnf_proxy import sockets
from rnf_proxy.control import FREE, AckSample, Controller, Decision, Mode
from rnf_proxy.relay import Flow, FlowGroup, Relay
from rnf_proxy.scheduler import StrideScheduler

QUOTA_PACING_HEADROOM = 1.1
# A tiny quota must not set a tiny pacing rate: the kernel applies a lower rate at once, but a higher one only
# from the next ACK, and the next departure is already scheduled by the low rate (1 segment/s seen in runs).
# Pacing only spreads bytes; the release bounds them, so pacing at least 10 segments per step costs nothing.
QUOTA_PACING_FLOOR_BYTES = 10 * 1448
log = logging.getLogger("rnf.proxy")


@dataclass(frozen=True)
class Enforcement:
    """Settings of enforcement shared by every aggregate."""

    pump_interval_s: float


class Aggregate:
    """The proxy's state for one UE (paper 004's aggregate)."""

    def __init__(
        self,
        ue: str,
        controller: Controller,
        loop: asyncio.AbstractEventLoop,
        relay: Relay,
        enforcement: Enforcement,
        scheduler: StrideScheduler[Flow],
        closed: Callable[[Flow], None],
    ) -> None:
        self.ue, self.controller, self.loop, self.relay = ue, controller, loop, relay
        self._closed = closed
        self.enforcement = enforcement
        self.scheduler = scheduler
        self.flows = FlowGroup()
        self.decision: Decision = FREE
        self.remaining = 0  # QUOTA: bytes of the step not yet released
        self.quota_pacing = 0.0  # QUOTA: the pacing rate in force, bytes/s
        self.window_limited = False  # since the last ACK sample
        self.recorded_step = -1
        self.queued = 0  # WINDOW: bytes in the UE's send queues, an upper bound between refreshes (SIOCOUTQ)
        self.released = 0  # bytes granted to the UE's connections since the last `take_released`
        self._pump_soon: asyncio.Handle | None = None
        self._pump_timer: asyncio.TimerHandle | None = None
        self._last_sample: float | None = None

    # -- connections ------------------------------------------------------------------------------------

    @property
    def controls(self) -> bool:
        """Whether the decision in force says how much of the downlink leaves (every mode but FREE)."""
        return self.decision.mode is not Mode.FREE

    def add(self, flow: Flow, priority: int, tickets: int) -> None:
        """A new connection, created controlled and held as the decision in force says."""
        self.flows.add(flow)
        self.scheduler.add(flow, priority, tickets)
        self._configure(flow)

    def on_closed(self, flow: Flow) -> None:
        self.flows.discard(flow)
        self.scheduler.remove(flow)
        self._closed(flow)

    def on_data(self, flow: Flow) -> None:
        if self.controls and self._pump_soon is None:  # every arrival of this loop iteration, one pump
            self._pump_soon = self.loop.call_soon(self._soon_pump)

    def _soon_pump(self) -> None:
        self._pump_soon = None
        self.pump()

    # -- decisions --------------------------------------------------------------------------------------

    def apply(self, decision: Decision) -> None:
        """Put a decision in force (a new QUOTA step starts when the step number changes)."""
        old = self.decision
        if decision == old:
            return
        self.decision = decision
        if decision.hold_wired != old.hold_wired:
            for flow in self.flows:
                flow.hold(decision.hold_wired)
        if (decision.mode is Mode.FREE) != (old.mode is Mode.FREE):
            for flow in self.flows:
                flow.control(self.controls)
        if decision.mode is Mode.QUOTA:
            self._start_step()
        elif decision.mode != old.mode or decision.pacing_rate != old.pacing_rate:
            for flow in self.flows:
                self._configure(flow)
        if decision.mode is Mode.WINDOW:
            self._send_window(refresh=True)
        else:
            self.pump()

    def _configure(self, flow: Flow) -> None:
        """Pacing for a connection under the current decision."""
        mode = self.decision.mode
        if mode is Mode.QUOTA:
            rate = self.quota_pacing
        else:
            rate = self.decision.pacing_rate if mode is Mode.WINDOW else 0.0
        if not flow.closed:
            try:
                sockets.set_pacing(flow.ue, rate)
            except OSError:
                pass

    def _start_step(self) -> None:
        decision = self.decision
        paced = max(decision.limit, QUOTA_PACING_FLOOR_BYTES)
        rate = QUOTA_PACING_HEADROOM * paced / decision.step_s
        if decision.limit > 0 and rate != self.quota_pacing:
            self.quota_pacing = rate
            for flow in self.flows:
                self._configure(flow)
        backlog = self.relay.queued(self.flows, unsent_only=True)
        self.remaining = max(0, min(decision.limit, 2 * decision.limit - backlog))
        if decision.cap and self.remaining:  # nothing the sockets hold can overflow the queue the cap guards
            self.remaining = max(0, min(self.remaining, decision.cap - self.relay.queued(self.flows)))
        self._send_quota()

    # -- releasing bytes --------------------------------------------------------------------------------

    def pump(self) -> None:
        """Release what the decision allows now (FREE connections drain by themselves, in the engine)."""
        mode = self.decision.mode
        if mode is Mode.WINDOW:
            self._send_window()
        elif mode is Mode.QUOTA:
            self._send_quota()

    def _refresh_queued(self) -> None:
        self.queued = self.relay.queued(self.flows)

    def _send_window(self, refresh: bool = False) -> None:
        demand = self.relay.demand(self.flows)
        if not demand:
            return
        # self.queued only overestimates between refreshes (ACKs shrink the queues): ask the kernel when the
        # estimate leaves no room, and on the timer
        if refresh or self.queued >= self.decision.limit:
            self._refresh_queued()
        allowance = self.decision.limit - self.queued
        left = sum(demand.values())
        if allowance > 0:
            sent = self.relay.grant(self.scheduler.allocate(allowance, demand))
            self.released += sent
            self.queued += sent
            allowance -= sent
            left -= sent
        if allowance <= 0 and left > 0:
            self.window_limited = True
            self._schedule_pump()

    def _send_quota(self) -> None:
        if self.remaining <= 0:
            return
        demand = self.relay.demand(self.flows)
        if not demand:
            return
        sent = self.relay.grant(self.scheduler.allocate(self.remaining, demand))
        self.released += sent
        self.remaining -= sent

    def _schedule_pump(self) -> None:
        if self._pump_timer is None:
            self._pump_timer = self.loop.call_later(self.enforcement.pump_interval_s, self._timer_pump)

    def _timer_pump(self) -> None:
        self._pump_timer = None
        if self.flows and self.decision.mode is Mode.WINDOW:
            self._send_window(refresh=True)
        elif self.flows:
            self.pump()

    def take_released(self) -> int:
        """What the decisions released toward the UE since the last call, bytes (with each telemetry report: a
        quota the connections had no data for never left, and the RAN clock must not count it on its way)."""
        released, self.released = self.released, 0
        return released

    # -- what the UE's sockets saw ----------------------------------------------------------------------

    def sample_acks(self, now: float) -> AckSample:
        """TCP_INFO of the UE's connections since the last sample, summed: acknowledged bytes, RTTs, losses."""
        interval = now - self._last_sample if self._last_sample is not None else 0.0
        self._last_sample = now
        acked = in_flight = retransmits = timeouts = 0
        min_rtt = srtt = 0.0
        mss = 1448
        for flow in self.flows:
            if flow.closed:
                continue
            try:
                info = sockets.tcp_info(flow.ue)
                queued = sockets.send_queue(flow.ue_fd)
            except OSError:
                continue
            base_acked, base_retrans, base_rto = flow.acked_base
            flow.acked_base = (info.bytes_acked, info.total_retrans, info.total_rto)
            acked += max(0, info.bytes_acked - base_acked)
            new_rto = info.total_rto - base_rto
            timeouts += new_rto > 0
            retransmits += new_rto == 0 and info.total_retrans > base_retrans
            in_flight += max(0, queued - info.notsent_bytes)
            if info.min_rtt_s > 0:
                min_rtt = info.min_rtt_s if min_rtt == 0 else min(min_rtt, info.min_rtt_s)
            srtt = max(srtt, info.rtt_s)
            mss = info.snd_mss or mss
        limited, self.window_limited = self.window_limited, False
        return AckSample(acked, interval, in_flight, min_rtt, srtt, retransmits, timeouts, limited, mss)

    def close(self) -> None:
        for handle in (self._pump_timer, self._pump_soon):
            if handle is not None:
                handle.cancel()
        self._pump_timer = self._pump_soon = None
        for flow in list(self.flows):
            flow.close()
