//! When a packet the UE sends leaves the cell: at once after the fixed uplink delay, or, with scheduling
//! requests, after the UE's next SR occasion, its grant and its PUSCH transmission, then the fixed delay. A UE
//! without an uplink grant must ask for one on PUCCH at its SR occasions (every `sr_period`, srsenb's
//! `sched_request_cnfg.period`, 20 ms by default); the eNB grants at the SR's TTI + 4 and the UE transmits at the
//! grant's TTI + 4 (LTE FDD, TS 36.213 8.0): so what arrives between two occasions leaves together, one bunch per
//! period. The UE builds the transmission when the grant reaches it (TS 36.321 5.4), so a packet that arrives after
//! the SR but by then goes with it: srsue's ACKs reached srsenb's core 14 ms after the data left it at the least
//! (BBR's min RTT through the bridge), less than the backhaul and a full SR-to-PUSCH wait would allow.
//!
//! Chained grants (`with_grants`): a UE may be granted again after a transmission without asking, for data the
//! eNB knows it holds (its buffer status report) or for what the RLC sends on the uplink besides the IP packets
//! (acknowledged mode's status reports). Over ZeroMQ at 15 Mbit/s srsue's ACKs reached the core in bunches 8 TTIs
//! apart four times in five, and after an SR occasion otherwise; through the bridge, at half the rate, one time in
//! ten. So after each transmission another follows `grant_period` later with `chain` probability, whether or not a
//! packet waits for it; when the chain breaks, the next packet asks at an SR occasion. A UE that holds a grant
//! waits for it rather than asking. Every packet is modelled as fitting the grant, the case of TCP ACKs.
//!
//! Replayed transmissions (`with_replay`, an `OpportunityTrace`): the transmissions a srsRAN UE made, as the core
//! received them, each with the most bytes it carried where it left packets behind (the grant was full) or no
//! limit where it did not. srsue's grants are sized to what its last buffer status report announced, so over
//! ZeroMQ a transmission often carries only the older of the waiting ACKs and the others wait for the next one: its
//! ACKs took 1.5 to 20 ms, evenly spread, where chained grants alone give 6 to 15. A packet leaves in the first
//! transmission at least the fixed delay after it was read that has room for it, never in one before the previous
//! packet's (first in, first out); a packet larger than a whole grant takes an empty one. Time (ns) is an argument.

use std::path::Path;

use crate::cell::SplitMix64;

/// From a scheduling request to the uplink transmission it asked for: grant at + 4 TTIs, PUSCH at + 4 more.
pub const SR_TO_PUSCH_NS: u64 = 8_000_000;
/// From a scheduling request to its grant reaching the UE, which then builds the transmission.
pub const SR_TO_GRANT_NS: u64 = 4_000_000;
/// From a grant reaching the UE to its transmission: what arrives by then goes with it.
const GRANT_TO_PUSCH_NS: u64 = SR_TO_PUSCH_NS - SR_TO_GRANT_NS;

/// One UE's uplink: SR occasions at `start_ns + k * sr_period_ns` (none with a period of 0), the fixed delay
/// after the transmission, the transmission the UE holds a grant for or has asked for, and the chained grants.
#[derive(Debug, Clone)]
pub struct Uplink {
    start_ns: u64,
    sr_period_ns: u64,
    delay_ns: u64,
    next_tx: Option<u64>,
    grant_period_ns: u64,
    chain: f64,
    rng: SplitMix64,
    replay: Option<Replay>,
}

/// An opportunity's limit meaning "whatever waits".
pub const NO_LIMIT: u32 = u32::MAX;
/// Bytes per record of an opportunity trace file: `u64` time in µs, `u32` byte limit, little-endian.
const RECORD_BYTES: usize = 12;

/// Uplink transmissions replayed from a capture (INTERFACE.md, "Uplink opportunity trace file"): times from the
/// clock's start and byte limits, looped with the length the last record gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpportunityTrace {
    opportunities: Vec<(u64, u32)>,
    length_ns: u64,
}

impl OpportunityTrace {
    /// Decodes the file format; the error says what is wrong (the caller adds the file name).
    pub fn decode(bytes: &[u8]) -> Result<OpportunityTrace, String> {
        if bytes.len() % RECORD_BYTES != 0 {
            return Err(format!("{} bytes is not a whole number of {RECORD_BYTES}-byte records", bytes.len()));
        }
        let records: Vec<(u64, u32)> = bytes
            .chunks_exact(RECORD_BYTES)
            .map(|r| {
                let time_us = u64::from_le_bytes(r[..8].try_into().expect("8 bytes"));
                (time_us.saturating_mul(1000), u32::from_le_bytes(r[8..].try_into().expect("4 bytes")))
            })
            .collect();
        let Some((&(length_ns, _), opportunities)) = records.split_last() else {
            return Err("empty: it needs at least one transmission and the record that ends the trace".to_string());
        };
        if opportunities.is_empty() {
            return Err("no transmission before the record that ends the trace".to_string());
        }
        if let Some(i) = records.windows(2).position(|w| w[1].0 <= w[0].0) {
            return Err(format!("record {}: times must increase strictly", i + 1));
        }
        if let Some(i) = opportunities.iter().position(|&(_, limit)| limit == 0) {
            return Err(format!("record {i}: a transmission that carries 0 bytes"));
        }
        Ok(OpportunityTrace { opportunities: opportunities.to_vec(), length_ns })
    }

    /// Reads a trace file; the error names the file.
    pub fn load(path: &Path) -> Result<OpportunityTrace, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {}", path.display(), crate::config::io_reason(&e)))?;
        OpportunityTrace::decode(&bytes).map_err(|e| format!("{}: {}", path.display(), e))
    }
}

/// Where the replay stands: the next transmission a packet may take and the bytes already in it.
#[derive(Debug, Clone)]
struct Replay {
    trace: OpportunityTrace,
    lap: u64,
    index: usize,
    used: u64,
}

impl Replay {
    /// The time (from the clock's start) of the first transmission at or after `earliest_ns` with room for `len`.
    fn release_ns(&mut self, earliest_ns: u64, len: u64) -> u64 {
        loop {
            let (offset, limit) = self.trace.opportunities[self.index];
            let at = self.lap * self.trace.length_ns + offset;
            if at >= earliest_ns && (self.used == 0 || limit == NO_LIMIT || self.used + len <= u64::from(limit)) {
                self.used += len;
                return at;
            }
            self.used = 0;
            self.index += 1;
            if self.index == self.trace.opportunities.len() {
                self.index = 0;
                self.lap += 1;
            }
        }
    }
}

impl Uplink {
    pub fn new(start_ns: u64, sr_period_ns: u64, delay_ns: u64) -> Uplink {
        Uplink {
            start_ns,
            sr_period_ns,
            delay_ns,
            next_tx: None,
            grant_period_ns: 0,
            chain: 0.0,
            rng: SplitMix64::new(0),
            replay: None,
        }
    }

    /// The UE's packets leave in `trace`'s transmissions instead (the module says how); the fixed delay is the
    /// least time from the UE to the core.
    pub fn with_replay(self, trace: OpportunityTrace) -> Uplink {
        Uplink { replay: Some(Replay { trace, lap: 0, index: 0, used: 0 }), ..self }
    }

    /// After each transmission the UE is granted another `grant_period_ns` later with probability `chain`,
    /// drawn from a generator seeded with `seed`.
    pub fn with_grants(self, grant_period_ns: u64, chain: f64, seed: u64) -> Uplink {
        Uplink { grant_period_ns, chain, rng: SplitMix64::new(seed), ..self }
    }

    /// SR occasions (and replayed transmissions) count from `start_ns` from now on.
    pub fn set_start_ns(&mut self, start_ns: u64) {
        self.start_ns = start_ns;
        self.next_tx = None;
    }

    /// The time a packet of `len` bytes read at `now_ns` leaves the uplink.
    pub fn release_ns(&mut self, now_ns: u64, len: usize) -> u64 {
        if let Some(replay) = &mut self.replay {
            let earliest = (now_ns + self.delay_ns).saturating_sub(self.start_ns);
            return self.start_ns + replay.release_ns(earliest, len as u64);
        }
        if self.sr_period_ns == 0 {
            return now_ns + self.delay_ns;
        }
        loop {
            match self.next_tx {
                // the grant has not reached the UE yet: the packet goes with its transmission
                Some(tx) if now_ns + GRANT_TO_PUSCH_NS <= tx => return tx + self.delay_ns,
                // that transmission left without it; another grant follows it, or the chain breaks
                Some(tx) => {
                    let chained = self.grant_period_ns > 0 && self.rng.uniform() < self.chain;
                    self.next_tx = chained.then_some(tx + self.grant_period_ns);
                }
                None => {
                    let since = now_ns.saturating_sub(self.start_ns);
                    let occasion = self.start_ns + since.div_ceil(self.sr_period_ns) * self.sr_period_ns;
                    self.next_tx = Some(occasion + SR_TO_PUSCH_NS);
                    return occasion + SR_TO_PUSCH_NS + self.delay_ns;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    /// A TCP ACK with timestamps: 52 bytes.
    const ACK: usize = 52;

    #[test]
    fn without_scheduling_requests_a_packet_waits_the_fixed_delay() {
        assert_eq!(Uplink::new(0, 0, 10 * MS).release_ns(1_234, ACK), 1_234 + 10 * MS);
    }

    #[test]
    fn packets_between_two_occasions_leave_together_after_the_grant() {
        // occasions every 20 ms from 100 ms: packets at 103 and 119 ms ask at 120 ms, transmit at 128 ms, and
        // leave 5 ms later
        let mut uplink = Uplink::new(100 * MS, 20 * MS, 5 * MS);
        assert_eq!((uplink.release_ns(103 * MS, ACK) / MS, uplink.release_ns(119 * MS, ACK) / MS), (133, 133));
        // one at an occasion with nothing requested asks at once
        assert_eq!(Uplink::new(100 * MS, 20 * MS, 5 * MS).release_ns(120 * MS, ACK) / MS, 133);
    }

    #[test]
    fn a_packet_that_arrives_before_the_grant_reaches_the_ue_goes_with_its_transmission() {
        // the SR of 120 ms is granted at 124 ms: a packet at 123 or 124 ms goes at 128 ms, one at 125 ms asks at 140
        let mut uplink = Uplink::new(100 * MS, 20 * MS, 5 * MS);
        assert_eq!(uplink.release_ns(119 * MS, ACK) / MS, 133);
        assert_eq!(uplink.release_ns(123 * MS, ACK) / MS, 133);
        assert_eq!(uplink.release_ns(124 * MS, ACK) / MS, 133);
        assert_eq!(uplink.release_ns(124 * MS + 1, ACK) / MS, 153);
        // with no request in flight, a packet at 123 ms waits for the 140 ms occasion
        assert_eq!(Uplink::new(100 * MS, 20 * MS, 5 * MS).release_ns(123 * MS, ACK) / MS, 153);
    }

    #[test]
    fn chained_grants_follow_each_transmission_until_the_chain_breaks() {
        // occasions every 20 ms from 100 ms, grants 9 ms after each transmission, always (chain 1)
        let mut uplink = Uplink::new(100 * MS, 20 * MS, 5 * MS).with_grants(9 * MS, 1.0, 7);
        // the 120 ms SR: transmission at 128 ms, leaves at 133
        assert_eq!(uplink.release_ns(119 * MS, ACK) / MS, 133);
        // after it: grants for 137 ms (by 133 ms), 146 ms (by 142), ... with no request
        assert_eq!(uplink.release_ns(125 * MS, ACK) / MS, 142);
        assert_eq!(uplink.release_ns(133 * MS + 1, ACK) / MS, 151);
        // a long silence: the chain went on, 155, 164, ..., 254 ms, the first whose grant (250 ms) it catches
        assert_eq!(uplink.release_ns(250 * MS, ACK) / MS, 259);
        // chain 0: as without grants, the next packet asks at the next occasion
        let mut unchained = Uplink::new(100 * MS, 20 * MS, 5 * MS).with_grants(9 * MS, 0.0, 7);
        assert_eq!(unchained.release_ns(119 * MS, ACK) / MS, 133);
        assert_eq!(unchained.release_ns(125 * MS, ACK) / MS, 153);
    }

    #[test]
    fn the_chain_continues_with_its_probability() {
        // chain 0.8: of many transmissions, about four in five are followed by a granted one 9 ms later
        let mut uplink = Uplink::new(0, 20 * MS, 0).with_grants(9 * MS, 0.8, 11);
        let mut released = Vec::new();
        let mut now = 0;
        for _ in 0..20_000 {
            now += MS; // a packet every millisecond: every grant carries one
            released.push(uplink.release_ns(now, ACK));
        }
        released.dedup();
        let spacings: Vec<u64> = released.windows(2).map(|w| w[1] - w[0]).collect();
        let chained = spacings.iter().filter(|&&s| s == 9 * MS).count() as f64 / spacings.len() as f64;
        assert!((chained - 0.8).abs() < 0.02, "{chained}");
        // a break asks at the next occasion at or after the first packet that missed the last grant (4 ms
        // before its transmission): the next transmission 5 to 32 ms after the last
        assert!(spacings.iter().all(|&s| (5 * MS..=32 * MS).contains(&s)), "{spacings:?}");
    }

    fn records(entries: &[(u64, u32)]) -> Vec<u8> {
        entries.iter().flat_map(|&(us, limit)| us.to_le_bytes().into_iter().chain(limit.to_le_bytes())).collect()
    }

    #[test]
    fn replayed_transmissions_carry_packets_first_in_first_out_within_their_limits() {
        // transmissions at 10 ms (at most 104 bytes: two ACKs) and 20 ms (no limit), looped every 30 ms; the clock
        // started at 100 ms and the fixed delay is 2 ms
        let trace = OpportunityTrace::decode(&records(&[(10_000, 104), (20_000, NO_LIMIT), (30_000, 0)])).unwrap();
        let mut uplink = Uplink::new(100 * MS, 0, 2 * MS).with_replay(trace);
        assert_eq!(uplink.release_ns(100 * MS, ACK) / MS, 110);
        assert_eq!(uplink.release_ns(105 * MS, ACK) / MS, 110);
        // the 10 ms transmission is full: the third ACK waits for the 20 ms one
        assert_eq!(uplink.release_ns(106 * MS, ACK) / MS, 120);
        // read at 119 ms it can reach the core by 121 ms at the earliest: the 10 ms one of the next lap
        assert_eq!(uplink.release_ns(119 * MS, ACK) / MS, 140);
        assert_eq!(uplink.release_ns(139 * MS, ACK) / MS, 150);
        // never before the previous packet's transmission, whatever the time
        assert_eq!(uplink.release_ns(100 * MS, ACK) / MS, 150);
    }

    #[test]
    fn a_packet_larger_than_a_grant_takes_an_empty_one() {
        let trace = OpportunityTrace::decode(&records(&[(10_000, 104), (20_000, 0)])).unwrap();
        let mut uplink = Uplink::new(0, 0, 0).with_replay(trace);
        assert_eq!(uplink.release_ns(0, 1500) / MS, 10);
        assert_eq!(uplink.release_ns(MS, ACK) / MS, 30);
    }

    #[test]
    fn opportunity_traces_that_cannot_be_replayed_are_refused() {
        let refused = |bytes: &[u8]| OpportunityTrace::decode(bytes).unwrap_err();
        assert_eq!(refused(&[0; 13]), "13 bytes is not a whole number of 12-byte records");
        assert_eq!(refused(&[]), "empty: it needs at least one transmission and the record that ends the trace");
        assert_eq!(refused(&records(&[(5, 0)])), "no transmission before the record that ends the trace");
        assert_eq!(refused(&records(&[(5, 10), (5, 0)])), "record 1: times must increase strictly");
        assert_eq!(refused(&records(&[(5, 10), (6, 0), (7, 0)])), "record 1: a transmission that carries 0 bytes");
    }
}
