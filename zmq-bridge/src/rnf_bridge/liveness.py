"""Whether the radios around the bridge are there: waiting for them, running, or stalled because one went away.

srsRAN's ZeroMQ radios run in lock-step through the bridge: srsenb sends a block of samples only after it has
received one, and so does every srsue. When one of them goes away the whole loop stops within milliseconds, and
the stream that stopped first points at the peer that left. Pure: stream counters and `now` in, a verdict out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Stream:
    """Samples that arrived from one peer, and when (monotonic seconds) the last of them arrived."""

    peer: str
    samples: int
    last_arrival: float | None


@dataclass(frozen=True)
class Waiting:
    """Some peer has not sent a sample yet."""

    missing: tuple[str, ...]


@dataclass(frozen=True)
class Running:
    pass


@dataclass(frozen=True)
class Stalled:
    """Every peer has sent samples, but none for `idle_s`; `first` stopped first."""

    first: str
    idle_s: float


Verdict = Waiting | Running | Stalled


def assess(streams: Sequence[Stream], now: float, timeout_s: float) -> Verdict:
    missing = tuple(stream.peer for stream in streams if stream.samples == 0 or stream.last_arrival is None)
    if missing:
        return Waiting(missing)
    arrivals = [(stream.last_arrival, stream.peer) for stream in streams if stream.last_arrival is not None]
    idle_s = now - max(arrivals)[0]
    if idle_s < timeout_s:
        return Running()
    return Stalled(first=min(arrivals)[1], idle_s=idle_s)
