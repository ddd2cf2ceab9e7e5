"""Path-gain schedules: a gain in dB over time, and which gain each sample gets.

A `Schedule` is what configurations and the control socket carry: breakpoints in seconds, the gain in dB from
each breakpoint on, and whether it loops. A `Timeline` is what the flowgraph applies: schedules anchored at
absolute sample indices, asked for the constant-gain runs that cover a block of samples. Time is the sample
index of the stream (sample 0 is the first sample srsenb sent), so downlink and uplink, whose indices line up
sample for sample, change gain at the same sample. Pure: no clock, no threads.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass


class ScheduleError(ValueError):
    """A schedule that cannot be applied; the message says which row and why."""


def db_to_amplitude(gain_db: float) -> float:
    """Amplitude factor of a power gain in dB; -inf dB is silence (0)."""
    return 0.0 if gain_db == -math.inf else 10.0 ** (gain_db / 20.0)


@dataclass(frozen=True)
class Schedule:
    """Piecewise-constant gain: `gains_db[i]` from `times_s[i]` on.

    Without `loop`, the last gain holds for ever. With `loop`, the schedule restarts at its last breakpoint,
    whose gain is then never used (the last row is the length of the loop, as in the virtual cell's traces).
    """

    times_s: tuple[float, ...]
    gains_db: tuple[float, ...]
    loop: bool = False

    def __post_init__(self) -> None:
        if not self.times_s or len(self.times_s) != len(self.gains_db):
            raise ScheduleError(f"need one gain per time, got {len(self.times_s)} times and {len(self.gains_db)} gains")
        if self.times_s[0] != 0.0:
            raise ScheduleError(f"the first time must be 0, got {self.times_s[0]}")
        for row, (before, after) in enumerate(itertools.pairwise(self.times_s), start=1):
            if not math.isfinite(after) or after <= before:
                raise ScheduleError(f"row {row}: time {after} s does not follow {before} s")
        for row, gain in enumerate(self.gains_db):
            if math.isnan(gain) or gain == math.inf:
                raise ScheduleError(f"row {row}: gain {gain} dB is not a gain (use -inf for silence)")
        if self.loop and len(self.times_s) < 2:
            raise ScheduleError("a looping schedule needs two rows at least: the last row's time is the loop length")

    @classmethod
    def constant(cls, gain_db: float) -> Schedule:
        return cls((0.0,), (gain_db,))


@dataclass(frozen=True)
class _Anchored:
    """A schedule in samples, starting at absolute sample `start`."""

    start: int
    edges: tuple[int, ...]  # breakpoints in samples from `start`; edges[0] == 0
    gains_db: tuple[float, ...]
    amplitudes: tuple[float, ...]
    period: int | None  # loop length in samples, None if the last gain holds

    @classmethod
    def of(cls, schedule: Schedule, sample_rate: float, start: int) -> _Anchored:
        edges = tuple(round(t * sample_rate) for t in schedule.times_s)
        for row, (before, after) in enumerate(itertools.pairwise(edges), start=1):
            if after <= before:
                raise ScheduleError(
                    f"row {row}: {schedule.times_s[row]} s is less than one sample after the row before "
                    f"at {sample_rate:g} samples/s"
                )
        if schedule.loop:
            return cls(start, edges[:-1], schedule.gains_db[:-1], _amplitudes(schedule.gains_db[:-1]), edges[-1])
        return cls(start, edges, schedule.gains_db, _amplitudes(schedule.gains_db), None)

    def run_at(self, sample: int) -> tuple[int, float, float]:
        """(samples until the gain next changes, amplitude, gain in dB) at absolute `sample` >= `start`."""
        offset = sample - self.start
        if self.period is not None:
            offset %= self.period
        index = bisect.bisect_right(self.edges, offset) - 1
        if index + 1 < len(self.edges):
            remaining = self.edges[index + 1] - offset
        elif self.period is not None:
            remaining = self.period - offset
        else:
            remaining = -1  # for ever
        return remaining, self.amplitudes[index], self.gains_db[index]


def _amplitudes(gains_db: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(db_to_amplitude(g) for g in gains_db)


@dataclass(frozen=True)
class Timeline:
    """Schedules anchored at sample indices; each one holds from its start until the next one's start."""

    sample_rate: float
    entries: tuple[_Anchored, ...]

    @classmethod
    def starting_with(cls, schedule: Schedule, sample_rate: float) -> Timeline:
        return cls(sample_rate, (_Anchored.of(schedule, sample_rate, 0),))

    def then(self, schedule: Schedule, at: int, oldest: int) -> Timeline:
        """This timeline with `schedule` from sample `at` on (its time 0 is `at`).

        `oldest` is the earliest sample any reader will still ask for; entries that end before it are dropped,
        so the timeline stays short however often the gain changes.
        """
        if not 0 <= oldest <= at:
            raise ValueError(f"need 0 <= oldest ({oldest}) <= at ({at})")
        kept = [
            entry
            for entry, following in zip(self.entries, (*self.entries[1:], None), strict=True)
            if entry.start < at and (following is None or following.start > oldest)
        ]
        return Timeline(self.sample_rate, (*kept, _Anchored.of(schedule, self.sample_rate, at)))

    def _entry(self, sample: int) -> tuple[_Anchored, int | None]:
        """The entry in force at `sample` and the start of the next entry (None if it is the last)."""
        starts = [entry.start for entry in self.entries]
        index = bisect.bisect_right(starts, sample) - 1
        if index < 0:
            raise ValueError(f"sample {sample} is before this timeline's first entry at {starts[0]}")
        following = starts[index + 1] if index + 1 < len(starts) else None
        return self.entries[index], following

    def segments(self, start: int, count: int) -> Iterator[tuple[int, int, float]]:
        """Constant-gain runs covering samples [start, start + count): (offset in the block, length, amplitude)."""
        position = start
        end = start + count
        while position < end:
            entry, following = self._entry(position)
            remaining, amplitude, _ = entry.run_at(position)
            stop = end if remaining < 0 else min(end, position + remaining)
            if following is not None:
                stop = min(stop, following)
            yield position - start, stop - position, amplitude
            position = stop

    def gain_db_at(self, sample: int) -> float:
        entry, _ = self._entry(sample)
        return entry.run_at(sample)[2]
