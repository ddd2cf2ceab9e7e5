"""What an ideal fixed-target sender reaches on a capacity trace: the reference curve of docs/benchmarks.md.

A controller that holds a queue at the eNB trades delay for utilization: the queue is what serves the link while
the controller's answer to a change of the rate is on its way, and every byte in it waits. How much queue a
trace needs is a property of the trace and of the loop more than of a law. This module computes it for a law
with every advantage but one, a fixed target: a fluid sender that

- learns the queue and the capacity the cell offered, exactly, at the end of every report period (the eNB's
  telemetry), with no delay beyond the period;
- counts its own bytes on their way to the queue exactly;
- forecasts the capacity as the mean of the last `window_ms` it has been told of;
- and every millisecond sends what brings the forecast queue, at the end of the millisecond its bytes arrive
  in, to the target (dead-beat: no gain, no band, no packet, no header, no loss);
- its bytes reach the queue `forward_ms` after it sends them (the backhaul).

Sweeping the target and the forecast's window (one report period: a rate that steps is followed at the next
report; 100 ms and 1 s: a bursty or a mean-reverting rate is not chased) and keeping the points no other point
beats in both traces the utilization each p95 one-way delay buys (delay = the backhaul plus the FIFO sojourn,
as the virtual cell's packet log measures it, from the SGi side to the UE).

It is a reference, not a bound: the controllers decide once per report and learn the rate later (the served
rate is the link's only where the queue stayed backlogged), which costs them delay, but their forecast margin
moves with the errors of the last seconds, which a fixed target cannot, and on a trace whose variability
changes over time that gains more (on the last latency suite `smvs` lay 10-20 % below this curve on the Markov
channel and a recorded ATT drive, 10-20 ms above it on the others). Where a goal asks for several times less
delay than this curve needs, the trace, not the law, is what stands in the way.

Utilization counts from the first millisecond the sender's bytes can reach the queue (`forward_ms`), as a run's
counts from its first byte.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

PACKET_BYTES = 1500  # the delay is sampled once per packet's worth of bytes
MIN_TARGET_BYTES = 3000.0  # two full-size packets, the controllers' smallest reference


@dataclass(frozen=True)
class Loop:
    """The loop of the ideal sender, in 1 ms TTIs."""

    forward_ms: int  # from the sender to the queue (the backhaul)
    report_period_ms: int  # the queue and the capacity are known at the end of each period
    window_ms: int  # the capacity forecast: the mean over the last window_ms reported

    def __post_init__(self) -> None:
        if self.forward_ms < 0 or self.report_period_ms < 1 or self.window_ms < 1:
            raise ValueError(f"{self}: forward_ms must be >= 0, report_period_ms and window_ms >= 1")


@dataclass(frozen=True)
class FrontierPoint:
    target_bytes: float
    window_ms: int
    utilization: float
    delay_p95_ms: float
    queue_p50_bytes: float


def fifo_delays_ms(arrived: npt.ArrayLike, served: npt.ArrayLike, spacing_bytes: float = PACKET_BYTES) -> np.ndarray:
    """Per byte position (one every `spacing_bytes`, at the middle of each), the ms from the TTI in which it
    entered the queue to the TTI in which it left: arrivals and service per TTI, first in first out."""
    entered, left = np.cumsum(np.asarray(arrived, dtype=np.float64)), np.cumsum(np.asarray(served, dtype=np.float64))
    if left.size == 0 or left[-1] <= 0:
        return np.zeros(0)
    positions = np.arange(spacing_bytes / 2, left[-1], spacing_bytes)
    return (np.searchsorted(left, positions) - np.searchsorted(entered, positions)).astype(np.float64)


def ideal_sender(capacity: npt.ArrayLike, target_bytes: float, loop: Loop) -> FrontierPoint:
    """Runs the ideal sender over `capacity` (bytes per 1 ms TTI) with a queue target of `target_bytes`."""
    cap = np.asarray(capacity, dtype=np.float64)
    ttis = cap.size
    if ttis <= loop.forward_ms:
        raise ValueError(f"a trace of {ttis} ms is not longer than the forward delay ({loop.forward_ms} ms)")
    seen = np.concatenate([[0.0], np.cumsum(cap)])  # seen[t]: capacity of TTIs 0 .. t-1
    arrivals = np.zeros(ttis + loop.forward_ms + 1)
    queue_end = np.zeros(ttis)  # the queue at the end of each TTI
    served = np.zeros(ttis)
    queue, forecast, rate = 0.0, 0.0, 0.0
    forward, period, window = loop.forward_ms, loop.report_period_ms, loop.window_ms
    for t in range(ttis):
        if t % period == 0:
            # a report: the queue at the end of TTI t-1 and the capacity until then; the forecast queue at the
            # end of TTI t+forward-1, served at the forecast rate, with the arrivals already sent (Lindley)
            start = max(0, t - window)
            rate = (seen[t] - seen[start]) / (t - start) if t > start else 0.0
            forecast = queue_end[t - 1] if t > 0 else 0.0
            for tti in range(t, t + forward):
                forecast = max(0.0, forecast + arrivals[tti] - rate)
        release = max(0.0, target_bytes + rate - forecast)  # the queue at the end of TTI t+forward: the target
        arrivals[t + forward] += release
        forecast = max(0.0, forecast + arrivals[t + forward] - rate)
        queue += arrivals[t]
        served[t] = min(queue, cap[t])
        queue -= served[t]
        queue_end[t] = queue
    counted = slice(forward, ttis)
    offered = cap[counted].sum()
    delays = fifo_delays_ms(arrivals[:ttis], served) + forward
    return FrontierPoint(
        target_bytes,
        window,
        float(served[counted].sum() / offered) if offered > 0 else math.nan,
        float(np.percentile(delays, 95)) if delays.size else math.nan,
        float(np.median(queue_end[counted])),
    )


def frontier(capacity: npt.ArrayLike, targets_bytes: Sequence[float], loops: Sequence[Loop]) -> list[FrontierPoint]:
    """The points of every target and loop that no other point beats in both utilization and p95 delay, by
    delay."""
    points = [ideal_sender(capacity, target, loop) for loop in loops for target in targets_bytes]
    envelope = [
        p
        for p in points
        if not any(
            o.utilization >= p.utilization
            and o.delay_p95_ms <= p.delay_p95_ms
            and (o.utilization > p.utilization or o.delay_p95_ms < p.delay_p95_ms)
            for o in points
        )
    ]
    return sorted(envelope, key=lambda p: (p.delay_p95_ms, p.utilization))


def delay_at(points: Sequence[FrontierPoint], utilization: float) -> float:
    """The smallest p95 delay of the points that reach `utilization`; NaN if none does."""
    reaching = [p.delay_p95_ms for p in points if p.utilization >= utilization]
    return min(reaching) if reaching else math.nan
