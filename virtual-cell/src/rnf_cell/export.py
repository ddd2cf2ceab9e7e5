"""From datapath reports to telemetry messages, and the optional impairments of the telemetry channel.

Pure logic: what the cell publishes is computed from what the datapath did, so the published queue, scheduled
bytes and queue-discipline counters (contract 1.1) are the datapath's own numbers. CQI and MCS are indicative: the
virtual cell has no radio, so they are derived from the capacity the UE was offered per granted TTI (see
virtual-cell/README.md).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass, field, replace

import numpy as np
from rnf_telemetry.message import TelemetryMessage

from rnf_cell.config import CellConfig, ImpairmentConfig
from rnf_cell.datapath import TTI_US, UeReport

# 3GPP TS 36.213 Table 7.2.3-1: CQI 1..15 efficiency, bits per resource element.
CQI_EFFICIENCY = (
    0.1523,
    0.2344,
    0.3770,
    0.6016,
    0.8770,
    1.1758,
    1.4766,
    1.9141,
    2.4063,
    2.7305,
    3.3223,
    3.9023,
    4.5234,
    5.1152,
    5.5547,
)
# Approximate bits per resource element of MCS 0..28 (TS 36.213 Table 7.1.7.1-1 TBS over the data REs).
MCS_EFFICIENCY = (
    0.15,
    0.19,
    0.23,
    0.31,
    0.38,
    0.49,
    0.60,
    0.74,
    0.88,
    1.03,
    1.03,
    1.18,
    1.33,
    1.48,
    1.70,
    1.91,
    2.16,
    2.16,
    2.41,
    2.57,
    2.73,
    3.03,
    3.32,
    3.61,
    3.90,
    4.21,
    4.52,
    4.82,
    5.12,
)
DATA_RE_PER_PRB = 120  # of 168 per PRB pair, after control region and reference signals


def efficiency(bytes_per_tti: float, prb: int) -> float:
    return bytes_per_tti * 8.0 / (prb * DATA_RE_PER_PRB)


def cqi_for(bytes_per_tti: float, prb: int) -> float:
    """The highest CQI whose efficiency the offered capacity reaches; 0 when not even CQI 1."""
    return float(bisect.bisect_right(CQI_EFFICIENCY, efficiency(bytes_per_tti, prb)))


def mcs_for(bytes_per_tti: float, prb: int) -> float:
    return float(max(0, bisect.bisect_right(MCS_EFFICIENCY, efficiency(bytes_per_tti, prb)) - 1))


@dataclass
class TelemetryBuilder:
    """Turns each UE's reports into contract messages, numbering each stream from 0."""

    config: CellConfig
    _seq: dict[int, int] = field(default_factory=dict)

    def message(self, report: UeReport) -> TelemetryMessage:
        ue = self.config.ues[report.ue]
        seq = self._seq.get(report.ue, 0)
        self._seq[report.ue] = (seq + 1) & 0xFFFFFFFF
        period_ttis = self.config.telemetry.period_ms * 1000 // TTI_US
        offered_ttis = period_ttis - report.outage_ttis
        capacity_per_tti = report.capacity_bytes / offered_ttis if offered_ttis else 0.0
        granted_per_tti = report.granted_capacity_bytes / report.grant_ttis if report.grant_ttis else math.nan
        return TelemetryMessage(
            cell_id=self.config.cell_id,
            rnti=self.config.rntis()[report.ue],
            lcid=ue.lcid,
            timestamp_ns=report.time_ns,
            tti=report.tti_end,
            seq=seq,
            period_us=period_ttis * TTI_US,
            dl_queue_new_bytes=report.queue_new_bytes,
            dl_queue_retx_bytes=report.queue_retx_bytes,
            dl_queue_sdus=report.queue_sdus,
            dl_queue_limit_bytes=ue.queue_limit_bytes,
            dl_queue_limit_sdus=ue.queue_limit_sdus,
            dl_grant_ttis=report.grant_ttis,
            dl_sched_new_bytes=report.sched_new_bytes,
            dl_sched_retx_bytes=report.sched_retx_bytes,
            mean_mcs=math.nan if math.isnan(granted_per_tti) else mcs_for(granted_per_tti, self.config.prb),
            mean_cqi=cqi_for(capacity_per_tti, self.config.prb),
            dl_dropped_sdus=report.dropped_sdus,
            dl_dropped_bytes=report.dropped_bytes,
            dl_ce_marked_sdus=report.ce_marked_sdus,
            dl_aqm_dropped_sdus=report.aqm_dropped_sdus,
            dl_aqm_dropped_bytes=report.aqm_dropped_bytes,
            ul_ece_marked_acks=report.ece_marked_acks,
            dl_idle_ttis=report.idle_ttis,
            dl_idle_capacity_bytes=report.idle_capacity_bytes,
            ue_ip=str(self.config.ue_ips()[report.ue]),
            outage=report.outage_ttis > 0,
        )


@dataclass(frozen=True)
class Send:
    """Publish `message` after `delay_s`."""

    message: TelemetryMessage
    delay_s: float


@dataclass
class Impairments:
    """Decides, per message, what the impaired telemetry channel delivers and when."""

    config: ImpairmentConfig
    rng: np.random.Generator
    _history: dict[int, deque[TelemetryMessage]] = field(default_factory=dict)

    def apply(self, message: TelemetryMessage, elapsed_s: float) -> list[Send]:
        history = self._history.setdefault(message.rnti, deque(maxlen=self.config.stale_periods + 1))
        history.append(message)
        if any(b.start_s <= elapsed_s < b.start_s + b.duration_s for b in self.config.blackouts):
            return []
        if self.config.loss and self.rng.random() < self.config.loss:
            return []
        sent = message
        if self.config.stale and len(history) == history.maxlen and self.rng.random() < self.config.stale:
            # Old content under the current sequence number: a consumer sees it only by its timestamp.
            sent = replace(history[0], seq=message.seq)
        sends = [Send(sent, self._delay())]
        if self.config.duplicate and self.rng.random() < self.config.duplicate:
            sends.append(Send(sent, self._delay()))
        return sends

    def _delay(self) -> float:
        jitter = self.rng.uniform(0.0, self.config.jitter_ms) if self.config.jitter_ms else 0.0
        return (self.config.delay_ms + jitter) / 1000.0

    @property
    def active(self) -> bool:
        c = self.config
        return bool(c.delay_ms or c.jitter_ms or c.loss or c.duplicate or c.stale or c.blackouts)
