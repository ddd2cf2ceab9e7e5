"""What the RAN-feedback controllers (`smvs`, `rnf`) share: banks of per-UE rows, freshness and the fallback.

Each law is written once, in the proxy's native library (`proxy/relay/src/control.rs`), and steps a *bank*:
numpy columns with one row per UE, stepped for a whole telemetry burst in one call (an eNB publishes every
UE's period back to back), so that one UE's step costs microseconds and 1000 UEs stay far inside a period.
The columns stay Python's: the recorder reads a row's state from them. A per-UE controller is a row of a
bank plus the logic around the law:

- freshness: telemetry is stale after `stale_periods` periods without a message (5 by default);
- fallback: while telemetry is stale, or before the first message, the UE is controlled by the
  feedback-free adaptive-EWMA estimator (`ewma.py`, paper 002), which follows the UE's ACKs all along and
  takes over from its estimate times the minimum RTT. It is ACK-clocked, so it cannot flood a queue the
  proxy no longer sees; when telemetry returns, the bank's law takes the UE back.

Pure logic, as every controller: no sockets, no clock.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from functools import cache
from itertools import chain

import numpy as np

from rnf_proxy import native
from rnf_proxy.control import FREE, AckSample, ControllerState, Decision, Mode, RanSample, Sample
from rnf_proxy.ewma import Ewma

REPORT_FIELDS = 10
FORECAST_RING = 100  # as control.rs: steps of service and forecasts kept
ERROR_HORIZON = 256  # as control.rs: steps of forecast errors kept
MAX_D = 50  # as control.rs: the largest feedback delay, steps
QUOTA_HISTORY = 2 * MAX_D  # as control.rs: quotas kept
LAGS = 40  # as control.rs: the loop delay is looked for up to 40 steps
MOMENTS = 7  # as control.rs: the loop-delay estimator's means, last arrivals, variances, pause, last change
OUTPUT = np.dtype(  # `Output` in control.rs
    [("limit", np.int64), ("step", np.int64), ("step_s", np.float64), ("pacing", np.float64), ("cap", np.float64)]
)


@cache
def laws() -> ctypes.CDLL:
    """The laws' entry points, called with the interpreter lock held: each returns within microseconds."""
    library = native.load(ctypes.PyDLL)
    pointer, size = ctypes.c_void_p, ctypes.c_size_t
    for name in ("rnf_smvs_step", "rnf_rnf_step"):
        function = getattr(library, name)
        function.restype = ctypes.c_int
        function.argtypes = [pointer, pointer, size, size, pointer, size, ctypes.c_double, pointer]
    return library


class RowBank:
    """Per-UE columns, one row per UE, growing by doubling. A subclass adds its columns, in the order of its
    law's columns structure in control.rs, its native parameters and its law's entry point.

    Common columns: the smallest RTT measured (`min_rtt`), the previous queue (outage detection), the step
    count, when telemetry last arrived, whether the fallback is in force, the last step's recorded
    quantities (`w`, `q`, `b`, `s`, `outage`), the channel's rate per unit of spectral efficiency learnt while
    the queue was backlogged (`per_efficiency`, bytes/s per bit/RE) and the last CQI reported; the forecast margin's
    rings and the reserve its reference holds for what an empty queue lost; whether a period has stayed
    backlogged (`measured`: the start-up is over); and, as a list, the decision in force per row.
    """

    mode: Mode
    min_rtt: np.ndarray
    prev_queue: np.ndarray
    steps: np.ndarray
    last_report: np.ndarray
    in_fallback: np.ndarray
    w: np.ndarray
    q: np.ndarray
    b: np.ndarray
    s: np.ndarray
    outage: np.ndarray
    per_efficiency: np.ndarray
    cqi: np.ndarray
    services: np.ndarray
    forecasts: np.ndarray
    errors: np.ndarray
    error_count: np.ndarray
    margin: np.ndarray
    measured: np.ndarray
    reserve: np.ndarray

    def __init__(self, law: str, parameters: ctypes.Structure, capacity: int = 16) -> None:
        self.size = 0
        self.decisions: list[Decision] = []  # the decision in force, per row
        self._law = getattr(laws(), law)
        self._parameters = parameters
        self._allocate(capacity)

    def columns(self, capacity: int) -> dict[str, np.ndarray]:
        return {
            "min_rtt": np.zeros(capacity),
            "prev_queue": np.zeros(capacity),
            "steps": np.zeros(capacity, dtype=np.int64),
            "last_report": np.full(capacity, np.nan),
            "in_fallback": np.ones(capacity, dtype=bool),
            "w": np.full(capacity, np.nan),
            "q": np.zeros(capacity),
            "b": np.zeros(capacity),
            "s": np.full(capacity, np.nan),
            "outage": np.zeros(capacity, dtype=bool),
            "per_efficiency": np.full(capacity, np.nan),
            "cqi": np.full(capacity, np.nan),
            "services": np.zeros((capacity, FORECAST_RING)),
            "forecasts": np.full((capacity, FORECAST_RING), np.nan),
            "errors": np.zeros((capacity, ERROR_HORIZON)),
            "error_count": np.zeros(capacity, dtype=np.int64),
            "margin": np.full(capacity, np.nan),
            "measured": np.zeros(capacity, dtype=bool),
            "first_release_step": np.full(capacity, -1, dtype=np.int64),
            "first_awaited": np.full(capacity, np.nan),  # payload bytes
            "first_loop": np.zeros(capacity, dtype=np.int64),
            "reserve": np.zeros(capacity),  # bytes
        }

    def _allocate(self, capacity: int) -> None:
        fresh = self.columns(capacity)
        if self.size:
            for name, array in fresh.items():
                array[: self.size] = getattr(self, name)[: self.size]
        self.__dict__.update(fresh)
        self.capacity = capacity
        # the law reads and writes the columns in place, through these pointers (the bank keeps the arrays)
        self._pointers = (ctypes.c_void_p * len(fresh))(*(array.ctypes.data for array in fresh.values()))

    def add(self) -> int:
        """A new UE; its row number."""
        if self.size == self.capacity:
            self._allocate(2 * self.capacity)
        self.size += 1
        self.decisions.append(FREE)
        return self.size - 1

    def step(self, rows: Sequence[int], samples: Sequence[RanSample], now: float) -> list[Decision | None]:
        """One step of the law per (row, sample), in order; None where the row has no parameters yet."""
        count = len(rows)
        reports = np.fromiter(  # `Report` in control.rs: ten doubles per UE
            chain.from_iterable(
                (row, s.queue, s.served, s.period_s, s.outage, s.dropped, s.queue_limit, s.cqi, s.released, s.idle)
                for row, s in zip(rows, samples, strict=True)
            ),
            np.float64,
            REPORT_FIELDS * count,
        )
        outputs = np.empty(count, OUTPUT)
        pointers = self._pointers
        status = self._law(
            ctypes.byref(self._parameters),
            pointers,
            len(pointers),
            self.capacity,
            reports.ctypes.data,
            count,
            now,
            outputs.ctypes.data,
        )
        if status:
            raise ValueError(f"{type(self).__name__}: the native law refused the step (rows {list(rows)})")
        mode = self.mode
        return [
            None if limit < 0 else Decision(mode, limit, step, step_s, pacing, False, round(cap))
            for limit, step, step_s, pacing, cap in outputs.tolist()
        ]

    def state(self, row: int) -> ControllerState:
        """The row's last step, for the recorder."""
        raise NotImplementedError


class RanController:
    """One UE: a row of a bank, the freshness of its telemetry, and the fallback."""

    kind = ""
    wants_acks = True

    def __init__(self, bank: RowBank, ts_s: float, stale_periods: int) -> None:
        self.bank = bank
        self.row = bank.add()
        self.stale_after_s = ts_s * stale_periods
        self.fallback = Ewma()
        bank.decisions[self.row] = self.fallback.decision()

    @property
    def in_fallback(self) -> bool:
        return bool(self.bank.in_fallback[self.row])

    def update(self, sample: Sample, now: float) -> Decision:
        bank, row = self.bank, self.row
        if isinstance(sample, RanSample):
            return step_many([self], [sample], now)[0]
        if isinstance(sample, AckSample):
            if sample.min_rtt_s > 0:
                bank.min_rtt[row] = sample.min_rtt_s
            if bank.in_fallback[row]:
                self.fallback.follow(sample)
                bank.decisions[row] = self.fallback.decision()
            else:
                self.fallback.observe(sample)
        elif not bank.in_fallback[row] and not now - bank.last_report[row] <= self.stale_after_s:
            self.take_over()
        return bank.decisions[row]

    def take_over(self) -> None:
        """Telemetry is stale or unusable: the fallback controls the UE from its estimate."""
        self.bank.in_fallback[self.row] = True
        self.fallback.resume()
        self.bank.decisions[self.row] = self.fallback.decision()

    def state(self) -> ControllerState | None:
        if self.bank.in_fallback[self.row]:
            return self.fallback.state(fallback=True)
        return self.bank.state(self.row)


def step_many(controllers: Sequence[RanController], samples: Sequence[RanSample], now: float) -> list[Decision]:
    """One telemetry burst: a step for each (controller, sample), one native call per bank. Decisions in order;
    a UE reported twice is stepped twice."""
    if not controllers:
        return []
    first_bank = controllers[0].bank
    if all(controller.bank is first_bank for controller in controllers):  # the common case: one bank
        return _step_rows(first_bank, controllers, samples, now)
    by_bank: dict[RowBank, list[int]] = {}
    for index, controller in enumerate(controllers):
        by_bank.setdefault(controller.bank, []).append(index)
    decisions: list[Decision] = [FREE] * len(controllers)
    for bank, indices in by_bank.items():
        stepped = _step_rows(bank, [controllers[i] for i in indices], [samples[i] for i in indices], now)
        for index, decision in zip(indices, stepped, strict=True):
            decisions[index] = decision
    return decisions


def _step_rows(
    bank: RowBank, controllers: Sequence[RanController], samples: Sequence[RanSample], now: float
) -> list[Decision]:
    stepped = bank.step([controller.row for controller in controllers], samples, now)
    decisions: list[Decision] = []
    column = bank.decisions
    for controller, decision in zip(controllers, stepped, strict=True):
        if decision is None:  # no parameters yet (B_max neither configured nor reported): the fallback stays
            controller.take_over()
            decision = column[controller.row]
        column[controller.row] = decision
        decisions.append(decision)
    return decisions
