"""Per-stream sequence rules of SPEC.md and error accounting, as pure logic with no I/O and no clock."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum

from rnf_telemetry.message import DecodeError, TelemetryMessage
from rnf_telemetry.topic import StreamKey

_HALF = 1 << 31
_MOD = 1 << 32


class Verdict(Enum):
    FIRST = "first"
    IN_ORDER = "in_order"
    RESTART = "restart"
    DUPLICATE = "duplicate"
    OUT_OF_ORDER = "out_of_order"

    @property
    def accepted(self) -> bool:
        return self in (Verdict.FIRST, Verdict.IN_ORDER, Verdict.RESTART)


@dataclass(frozen=True)
class Classified:
    verdict: Verdict
    lost: int = 0


def classify(last: tuple[int, int] | None, seq: int, timestamp_ns: int) -> Classified:
    """SPEC.md's table: what a message is, given the stream's last accepted (seq, timestamp_ns)."""
    if last is None:
        return Classified(Verdict.FIRST)
    last_seq, last_timestamp_ns = last
    if seq == last_seq:
        return Classified(Verdict.DUPLICATE)
    step = (seq - last_seq) % _MOD
    if 0 < step < _HALF:
        return Classified(Verdict.IN_ORDER, lost=step - 1)
    if seq == 0 or timestamp_ns > last_timestamp_ns:
        # A publisher that restarted numbers from 0 again; its first messages may have been lost.
        return Classified(Verdict.RESTART)
    return Classified(Verdict.OUT_OF_ORDER)


@dataclass
class StreamTracker:
    """Accepts or rejects decoded messages stream by stream, and counts what it rejected and lost."""

    last: dict[StreamKey, tuple[int, int]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    lost: int = 0
    restarts: int = 0
    accepted: int = 0

    def offer(self, message: TelemetryMessage) -> Classified:
        result = classify(self.last.get(message.key), message.seq, message.timestamp_ns)
        if result.verdict.accepted:
            self.last[message.key] = (message.seq, message.timestamp_ns)
            self.accepted += 1
            self.lost += result.lost
            self.restarts += result.verdict is Verdict.RESTART
        else:
            self.errors[result.verdict.value] += 1
        return result

    def count_error(self, error: DecodeError) -> None:
        self.errors[error.kind] += 1


@dataclass
class RateLimitedLog:
    """Decides which error lines to print: at most one per kind per `interval_s`, with the suppressed count."""

    interval_s: float = 5.0
    _last_emitted: dict[str, float] = field(default_factory=dict)
    _suppressed: Counter[str] = field(default_factory=Counter)

    def line(self, kind: str, detail: str, now: float) -> str | None:
        """The line to log now for this error, or None to stay quiet."""
        last = self._last_emitted.get(kind)
        if last is not None and now - last < self.interval_s:
            self._suppressed[kind] += 1
            return None
        self._last_emitted[kind] = now
        suppressed = self._suppressed.pop(kind, 0)
        suffix = f" ({suppressed} more since the last report)" if suppressed else ""
        return f"bad telemetry message, {kind}: {detail}{suffix}"
