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
//! waits for it rather than asking. Every packet is modelled as fitting the grant, the case of TCP ACKs. Time (ns)
//! is an argument.

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
        }
    }

    /// After each transmission the UE is granted another `grant_period_ns` later with probability `chain`,
    /// drawn from a generator seeded with `seed`.
    pub fn with_grants(self, grant_period_ns: u64, chain: f64, seed: u64) -> Uplink {
        Uplink { grant_period_ns, chain, rng: SplitMix64::new(seed), ..self }
    }

    /// SR occasions fall at `start_ns + k * sr_period_ns` from now on.
    pub fn set_start_ns(&mut self, start_ns: u64) {
        self.start_ns = start_ns;
        self.next_tx = None;
    }

    /// The time a packet read at `now_ns` leaves the uplink.
    pub fn release_ns(&mut self, now_ns: u64) -> u64 {
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

    #[test]
    fn without_scheduling_requests_a_packet_waits_the_fixed_delay() {
        assert_eq!(Uplink::new(0, 0, 10 * MS).release_ns(1_234), 1_234 + 10 * MS);
    }

    #[test]
    fn packets_between_two_occasions_leave_together_after_the_grant() {
        // occasions every 20 ms from 100 ms: packets at 103 and 119 ms ask at 120 ms, transmit at 128 ms, and
        // leave 5 ms later
        let mut uplink = Uplink::new(100 * MS, 20 * MS, 5 * MS);
        assert_eq!((uplink.release_ns(103 * MS) / MS, uplink.release_ns(119 * MS) / MS), (133, 133));
        // one at an occasion with nothing requested asks at once
        assert_eq!(Uplink::new(100 * MS, 20 * MS, 5 * MS).release_ns(120 * MS) / MS, 133);
    }

    #[test]
    fn a_packet_that_arrives_before_the_grant_reaches_the_ue_goes_with_its_transmission() {
        // the SR of 120 ms is granted at 124 ms: a packet at 123 or 124 ms goes at 128 ms, one at 125 ms asks at 140
        let mut uplink = Uplink::new(100 * MS, 20 * MS, 5 * MS);
        assert_eq!(uplink.release_ns(119 * MS) / MS, 133);
        assert_eq!(uplink.release_ns(123 * MS) / MS, 133);
        assert_eq!(uplink.release_ns(124 * MS) / MS, 133);
        assert_eq!(uplink.release_ns(124 * MS + 1) / MS, 153);
        // with no request in flight, a packet at 123 ms waits for the 140 ms occasion
        assert_eq!(Uplink::new(100 * MS, 20 * MS, 5 * MS).release_ns(123 * MS) / MS, 153);
    }

    #[test]
    fn chained_grants_follow_each_transmission_until_the_chain_breaks() {
        // occasions every 20 ms from 100 ms, grants 9 ms after each transmission, always (chain 1)
        let mut uplink = Uplink::new(100 * MS, 20 * MS, 5 * MS).with_grants(9 * MS, 1.0, 7);
        // the 120 ms SR: transmission at 128 ms, leaves at 133
        assert_eq!(uplink.release_ns(119 * MS) / MS, 133);
        // after it: grants for 137 ms (by 133 ms), 146 ms (by 142), ... with no request
        assert_eq!(uplink.release_ns(125 * MS) / MS, 142);
        assert_eq!(uplink.release_ns(133 * MS + 1) / MS, 151);
        // a long silence: the chain went on, 155, 164, ..., 254 ms, the first whose grant (250 ms) it catches
        assert_eq!(uplink.release_ns(250 * MS) / MS, 259);
        // chain 0: as without grants, the next packet asks at the next occasion
        let mut unchained = Uplink::new(100 * MS, 20 * MS, 5 * MS).with_grants(9 * MS, 0.0, 7);
        assert_eq!(unchained.release_ns(119 * MS) / MS, 133);
        assert_eq!(unchained.release_ns(125 * MS) / MS, 153);
    }

    #[test]
    fn the_chain_continues_with_its_probability() {
        // chain 0.8: of many transmissions, about four in five are followed by a granted one 9 ms later
        let mut uplink = Uplink::new(0, 20 * MS, 0).with_grants(9 * MS, 0.8, 11);
        let mut released = Vec::new();
        let mut now = 0;
        for _ in 0..20_000 {
            now += MS; // a packet every millisecond: every grant carries one
            released.push(uplink.release_ns(now));
        }
        released.dedup();
        let spacings: Vec<u64> = released.windows(2).map(|w| w[1] - w[0]).collect();
        let chained = spacings.iter().filter(|&&s| s == 9 * MS).count() as f64 / spacings.len() as f64;
        assert!((chained - 0.8).abs() < 0.02, "{chained}");
        // a break asks at the next occasion at or after the first packet that missed the last grant (4 ms
        // before its transmission): the next transmission 5 to 32 ms after the last
        assert!(spacings.iter().all(|&s| (5 * MS..=32 * MS).contains(&s)), "{spacings:?}");
    }
}
