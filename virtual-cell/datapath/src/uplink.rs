//! When a packet the UE sends leaves the cell: at once after the fixed uplink delay, or, with scheduling
//! requests, after the UE's next SR occasion, its grant and its PUSCH transmission, then the fixed delay. A UE
//! without an uplink grant must ask for one on PUCCH at its SR occasions (every `sr_period`, srsenb's
//! `sched_request_cnfg.period`, 20 ms by default); the eNB grants at the SR's TTI + 4 and the UE transmits at the
//! grant's TTI + 4 (LTE FDD, TS 36.213 8.0): so what arrives between two occasions leaves together, one bunch per
//! period. The UE builds the transmission when the grant reaches it (TS 36.321 5.4), so a packet that arrives after
//! the SR but by then goes with it: srsue's ACKs reached srsenb's core 14 ms after the data left it at the least
//! (BBR's min RTT through the bridge), less than the backhaul and a full SR-to-PUSCH wait would allow. Every packet
//! is modelled as fitting the grant, the case of TCP ACKs; a UE that keeps data waiting would get grants without
//! new requests. Time (ns) is an argument.

/// From a scheduling request to the uplink transmission it asked for: grant at + 4 TTIs, PUSCH at + 4 more.
pub const SR_TO_PUSCH_NS: u64 = 8_000_000;
/// From a scheduling request to its grant reaching the UE, which then builds the transmission.
pub const SR_TO_GRANT_NS: u64 = 4_000_000;

/// One UE's uplink: SR occasions at `start_ns + k * sr_period_ns` (none with a period of 0), the fixed delay
/// after the transmission, and the occasion of the request whose grant the UE waits for.
#[derive(Debug, Clone)]
pub struct Uplink {
    start_ns: u64,
    sr_period_ns: u64,
    delay_ns: u64,
    requested: Option<u64>,
}

impl Uplink {
    pub fn new(start_ns: u64, sr_period_ns: u64, delay_ns: u64) -> Uplink {
        Uplink { start_ns, sr_period_ns, delay_ns, requested: None }
    }

    /// SR occasions fall at `start_ns + k * sr_period_ns` from now on.
    pub fn set_start_ns(&mut self, start_ns: u64) {
        self.start_ns = start_ns;
        self.requested = None;
    }

    /// The time a packet read at `now_ns` leaves the uplink.
    pub fn release_ns(&mut self, now_ns: u64) -> u64 {
        if self.sr_period_ns == 0 {
            return now_ns + self.delay_ns;
        }
        let occasion = match self.requested {
            // before the grant reaches the UE: the packet joins the transmission requested (or to be requested)
            Some(requested) if now_ns <= requested + SR_TO_GRANT_NS => requested,
            _ => {
                let since = now_ns.saturating_sub(self.start_ns);
                self.start_ns + since.div_ceil(self.sr_period_ns) * self.sr_period_ns
            }
        };
        self.requested = Some(occasion);
        occasion + SR_TO_PUSCH_NS + self.delay_ns
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
}
