"""A UE's path gain as a GNU Radio block that follows a gain schedule by sample index.

Each UE has one `GainPath`, shared by the block on its downlink and the block on its uplink. A change (a new gain,
a new trace) is anchored at a sample index that neither block has reached yet, so both directions switch at the
same sample, and each block picks the change up at the start of its next work call: no sleeps, no wall clock.
"""

from __future__ import annotations

import ctypes
import math
import threading
import time
from enum import IntEnum

import numpy as np
from gnuradio import gr

from rnf_bridge.schedule import Schedule, Timeline

POWER_AVERAGE_S = 0.1  # time constant of the input power average that `status` reports


class Direction(IntEnum):
    DOWNLINK = 0
    UPLINK = 1


class GainPath:
    """One UE's gain over sample index, read by its two blocks and changed by the control socket."""

    def __init__(self, schedule: Schedule, sample_rate: float) -> None:
        self._lock = threading.Lock()
        self._timeline = Timeline.starting_with(schedule, sample_rate)
        self._reserved = [0, 0]  # per direction: the first sample its next work call will ask for

    def reserve(self, direction: Direction, start: int, count: int) -> Timeline:
        """The timeline for samples [start, start + count) of `direction`, which no later change will touch."""
        with self._lock:
            self._reserved[direction] = start + count
            return self._timeline

    def change(self, schedule: Schedule) -> int:
        """Apply `schedule` from the first sample neither direction has been given yet; returns that sample."""
        with self._lock:
            at = max(self._reserved)
            self._timeline = self._timeline.then(schedule, at, oldest=min(self._reserved))
            return at

    def gain_db_now(self) -> float:
        with self._lock:
            return self._timeline.gain_db_at(max(self._reserved))


class ScheduledGain(gr.basic_block):  # type: ignore[misc]
    """Multiplies each sample by the amplitude its index has in the UE's `GainPath`.

    It also keeps what the bridge's status and watchdog read: samples seen, the monotonic times of the first and the
    last work call, and the average input power (|x|^2, full scale 1).
    """

    def __init__(self, path: GainPath, direction: Direction, sample_rate: float, name: str) -> None:
        gr.basic_block.__init__(self, name=name, in_sig=[np.complex64], out_sig=[np.complex64])
        self._path = path
        self._direction = direction
        self._average_samples = POWER_AVERAGE_S * sample_rate
        self.samples = 0
        self.first_arrival: float | None = None
        self.last_arrival: float | None = None
        self.power = 0.0
        self._thread: int | None = None

    def forecast(self, noutput_items: int, ninputs: int) -> list[int]:
        # One input sample is enough to run: general_work then takes every sample that has arrived. (A Python
        # sync_block is not fixed-rate to the scheduler, which would halve its requests until they fit what has
        # arrived: 1024 + 512 + 256 + 128 for one 1920-sample subframe, four calls instead of one.)
        return [1] * ninputs

    def general_work(self, input_items: list[np.ndarray], output_items: list[np.ndarray]) -> int:
        if self._thread != threading.get_ident():
            # GNU Radio calls work() through pybind11 from its own thread, which creates a Python thread state for
            # each call and deletes it after: an mmap/munmap of the frame stack and page faults per call, a large
            # part of the bridge's CPU. One unreleased PyGILState_Ensure keeps this thread's state for its life.
            ctypes.pythonapi.PyGILState_Ensure()
            self._thread = threading.get_ident()
        count = min(len(input_items[0]), len(output_items[0]))
        source, sink = input_items[0][:count], output_items[0][:count]
        start = self.nitems_read(0)
        timeline = self._path.reserve(self._direction, start, count)
        for offset, length, amplitude in timeline.segments(start, count):
            np.multiply(source[offset : offset + length], np.float32(amplitude), out=sink[offset : offset + length])
        block_power = float(np.vdot(source, source).real) / count
        self.power += (1.0 - math.exp(-count / self._average_samples)) * (block_power - self.power)
        self.samples = start + count
        self.last_arrival = time.monotonic()
        if self.first_arrival is None:
            self.first_arrival = self.last_arrival
        self.consume(0, count)
        return count
