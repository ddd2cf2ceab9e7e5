//! When a packet the UE sends leaves the cell: at once after the fixed uplink delay, or, with scheduling
//! requests, after the UE's next SR occasion, its grant and its PUSCH transmission, then the fixed delay. A UE
//! without an uplink grant must ask for one on PUCCH at its SR occasions (every `sr_period`, srsenb's
//! `sched_request_cnfg.period`, 20 ms by default); the eNB grants at the SR's TTI + 4 and the UE transmits at the
//! grant's TTI + 4 (LTE FDD, TS 36.213 8.0): so what arrives between two occasions leaves together, one bunch per
//! period. Every packet is modelled as finding the UE's uplink buffer empty, the case of TCP ACKs that arrive
//! after the last grant was used up; a UE that keeps data waiting would get grants without new requests. Time (ns)
//! is an argument.

/// From a scheduling request to the uplink transmission it asked for: grant at + 4 TTIs, PUSCH at + 4 more.
pub const SR_TO_PUSCH_NS: u64 = 8_000_000;

/// The time a packet read at `now_ns` leaves the uplink: SR occasions fall at `start_ns + k * sr_period_ns`
/// (none with a period of 0).
pub fn release_ns(now_ns: u64, start_ns: u64, sr_period_ns: u64, delay_ns: u64) -> u64 {
    if sr_period_ns == 0 {
        return now_ns + delay_ns;
    }
    let since = now_ns.saturating_sub(start_ns);
    let occasion = start_ns + since.div_ceil(sr_period_ns) * sr_period_ns;
    occasion + SR_TO_PUSCH_NS + delay_ns
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn without_scheduling_requests_a_packet_waits_the_fixed_delay() {
        assert_eq!(release_ns(1_234, 0, 0, 10 * MS), 1_234 + 10 * MS);
    }

    #[test]
    fn packets_between_two_occasions_leave_together_after_the_grant() {
        // occasions every 20 ms from 100 ms: packets at 103 and 119 ms ask at 120 ms, transmit at 128 ms, and
        // leave 5 ms later; one at 121 ms waits for the 140 ms occasion; one at an occasion asks at once
        let at = |now_ms: u64| release_ns(now_ms * MS, 100 * MS, 20 * MS, 5 * MS) / MS;
        assert_eq!((at(103), at(119)), (133, 133));
        assert_eq!(at(121), 153);
        assert_eq!(at(120), 133);
    }
}
