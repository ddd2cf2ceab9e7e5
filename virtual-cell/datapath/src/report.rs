//! What the datapath reports (INTERFACE.md, "Reports" and "Packet log"): the JSON lines, the summary with
//! its TTI lateness percentiles, and the binary packet-log record.

use serde::Serialize;

/// One UE's counters over a report period (deltas), in the order of the `ue` line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub sched_new_bytes: u64,
    pub sched_retx_bytes: u64,
    pub grant_ttis: u64,
    pub capacity_bytes: u64,
    pub granted_capacity_bytes: u64,
    pub backlogged_capacity_bytes: u64,
    pub backlogged_ttis: u64,
    /// TTIs after which the UE had nothing left to send (nothing waited, or the TTI's grant took all), and what
    /// the resource blocks no grant used in them would have carried for it (`Scheduler::unused_capacity`).
    pub idle_ttis: u64,
    pub idle_capacity_bytes: u64,
    pub arrived_bytes: u64,
    pub arrived_sdus: u64,
    pub delivered_bytes: u64,
    pub delivered_sdus: u64,
    pub dropped_sdus: u64,
    pub dropped_bytes: u64,
    pub outage_ttis: u64,
    pub discarded_sdus: u64,
    pub discarded_bytes: u64,
    /// Downlink SDUs the queue discipline marked CE (codel, mark).
    pub ce_marked_sdus: u64,
    /// SDUs the queue discipline dropped (codel), apart from tail drops and discards.
    pub aqm_dropped_sdus: u64,
    pub aqm_dropped_bytes: u64,
    /// Uplink TCP ACKs given ECE: by the queue discipline (mark with ack_ece) or the ACK Regulator.
    pub ece_marked_acks: u64,
    /// Uplink TCP ACKs the ACK Regulator held for at least one TTI, the TTIs (ms at 1 ms TTIs) they waited in
    /// all, and those it released because they had waited its longest hold (ackreg.rs).
    pub held_acks: u64,
    pub held_ack_ttis: u64,
    pub forced_acks: u64,
}

/// A `ue` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UeReport {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub ue: usize,
    pub period: u64,
    pub tti_end: u64,
    pub time_ns: u64,
    pub queue_new_bytes: u64,
    pub queue_retx_bytes: u64,
    pub queue_sdus: u64,
    #[serde(flatten)]
    pub counters: Counters,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Lateness {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WiredSummary {
    pub to_core_packets: u64,
    pub to_server_packets: u64,
    pub dropped_packets: u64,
}

/// The `summary` line written at exit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub ttis: u64,
    pub tti_lateness_ns: Lateness,
    /// Packets read from the SGi TUN and routed to a UE.
    pub downlink_packets: u64,
    /// Packets read from the UE TUNs.
    pub uplink_packets: u64,
    pub unroutable: u64,
    pub wired: WiredSummary,
    pub reports_dropped: u64,
    /// Packet-log records lost because the reporting thread fell too far behind.
    pub packet_log_dropped: u64,
    /// Packets the kernel refused on write (TUN) or send (AF_PACKET), e.g. a full device queue.
    pub send_errors: u64,
    /// Per UE, when its trace's t = 0 was (its first TTI's start, `CLOCK_REALTIME` ns as the packet log's); none
    /// for a UE whose trace waited for a first packet that never came.
    pub trace_started_ns: Vec<Option<u64>>,
}

/// One downlink SDU in the packet log: delivered, or dropped by the queue discipline (`AQM_DROPPED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogRecord {
    pub ue: u16,
    pub length: u16,
    pub flags: u8,
    pub arrival_ns: u64,
    /// When it was written to the UE's TUN; for an `AQM_DROPPED` record, when it was dropped.
    pub delivery_ns: u64,
}

impl LogRecord {
    pub const SIZE: usize = 24;
    /// The queue discipline marked the SDU CE.
    pub const CE_MARKED: u8 = 0x01;
    /// The queue discipline dropped the SDU: it was never delivered.
    pub const AQM_DROPPED: u8 = 0x02;

    /// `u16 ue, u16 length, u8 flags, 3 bytes reserved (0), u64 arrival_ns, u64 delivery_ns`, little-endian.
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[0..2].copy_from_slice(&self.ue.to_le_bytes());
        out[2..4].copy_from_slice(&self.length.to_le_bytes());
        out[4] = self.flags;
        out[8..16].copy_from_slice(&self.arrival_ns.to_le_bytes());
        out[16..24].copy_from_slice(&self.delivery_ns.to_le_bytes());
        out
    }
}

/// TTI lateness distribution: 1 µs buckets up to 100 ms, the exact maximum beyond.
#[derive(Debug)]
pub struct LatenessHistogram {
    buckets: Vec<u64>,
    count: u64,
    max: u64,
}

const BUCKET_NS: u64 = 1_000;
const BUCKETS: usize = 100_000;

impl Default for LatenessHistogram {
    fn default() -> Self {
        LatenessHistogram { buckets: vec![0; BUCKETS + 1], count: 0, max: 0 }
    }
}

impl LatenessHistogram {
    pub fn record(&mut self, lateness_ns: u64) {
        let index = ((lateness_ns / BUCKET_NS) as usize).min(BUCKETS);
        self.buckets[index] += 1;
        self.count += 1;
        self.max = self.max.max(lateness_ns);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The smallest bucket bound (ns) at or below which at least `p` of the samples lie, never above the
    /// maximum: accurate to 1 µs, rounded up.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((p * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (index, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return if index == BUCKETS { self.max } else { ((index as u64 + 1) * BUCKET_NS - 1).min(self.max) };
            }
        }
        self.max
    }

    pub fn summary(&self) -> Lateness {
        Lateness {
            p50: self.percentile(0.5),
            p90: self.percentile(0.9),
            p99: self.percentile(0.99),
            p999: self.percentile(0.999),
            max: self.max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ue_line_has_the_interface_fields_in_order() {
        let report = UeReport {
            kind: "ue",
            ue: 0,
            period: 41,
            tti_end: 419,
            time_ns: 1_763_700_000_123_456_789,
            queue_new_bytes: 45120,
            queue_retx_bytes: 0,
            queue_sdus: 31,
            counters: Counters { sched_new_bytes: 19872, grant_ttis: 9, ..Counters::default() },
        };
        let line = serde_json::to_string(&report).unwrap();
        assert_eq!(
            line,
            "{\"type\":\"ue\",\"ue\":0,\"period\":41,\"tti_end\":419,\"time_ns\":1763700000123456789,\
             \"queue_new_bytes\":45120,\"queue_retx_bytes\":0,\"queue_sdus\":31,\
             \"sched_new_bytes\":19872,\"sched_retx_bytes\":0,\"grant_ttis\":9,\
             \"capacity_bytes\":0,\"granted_capacity_bytes\":0,\"backlogged_capacity_bytes\":0,\"backlogged_ttis\":0,\
             \"idle_ttis\":0,\"idle_capacity_bytes\":0,\
             \"arrived_bytes\":0,\"arrived_sdus\":0,\"delivered_bytes\":0,\"delivered_sdus\":0,\
             \"dropped_sdus\":0,\"dropped_bytes\":0,\"outage_ttis\":0,\"discarded_sdus\":0,\"discarded_bytes\":0,\
             \"ce_marked_sdus\":0,\"aqm_dropped_sdus\":0,\"aqm_dropped_bytes\":0,\"ece_marked_acks\":0,\
             \"held_acks\":0,\"held_ack_ttis\":0,\"forced_acks\":0}"
        );
    }

    #[test]
    fn the_summary_line_nests_lateness_and_wired_counters() {
        let summary = Summary {
            kind: "summary",
            ttis: 3,
            tti_lateness_ns: Lateness { p50: 1, p90: 2, p99: 3, p999: 4, max: 5 },
            downlink_packets: 6,
            uplink_packets: 7,
            unroutable: 8,
            wired: WiredSummary { to_core_packets: 9, to_server_packets: 10, dropped_packets: 11 },
            reports_dropped: 12,
            packet_log_dropped: 13,
            send_errors: 14,
            trace_started_ns: vec![Some(15), None],
        };
        let value: serde_json::Value = serde_json::to_value(&summary).unwrap();
        assert_eq!(value["type"], "summary");
        assert_eq!(value["tti_lateness_ns"]["p999"], 4);
        assert_eq!(value["wired"]["dropped_packets"], 11);
        assert_eq!(value["reports_dropped"], 12);
        assert_eq!(value["trace_started_ns"], serde_json::json!([15, null]));
    }

    #[test]
    fn a_packet_log_record_is_24_little_endian_bytes() {
        let record =
            LogRecord { ue: 2, length: 1500, flags: 0, arrival_ns: 0x0102030405060708, delivery_ns: u64::MAX - 1 };
        let bytes = record.encode();
        assert_eq!(&bytes[0..8], &[2, 0, 0xdc, 0x05, 0, 0, 0, 0]);
        let dropped = LogRecord { flags: LogRecord::AQM_DROPPED, ..record }.encode();
        assert_eq!(&dropped[0..8], &[2, 0, 0xdc, 0x05, 2, 0, 0, 0]);
        assert_eq!(LogRecord { flags: LogRecord::CE_MARKED, ..record }.encode()[4], 1);
        assert_eq!(&bytes[8..16], &[8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(&bytes[16..24], &(u64::MAX - 1).to_le_bytes());
    }

    #[test]
    fn lateness_percentiles_are_accurate_to_a_microsecond_and_bounded_by_the_maximum() {
        let mut histogram = LatenessHistogram::default();
        for i in 0..1000u64 {
            histogram.record(i * 1000 + 500); // 0.5 µs .. 999.5 µs
        }
        let summary = histogram.summary();
        assert_eq!(summary.p50, 499_999);
        assert_eq!(summary.p90, 899_999);
        assert_eq!(summary.p99, 989_999);
        assert_eq!(summary.p999, 998_999);
        assert_eq!(summary.max, 999_500);
        histogram.record(5_000_000_000);
        assert_eq!(histogram.percentile(1.0), 5_000_000_000);
        assert_eq!(histogram.count(), 1001);
    }

    #[test]
    fn an_empty_histogram_reports_zeros() {
        assert_eq!(LatenessHistogram::default().summary(), Lateness::default());
    }
}
