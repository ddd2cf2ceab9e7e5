"""What every window controller consumes and produces: samples in, decisions out, as frozen data.

A controller is pure logic: `update(sample, now) -> Decision`, with `now` in seconds of any monotonic clock.
It never touches a socket or reads a clock; the proxy's asyncio layer (`aggregate.py`) feeds it samples and
carries its decisions out on the wire (`enforce.py`).

Units: bytes, seconds, bytes per second. A decision is one of three modes:

- `FREE`: no limit from the controller; the kernel's own congestion control sends (I-TCP).
- `WINDOW`: `limit` bounds the bytes in flight (sent, not yet acknowledged) over all of a UE's connections
  (paper 001's congestion window, paper 004's clamped aggregate window).
- `QUOTA`: `limit` is what may leave toward the UE during one step of `step_s` seconds, and `step` numbers the
  step (paper 000's w(k): a per-step quota, not a window).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple, Protocol

from rnf_telemetry.message import TelemetryMessage


class Mode(Enum):
    FREE = "free"
    WINDOW = "window"
    QUOTA = "quota"


@dataclass(frozen=True)
class ControllerState:
    """One step of a controller, for the recorder: the quantities of the papers, None when not defined."""

    w: float | None = None  # bytes: window (in flight) or quota (per step)
    q: float | None = None  # bytes: the UE's RLC downlink queue
    q0: float | None = None  # bytes: reference queue (q0 in paper 000, q_ref in paper 001)
    reserve: float | None = None  # bytes of q0 held for what an empty queue cost the link (default reference)
    b: float | None = None  # bytes/s: served rate of the step
    b_bar: float | None = None  # bytes/s: its moving average (paper 000 eq. 19)
    s: float | None = None  # bytes: predicted sliding variable S(k) (paper 000 eq. 36)
    band: float | None = None  # bytes: predicted quasi-sliding band eps*Ts/(1-delta*Ts) (paper 000 eq. 37)
    in_band: bool | None = None  # |q - q0| < band
    in_flight_steps: int | None = None  # steps of quotas counted on their way to the queue (n in paper 000 eq. 34)
    outage: bool = False
    fallback: bool = False  # telemetry stale or missing: the documented fallback is in force

    def fields(self) -> dict[str, float | int]:
        """The `controller` measurement's fields (grafana/SCHEMA.md): bytes, bit/s, and 0/1 flags."""
        values: dict[str, float | int] = {"outage": int(self.outage), "stale": int(self.fallback)}
        if self.in_band is not None:  # only SMVS has a band, and only once q0 is known
            values["in_band"] = int(self.in_band)
        if self.in_flight_steps is not None:
            values["in_flight_steps"] = self.in_flight_steps
        for key, name in (("w", "w_bytes"), ("q", "q_bytes"), ("q0", "q0_bytes"), ("reserve", "reserve_bytes")):
            value = getattr(self, key)
            if value is not None:
                values[name] = round(value)
        for key, name, scale in (
            ("band", "band_bytes", 1.0),
            ("s", "s_bytes", 1.0),
            ("b", "b_bps", 8.0),
            ("b_bar", "b_bar_bps", 8.0),
        ):
            value = getattr(self, key)
            if value is not None:
                values[name] = float(value) * scale
        return values


class Decision(NamedTuple):
    """What the proxy releases toward one UE until the next decision.

    Immutable like the samples, but a named tuple rather than a dataclass: a burst of 1000 UEs makes 1000 of
    them per step, and a tuple is built three times faster (`bench.py`, controller step).
    """

    mode: Mode
    limit: int = 0  # bytes: the window (WINDOW) or the quota of the step (QUOTA)
    step: int = 0  # the controller's step count; in QUOTA mode a new number starts a new step
    step_s: float = 0.0  # QUOTA: length of the step, Ts
    pacing_rate: float = 0.0  # bytes/s cap on sending toward the UE; 0 for none
    hold_wired: bool = False  # stop reading from the servers: their receive windows close (link stall)
    cap: int = 0  # QUOTA: bytes the UE's sockets may hold, unacknowledged and unsent together; 0 for none


FREE = Decision(Mode.FREE)


MAX_SDU_BYTES = 1500  # the largest PDCP SDU: an IP packet of the tunnel's 1500-byte MTU


@dataclass(frozen=True, slots=True)
class RanSample:
    """One telemetry period of a UE (telemetry/SPEC.md): what the eNB reports."""

    queue: int  # q(k): RLC downlink queue at the end of the period, bytes (new + retransmission)
    served: int  # b(k)*Ts: bytes scheduled for the UE during the period
    period_s: float
    outage: bool = False
    queue_limit: int = 0  # B_max in bytes when the eNB reports one (see from_message), else 0
    dropped: int = 0  # bytes dropped at the tail of the queue during the period
    cqi: float = math.nan  # the period's mean wideband CQI, NaN when none was reported
    # not the eNB's: payload bytes the proxy released toward the UE since the UE's last report, NaN when unknown
    released: float = math.nan
    # bytes the UE's channel offered in the TTIs its queue held nothing (contract 1.3), NaN where not counted
    idle: float = math.nan

    @property
    def rate(self) -> float:
        """b(k), bytes/s."""
        return self.served / self.period_s if self.period_s > 0 else 0.0

    @classmethod
    def from_message(cls, message: TelemetryMessage, released: float = math.nan) -> RanSample:
        """The report of one message, with what the proxy released since the UE's last one. B_max is the byte
        limit when the eNB has one; an eNB that limits its queue in SDUs only (srsenb: 256 SDUs, no byte limit)
        holds at most that many packets of MAX_SDU_BYTES, the queue a bulk download fills before the first drop."""
        limit = message.dl_queue_limit_bytes or message.dl_queue_limit_sdus * MAX_SDU_BYTES
        return cls(
            queue=message.queue_bytes,
            served=message.sched_bytes,
            period_s=message.period_s,
            outage=message.outage,
            queue_limit=limit,
            dropped=message.dl_dropped_bytes,
            cqi=message.mean_cqi,
            released=released,
            idle=float(message.dl_idle_capacity_bytes) if message.idle_counted else math.nan,
        )


@dataclass(frozen=True)
class AckSample:
    """What the proxy's own sockets toward one UE saw since the last sample (TCP_INFO, summed over connections)."""

    acked: int  # bytes newly acknowledged
    interval_s: float  # time covered by this sample
    in_flight: int  # bytes sent and not acknowledged, now
    min_rtt_s: float  # smallest RTT seen, 0 when unknown
    srtt_s: float  # smoothed RTT, 0 when unknown
    retransmits: int = 0  # loss events recovered by fast retransmit since the last sample
    timeouts: int = 0  # retransmission timeouts since the last sample
    window_limited: bool = False  # the controller's window, not the data, held sending back
    mss: int = 1448


@dataclass(frozen=True)
class Tick:
    """Time passed with nothing new: lets a controller notice that its telemetry went stale."""


Sample = RanSample | AckSample | Tick


class Controller(Protocol):
    """A per-UE window controller. `state()` is the last step's state, for the recorder."""

    kind: str
    wants_acks: bool  # the proxy polls TCP_INFO for AckSamples only for controllers that use them

    def update(self, sample: Sample, now: float) -> Decision: ...

    def state(self) -> ControllerState | None: ...
