"""What the RAN-feedback controllers (`smvs`, `rnf`) share: vectorized banks, freshness and the fallback.

Each law is written once, as a *bank*: numpy arrays with one row per UE, stepped for a whole telemetry burst
at once (an eNB publishes every UE's period back to back), so 1000 UEs cost one vectorized step rather than
1000 interpreted ones. A per-UE controller is a row of a bank plus the logic around the law:

- freshness: telemetry is stale after `stale_periods` periods without a message (5 by default);
- fallback: while telemetry is stale, or before the first message, the UE is controlled by the
  feedback-free adaptive-EWMA estimator (`ewma.py`, paper 002), which follows the UE's ACKs all along and
  takes over from its estimate times the minimum RTT. It is ACK-clocked, so it cannot flood a queue the
  proxy no longer sees; when telemetry returns, the bank's law takes the UE back.

Pure logic, as every controller: no sockets, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rnf_proxy.control import FREE, AckSample, ControllerState, Decision, RanSample, Sample
from rnf_proxy.ewma import Ewma


@dataclass(frozen=True)
class RanBatch:
    """The telemetry of several UEs for one step, as arrays (bytes, seconds)."""

    queue: np.ndarray
    served: np.ndarray
    period: np.ndarray
    flagged: np.ndarray  # the eNB reported an outage
    queue_limit: np.ndarray

    @classmethod
    def of(cls, samples: Sequence[RanSample]) -> RanBatch:
        n = len(samples)
        return cls(
            np.fromiter((s.queue for s in samples), float, n),
            np.fromiter((s.served for s in samples), float, n),
            np.fromiter((s.period_s for s in samples), float, n),
            np.fromiter((s.outage for s in samples), bool, n),
            np.fromiter((s.queue_limit for s in samples), float, n),
        )

    def link_down(self, previous_queue: np.ndarray) -> np.ndarray:
        """Outage: flagged, or nothing served for a whole period while data was already waiting."""
        return self.flagged | ((self.served == 0) & (self.queue > 0) & (previous_queue > 0))

    def rate(self) -> np.ndarray:
        """b(k), bytes/s."""
        return np.where(self.period > 0, self.served / np.where(self.period > 0, self.period, 1.0), 0.0)


class RowBank:
    """Per-UE arrays, one row per UE, growing by doubling. Subclasses add their columns and the law (`step`).

    Common columns: the smallest RTT measured (`min_rtt`), the previous queue (outage detection), the step
    count, when telemetry last arrived, whether the fallback is in force, and the last step's recorded
    quantities (`w`, `q`, `b`, `s`, `outage`); and, as a list, the decision in force per row.
    """

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

    def __init__(self, capacity: int = 16) -> None:
        self.size = 0
        self.decisions: list[Decision] = []  # the decision in force, per row
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
        }

    def _allocate(self, capacity: int) -> None:
        fresh = self.columns(capacity)
        if self.size:
            for name, array in fresh.items():
                array[: self.size] = getattr(self, name)[: self.size]
        self.__dict__.update(fresh)

    def add(self) -> int:
        """A new UE; its row number."""
        if self.size == len(self.steps):
            self._allocate(2 * len(self.steps))
        self.size += 1
        self.decisions.append(FREE)
        return self.size - 1

    def restart(self, row: int) -> None:
        """The row comes back from the fallback (nothing to do unless a law keeps history)."""

    def step(self, rows: np.ndarray, batch: RanBatch, now: float) -> list[Decision | None]:
        """One step of the law for distinct rows; a decision per row, None where it has no parameters yet."""
        raise NotImplementedError

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
    """One telemetry burst: a step for each (controller, sample), vectorized per bank. Decisions in order."""
    if controllers:
        first_bank, all_rows = controllers[0].bank, [controller.row for controller in controllers]
        if len(set(all_rows)) == len(all_rows) and all(controller.bank is first_bank for controller in controllers):
            return _step_rows(first_bank, list(controllers), list(samples), now)  # the common case: one bank
    decisions: list[Decision] = [FREE] * len(controllers)
    pending = list(range(len(controllers)))
    while pending:
        # a vectorized step takes one bank and each row at most once; the rest waits for the next round
        bank = controllers[pending[0]].bank
        rows: set[int] = set()
        batch: list[int] = []
        later: list[int] = []
        for i in pending:
            controller = controllers[i]
            if controller.bank is bank and controller.row not in rows:
                rows.add(controller.row)
                batch.append(i)
            else:
                later.append(i)
        stepped = _step_rows(bank, [controllers[i] for i in batch], [samples[i] for i in batch], now)
        for i, decision in zip(batch, stepped, strict=True):
            decisions[i] = decision
        pending = later
    return decisions


def _step_rows(bank: RowBank, controllers: list[RanController], samples: list[RanSample], now: float) -> list[Decision]:
    rows = np.array([controller.row for controller in controllers])
    bank.last_report[rows] = now
    for row in rows[bank.in_fallback[rows]].tolist():
        bank.restart(row)
    bank.in_fallback[rows] = False
    decisions = bank.step(rows, RanBatch.of(samples), now)
    if any(
        decision is None for decision in decisions
    ):  # no parameters yet (B_max neither configured nor reported): the fallback stays
        for i, decision in enumerate(decisions):
            if decision is None:
                controllers[i].take_over()
                decisions[i] = bank.decisions[controllers[i].row]
    column = bank.decisions
    for row, decision in zip(rows.tolist(), decisions, strict=True):
        column[row] = decision  # type: ignore[assignment]
    return decisions  # type: ignore[return-value]
