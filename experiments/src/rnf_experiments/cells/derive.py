"""The `cell` series of a srsRAN cell, derived from its telemetry: the eNB has no capacity trace to report.

A virtual cell records its datapath's own counters as the `cell` measurement, with `capacity_bytes` from the trace.
A real eNB has no such ground truth, so for the srsRAN cell kinds the runner derives the same fields from each
telemetry message of the UE's data bearer (telemetry/SPEC.md), and the analysis reads them unchanged:

- `delivered_bytes`: `dl_sched_new_bytes`, the transport-block bytes of new transmissions (HARQ retransmissions
  carry nothing new);
- `capacity_bytes`: what the scheduler could have given the UE in the period had data waited all of it, in the TTIs
  the eNB ran (the difference of the `tti` counts of consecutive messages, by `seq`, else the period's length):
  - where data did wait all of it (queued at the period's start and end, a grant in every TTI): what the scheduler
    gave, new and retransmitted bytes alike. It gave all it could: nothing is left to estimate.
  - otherwise, the TTIs times the bytes per granted TTI the UE got at the period's MCS (its mean, rounded) the last
    time data waited through a whole period at that MCS: link adaptation sets the MCS from the UE's CQI, queue or
    not, and at a given MCS a full allocation's size is fixed (its PRBs);
  - at an MCS not yet seen in such a period, or without one: the largest bytes per granted TTI the UE got in the
    last `WINDOW_NS` (all of them, full allocations or not).
  A period before the UE's first grant has no estimate, and capacity 0.

The TTIs are the eNB's own count, not the period's wall-clock length: srsRAN on the ZeroMQ radio runs slower than
real time when the machine cannot keep up (9.4 TTIs per 10 ms period on 2 cores at 25 PRB), and a TTI that never ran
is no capacity any sender could have used (counted by wall-clock time, every arm's utilization had a 94 % ceiling).
And the estimate follows the MCS: through the bridge, whose gain steps every 2 s move it by up to 10 steps, the
last second's peak alone held the rate of a better channel for up to a second after each fall, and a sender that
kept the queue full all along measured 86 % (the scheduled bytes of its backlogged periods were 88 % of it).

So utilization (delivered over capacity while data waited) counts TTIs without a grant and HARQ retransmissions as
unused. It is the UE's own ceiling: with several UEs sharing the cell, each one's ceiling is the rate it had when
scheduled, not a share of the cell.

The point carries the period's `ttis`, the eNB's own count. From an eNB that reports resource blocks (contract 1.2:
`cell_dl_prbs` is not 0) it also carries the cell's
share, which needs no estimate: `grant_prbs`, the PRBs of the UE's grants summed over the period's TTIs, and
`capacity_prbs`, the cell's PRBs times the TTIs the eNB ran. Summed over the UEs, grant over capacity is the share of
the cell's resource blocks that carried their data (`analysis.cell_utilization`).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from rnf_telemetry.message import TelemetryMessage

WINDOW_NS = 1_000_000_000
TTI_US = 1000


def ttis_between(last_seq: int, last_tti: int, seq: int, tti: int) -> int | None:
    """The TTIs the eNB ran between two messages of a UE, by their `tti` counts, if they are consecutive (by `seq`);
    None when a message between them was lost or the count went back."""
    return tti - last_tti if seq == last_seq + 1 and tti > last_tti else None


@dataclass
class CapacityEstimate:
    """One UE's capacity per period, as the module says."""

    window_ns: int = WINDOW_NS
    _peaks: deque[tuple[int, float]] = field(default_factory=deque)  # (time_ns, bytes per granted TTI), decreasing
    _per_mcs: dict[int, float] = field(default_factory=dict)  # bytes per TTI of a backlogged period, by MCS
    _last: tuple[int, int, int] | None = None  # (seq, tti, queue bytes) of the last message
    period_ttis: float = 0.0  # the TTIs of the period `update` last took in

    def update(self, message: TelemetryMessage) -> int:
        """The period's `capacity_bytes` after taking in its message."""
        now = message.timestamp_ns
        queue = message.dl_queue_new_bytes + message.dl_queue_retx_bytes
        last = self._last
        counted = ttis_between(last[0], last[1], message.seq, message.tti) if last is not None else None
        ttis = counted if counted is not None else message.period_us / TTI_US
        self.period_ttis = ttis
        self._last = (message.seq, message.tti, queue)
        scheduled = message.dl_sched_new_bytes + message.dl_sched_retx_bytes
        if message.dl_grant_ttis:
            per_tti = scheduled / message.dl_grant_ttis
            while self._peaks and self._peaks[-1][1] <= per_tti:
                self._peaks.pop()
            self._peaks.append((now, per_tti))
        while len(self._peaks) > 1 and self._peaks[0][0] <= now - self.window_ns:
            self._peaks.popleft()
        mcs = None if math.isnan(message.mean_mcs) else round(message.mean_mcs)
        waited = last is not None and last[2] > 0 and queue > 0 and message.dl_grant_ttis >= ttis
        if waited:
            if mcs is not None:
                self._per_mcs[mcs] = scheduled / message.dl_grant_ttis
            return scheduled
        if mcs in self._per_mcs:
            return round(self._per_mcs[mcs] * ttis)
        if not self._peaks:
            return 0
        return round(self._peaks[0][1] * ttis)


def cell_fields(message: TelemetryMessage, capacity_bytes: int, ttis: float) -> dict[str, int]:
    """The `cell` measurement's fields for one telemetry message of a period of `ttis` TTIs (grafana/SCHEMA.md)."""
    resource_blocks = (
        {"grant_prbs": message.dl_grant_prbs, "capacity_prbs": round(message.cell_dl_prbs * ttis)}
        if message.cell_dl_prbs
        else {}
    )
    return resource_blocks | {
        "ttis": round(ttis),
        "queue_new_bytes": message.dl_queue_new_bytes,
        "queue_retx_bytes": message.dl_queue_retx_bytes,
        "queue_sdus": message.dl_queue_sdus,
        "sched_new_bytes": message.dl_sched_new_bytes,
        "sched_retx_bytes": message.dl_sched_retx_bytes,
        "grant_ttis": message.dl_grant_ttis,
        "capacity_bytes": capacity_bytes,
        "delivered_bytes": message.dl_sched_new_bytes,
        "dropped_sdus": message.dl_dropped_sdus,
        "dropped_bytes": message.dl_dropped_bytes,
    }
