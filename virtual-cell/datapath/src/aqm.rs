//! Queue disciplines of a UE's RLC queue (INTERFACE.md, "Queue disciplines"): one queue, interchangeable policies,
//! as Mahimahi's abstract packet queue. The queue (rlc.rs) keeps its limits (tail drop) and consults its `Policy`
//! when it admits an SDU, when the first byte of an SDU goes into a transport block, when it has no SDU left to
//! start, and at the end of every TTI; the UE's uplink packets pass the policy too.
//!
//! - `TailDrop`: the limits and nothing else.
//! - `CoDel`: RFC 8289, decided when an SDU starts being transmitted (its dequeue). Where CoDel drops, an
//!   ECN-capable packet is marked CE and sent instead (as Linux's `codel ecn`); an SDU partly sent is never judged.
//! - `Marker`: L4Span's (CoNEXT 2025) sojourn prediction at enqueue: the bytes queued ahead of an arriving packet
//!   over the rate the cell serves the UE at; above a threshold the packet is marked CE or, with `ack_ece`, the
//!   UE's next ACK of that TCP flow gets ECE, so that the sender hears of it without waiting behind the queue.
//!
//! Pure: time is an argument (TTI indices, turned into ns with the TTI's length).

use std::collections::HashSet;

use crate::ecn::{self, Flow};

/// RFC 8289 5.3's MAXPACKET, "SHOULD use interface MTU": the TUN devices' 1500 bytes.
pub const MTU_BYTES: u64 = 1500;

/// Time constant of `Marker`'s served-rate average: 20 ms follows the rate changes of the traces (the piecewise
/// trace holds a rate for 40 ms at its shortest; measured LTE traces change within tens of ms) while averaging over
/// the TTI-scale noise of the service (Mahimahi traces serve 0 or k x 1500 bytes in a TTI, HARQ failures, shared
/// schedulers' turns), and is of the order of the delays it predicts against (the 15 ms default threshold).
pub const RATE_TIME_CONSTANT_NS: u64 = 20_000_000;

/// A discipline and its parameters, as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discipline {
    TailDrop,
    CoDel { target_ns: u64, interval_ns: u64 },
    Mark { threshold_ns: u64, ack_ece: bool },
}

/// What becomes of an SDU whose first byte is about to be transmitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Send,
    /// Sent, marked CE.
    Mark,
    Drop,
}

/// A discipline with its state.
#[derive(Debug, Clone)]
pub enum Policy {
    TailDrop,
    CoDel(CoDel),
    Mark(Marker),
}

impl Policy {
    pub fn new(discipline: Discipline, tti_ns: u64) -> Policy {
        match discipline {
            Discipline::TailDrop => Policy::TailDrop,
            Discipline::CoDel { target_ns, interval_ns } => Policy::CoDel(CoDel::new(target_ns, interval_ns, tti_ns)),
            Discipline::Mark { threshold_ns, ack_ece } => Policy::Mark(Marker::new(threshold_ns, ack_ece, tti_ns)),
        }
    }

    /// Whether `dequeue` must see every SDU when its first byte is transmitted.
    pub fn decides_at_dequeue(&self) -> bool {
        matches!(self, Policy::CoDel(_))
    }

    /// Whether `end_tti` must be told what each TTI served.
    pub fn measures_rate(&self) -> bool {
        matches!(self, Policy::Mark(_))
    }

    /// An SDU is admitted behind `ahead_bytes` queued bytes (new and retransmission); true when it was marked CE.
    pub fn enqueue(&mut self, ahead_bytes: u64, packet: &mut [u8]) -> bool {
        match self {
            Policy::Mark(marker) => marker.enqueue(ahead_bytes, packet),
            Policy::TailDrop | Policy::CoDel(_) => false,
        }
    }

    /// The first byte of the SDU stamped `stamp` goes into TTI `tti`'s transport block, with `bytes_behind` bytes
    /// queued behind the SDU (new and retransmission). A `Mark` verdict has marked `packet` CE.
    pub fn dequeue(&mut self, tti: u64, stamp: u64, bytes_behind: u64, packet: &mut [u8]) -> Verdict {
        let Policy::CoDel(codel) = self else { return Verdict::Send };
        let head = Head {
            sojourn_ns: tti.saturating_sub(stamp) * codel.tti_ns,
            bytes_behind,
            ecn_capable: ecn::ecn_capable(packet),
        };
        let verdict = codel.dequeue(tti * codel.tti_ns, &head);
        if verdict == Verdict::Mark {
            ecn::mark_ce(packet);
        }
        verdict
    }

    /// The queue has no SDU left to start.
    pub fn empty(&mut self) {
        if let Policy::CoDel(codel) = self {
            codel.empty();
        }
    }

    /// A TTI ended: the queue could serve `backlog_bytes` at its start, the cell offered it `offered_bytes` and it
    /// served `served_bytes`.
    pub fn end_tti(&mut self, backlog_bytes: u64, served_bytes: u64, offered_bytes: u64) {
        if let Policy::Mark(marker) = self {
            marker.end_tti(backlog_bytes, served_bytes, offered_bytes);
        }
    }

    /// An uplink packet of the UE passes; true when ECE was set on it.
    pub fn uplink(&mut self, packet: &mut [u8]) -> bool {
        match self {
            Policy::Mark(marker) => marker.uplink(packet),
            Policy::TailDrop | Policy::CoDel(_) => false,
        }
    }
}

/// The packet at the head of the queue, as CoDel sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub sojourn_ns: u64,
    /// Bytes still queued once this packet is dequeued (RFC 8289 5.6, `bytes()`).
    pub bytes_behind: u64,
    pub ecn_capable: bool,
}

/// CoDel's state (RFC 8289 5.2) and its dequeue (5.5, 5.6); times in ns.
///
/// The RFC's `dequeue` may drop a packet and dequeue the next in one call; here each packet is one call (the queue
/// calls again for the next SDU at the same `now`, or `empty`), and `in_drop_loop` says that the call continues the
/// drop loop (`while (now >= drop_next_ && dropping_)`) with the packet that replaces the one dropped. The packet
/// that replaces the drop entering the dropping state is returned by the RFC as it is: here a fresh call sends it,
/// as `now` is before the `drop_next` just set.
#[derive(Debug, Clone)]
pub struct CoDel {
    target_ns: u64,
    interval_ns: u64,
    tti_ns: u64,
    /// The RFC's `first_above_time`, None for its 0: the sojourn is below target (or the queue was empty).
    first_above_time: Option<u64>,
    dropping: bool,
    drop_next: u64,
    count: u32,
    lastcount: u32,
    in_drop_loop: bool,
}

impl CoDel {
    pub fn new(target_ns: u64, interval_ns: u64, tti_ns: u64) -> CoDel {
        CoDel {
            target_ns,
            interval_ns,
            tti_ns,
            first_above_time: None,
            dropping: false,
            drop_next: 0,
            count: 0,
            lastcount: 0,
            in_drop_loop: false,
        }
    }

    /// The RFC's `dequeue` (5.5) for the packet `head` dequeued at `now`.
    pub fn dequeue(&mut self, now: u64, head: &Head) -> Verdict {
        let ok_to_drop = self.dodequeue(now, head);
        let in_drop_loop = std::mem::take(&mut self.in_drop_loop);
        if !self.dropping {
            return if ok_to_drop { self.enter(now, head.ecn_capable) } else { Verdict::Send };
        }
        if !ok_to_drop {
            // sojourn time below target: leave the dropping state
            self.dropping = false;
            return Verdict::Send;
        }
        if in_drop_loop {
            self.drop_next = self.control_law(self.drop_next);
        }
        if now >= self.drop_next {
            self.count = self.count.saturating_add(1);
            if head.ecn_capable {
                // Linux's codel_dequeue: a marked packet is sent and ends the loop; the schedule goes on.
                self.drop_next = self.control_law(self.drop_next);
                return Verdict::Mark;
            }
            self.in_drop_loop = true;
            return Verdict::Drop;
        }
        Verdict::Send
    }

    /// The queue has nothing to dequeue: the RFC's `dodequeue` returns no packet (5.6), so `first_above_time` is
    /// reset and `dequeue` leaves the dropping state (5.5).
    pub fn empty(&mut self) {
        self.first_above_time = None;
        self.dropping = false;
        self.in_drop_loop = false;
    }

    /// The sojourn time has stayed at or above target for an interval: enter the dropping state (5.5).
    fn enter(&mut self, now: u64, ecn_capable: bool) -> Verdict {
        self.dropping = true;
        // 5.5: back above target soon after the last dropping state, start from the drop rate that controlled the
        // queue then. Linux's version, as the RFC's; `now - drop_next` is signed there: a drop_next ahead is "soon".
        let delta = self.count - self.lastcount;
        self.count = if delta > 1 && now.saturating_sub(self.drop_next) < 16 * self.interval_ns { delta } else { 1 };
        self.drop_next = self.control_law(now);
        self.lastcount = self.count;
        if ecn_capable { Verdict::Mark } else { Verdict::Drop }
    }

    /// 5.6: `t + INTERVAL / sqrt(count)`.
    fn control_law(&self, t: u64) -> u64 {
        t + (self.interval_ns as f64 / f64::from(self.count).sqrt()) as u64
    }

    /// The RFC's `dodequeue` (5.6): OK to drop once the sojourn has been at or above target for an interval, but
    /// never while at most one MTU would remain queued (4.1, non-starvation: the link would run dry).
    fn dodequeue(&mut self, now: u64, head: &Head) -> bool {
        if head.sojourn_ns < self.target_ns || head.bytes_behind <= MTU_BYTES {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + self.interval_ns);
                false
            }
            Some(first_above_time) => now >= first_above_time,
        }
    }
}

/// Marking from the predicted sojourn at enqueue (L4Span).
#[derive(Debug, Clone)]
pub struct Marker {
    threshold_ns: u64,
    ack_ece: bool,
    tti_ns: u64,
    /// RATE_TIME_CONSTANT_NS in TTIs, at least one.
    window_ttis: f64,
    /// The rate at which queued bytes drain, bytes per TTI, an exponential moving average over the TTIs that began
    /// with data queued: the bytes served where the cell limited the service (data was left after the TTI), the
    /// capacity the cell offered where the queue emptied (the served bytes measured the arrivals, not the cell: as
    /// L4Span takes the rate from the MAC's allocation, not from the traffic). Sampling only the TTIs the cell
    /// limited left the average where it was while the queue kept emptying: after a fall to 2 Mbit/s, a rise to
    /// 20 went unseen, short bursts were predicted at the old rate and marked, and CUBIC never grew to the new
    /// rate. None until the first sample.
    rate: Option<f64>,
    /// ack_ece: flows found congested since the UE's last ACK of them.
    congested: HashSet<Flow>,
}

impl Marker {
    pub fn new(threshold_ns: u64, ack_ece: bool, tti_ns: u64) -> Marker {
        Marker {
            threshold_ns,
            ack_ece,
            tti_ns,
            window_ttis: (RATE_TIME_CONSTANT_NS / tti_ns).max(1) as f64,
            rate: None,
            congested: HashSet::new(),
        }
    }

    /// The queueing delay (ns) predicted for a packet that arrives behind `ahead_bytes`; None while no rate has
    /// been measured, infinite at a measured rate of 0 (outage, or other UEs served).
    pub fn predicted_delay_ns(&self, ahead_bytes: u64) -> Option<f64> {
        if ahead_bytes == 0 {
            return Some(0.0);
        }
        let rate = self.rate?;
        Some(if rate > 0.0 { ahead_bytes as f64 / rate * self.tti_ns as f64 } else { f64::INFINITY })
    }

    fn enqueue(&mut self, ahead_bytes: u64, packet: &mut [u8]) -> bool {
        let above = self.predicted_delay_ns(ahead_bytes).is_some_and(|delay| delay > self.threshold_ns as f64);
        if !above || !ecn::ecn_capable(packet) {
            return false;
        }
        if !self.ack_ece {
            return ecn::mark_ce(packet);
        }
        if let Some(flow) = ecn::downlink_flow(packet) {
            self.congested.insert(flow);
        }
        false
    }

    fn end_tti(&mut self, backlog_bytes: u64, served_bytes: u64, offered_bytes: u64) {
        if backlog_bytes == 0 {
            return;
        }
        let sample = if served_bytes < backlog_bytes { served_bytes } else { offered_bytes.max(served_bytes) } as f64;
        self.rate = Some(match self.rate {
            None => sample,
            Some(rate) => rate + (sample - rate) / self.window_ttis,
        });
    }

    fn uplink(&mut self, packet: &mut [u8]) -> bool {
        if self.congested.is_empty() {
            return false;
        }
        match ecn::acknowledging_flow(packet) {
            Some(flow) if self.congested.remove(&flow) => ecn::set_ece(packet),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecn::packets;

    const MS: u64 = 1_000_000;

    fn codel() -> CoDel {
        CoDel::new(5 * MS, 100 * MS, MS)
    }

    /// A head with plenty queued behind it.
    fn head(sojourn_ms: u64) -> Head {
        Head { sojourn_ns: sojourn_ms * MS, bytes_behind: 20 * MTU_BYTES, ecn_capable: false }
    }

    /// One packet dequeued per ms over `ms`, with `sojourn(t)`; after a drop the next packet is dequeued at the same
    /// time, as the RFC's dequeue does. The times (ms) of the drops.
    fn drops(codel: &mut CoDel, ms: std::ops::Range<u64>, sojourn: impl Fn(u64) -> u64) -> Vec<u64> {
        let mut times = Vec::new();
        for t in ms {
            while codel.dequeue(t * MS, &head(sojourn(t))) == Verdict::Drop {
                times.push(t);
                assert!(times.len() < 1000, "dropping without end at {t} ms");
            }
        }
        times
    }

    #[test]
    fn codel_drops_nothing_while_the_sojourn_stays_below_target() {
        let mut codel = codel();
        assert_eq!(drops(&mut codel, 0..1000, |t| t % 5), Vec::<u64>::new()); // 0..4 ms, always below 5 ms
        assert!(!codel.dropping);
    }

    #[test]
    fn codel_drops_first_after_an_interval_above_target_then_at_interval_over_sqrt_count() {
        let mut codel = codel();
        // Below target until 10 ms, then 6 ms from 10 ms on: first_above_time = 10 + 100 = 110 ms, the first drop.
        // Then drop_next = 110 + 100 = 210 (count 1); 210 + 100/sqrt(2) = 280.7107 -> the packet at 281 ms;
        // 280.7107 + 100/sqrt(3) = 338.4457 -> 339 ms; 338.4457 + 100/sqrt(4) = 388.4457 -> 389 ms;
        // 388.4457 + 100/sqrt(5) = 433.1671 -> 434 ms; 433.1671 + 100/sqrt(6) = 473.9919 -> 474 ms.
        let times = drops(&mut codel, 0..480, |t| if t < 10 { 4 } else { 6 });
        assert_eq!(times, [110, 210, 281, 339, 389, 434, 474]);
        assert_eq!(codel.count, 7);
    }

    #[test]
    fn codel_leaves_the_dropping_state_when_the_sojourn_falls_below_target() {
        let mut codel = codel();
        // Drops at 100, 200 (count 2, drop_next 270.7107); at 250 ms the sojourn is 4 ms: no drop at 271 although
        // the sojourn is back at 6 ms, and the next drop needs a new interval above target: 251 + 100 = 351 ms.
        let times = drops(&mut codel, 0..360, |t| if t == 250 { 4 } else { 6 });
        assert_eq!(times, [100, 200, 351]);
    }

    #[test]
    fn codel_reenters_soon_after_leaving_with_the_count_it_had_reached() {
        let mut codel = codel();
        // Drops at 110, 210, 281, 339, 389 (count 5, lastcount 1, drop_next 433.1671); below target at 400 ms.
        // Above again from 401 ms: entry at 501 ms, 67.8 ms after drop_next (< 16 intervals), so count =
        // 5 - 1 = 4 and the next drop is at 501 + 100/sqrt(4) = 551 ms (not 601 as from count 1); then count 5:
        // 551 + 100/sqrt(5) = 595.7214 -> 596 ms.
        let times = drops(&mut codel, 0..600, |t| if t < 10 || t == 400 { 4 } else { 6 });
        assert_eq!(times, [110, 210, 281, 339, 389, 501, 551, 596]);
    }

    #[test]
    fn codel_reenters_long_after_leaving_with_a_count_of_one() {
        let mut codel = codel();
        // As above, but back above target only at 2100 ms: entry at 2200 ms, 1766.8 ms after drop_next 433.1671
        // (>= 16 x 100 ms): count 1, next drop at 2300 ms.
        let sojourn = |t: u64| if t < 10 || (400..2100).contains(&t) { 4 } else { 6 };
        let times = drops(&mut codel, 0..2310, sojourn);
        assert_eq!(times, [110, 210, 281, 339, 389, 2200, 2300]);
    }

    #[test]
    fn codel_never_drops_with_at_most_one_mtu_behind() {
        let mut codel = codel();
        for t in 0..1000 {
            let head = Head { sojourn_ns: 50 * MS, bytes_behind: MTU_BYTES, ecn_capable: false };
            assert_eq!(codel.dequeue(t * MS, &head), Verdict::Send, "t = {t} ms");
        }
    }

    #[test]
    fn codel_empties_leave_the_dropping_state() {
        let mut codel = codel();
        assert_eq!(drops(&mut codel, 0..101, |_| 6), [100]);
        codel.empty();
        // A new interval above target from 150 ms: no drop before 250 ms.
        assert_eq!(drops(&mut codel, 150..251, |_| 6), [250]);
    }

    #[test]
    fn codel_marks_ecn_capable_packets_where_it_would_drop_and_keeps_its_schedule() {
        let mut codel = codel();
        let ect = |sojourn_ms| Head { ecn_capable: true, ..head(sojourn_ms) };
        let mut marks = Vec::new();
        for t in 0..300 {
            match codel.dequeue(t * MS, &ect(6)) {
                Verdict::Mark => marks.push(t),
                Verdict::Drop => panic!("dropped an ECN-capable packet at {t} ms"),
                Verdict::Send => {}
            }
        }
        // As the drops: 100, 200, 200 + 70.7107 -> 271 ms.
        assert_eq!(marks, [100, 200, 271]);
    }

    fn marker(threshold_ms: u64, ack_ece: bool) -> Marker {
        Marker::new(threshold_ms * MS, ack_ece, MS)
    }

    #[test]
    fn the_drain_rate_averages_the_cells_service_over_20_ms() {
        let mut marker = marker(15, false);
        assert_eq!(marker.predicted_delay_ns(3000), None);
        assert_eq!(marker.predicted_delay_ns(0), Some(0.0));
        marker.end_tti(5000, 1000, 1000); // first sample: 1000 bytes/TTI
        marker.end_tti(5000, 2000, 2000); // 1000 + (2000 - 1000) / 20 = 1050
        marker.end_tti(600, 600, 1050); // emptied the queue: the 1050 offered, 1050 + 0 / 20
        marker.end_tti(0, 0, 3000); // nothing queued: no sample
        // 21000 bytes at 1050 bytes/ms: 20 ms
        assert_eq!(marker.predicted_delay_ns(21_000), Some(20.0 * MS as f64));
        marker.end_tti(4000, 0, 0); // backlogged, nothing served: 1050 - 1050 / 20 = 997.5
        assert_eq!(marker.predicted_delay_ns(9975), Some(10.0 * MS as f64));
        // the queue emptied where the cell offered 3000 (the rate rose): 997.5 + (3000 - 997.5) / 20 = 1097.625,
        // and 43905 bytes drain in 40 ms
        marker.end_tti(600, 600, 3000);
        assert_eq!(marker.predicted_delay_ns(43_905), Some(40.0 * MS as f64));
    }

    #[test]
    fn mark_marks_ect_packets_predicted_above_the_threshold_and_nothing_else() {
        let mut marker = marker(15, false);
        marker.end_tti(10_000, 1000, 1000); // 1000 bytes per ms
        let mut below = packets::ipv4(1500, 0x02, 1);
        assert!(!marker.enqueue(14_900, &mut below)); // 14.9 ms
        assert_eq!(below[1], 0x02);
        let mut at = packets::ipv4(1500, 0x02, 1);
        assert!(!marker.enqueue(15_000, &mut at)); // 15 ms: not above
        let mut above = packets::ipv4(1500, 0x02, 1);
        assert!(marker.enqueue(15_100, &mut above)); // 15.1 ms
        assert_eq!(above[1], 0x03);
        assert!(packets::ipv4_header_is_valid(&above));
        let mut not_ect = packets::ipv4(1500, 0x00, 1);
        assert!(!marker.enqueue(100_000, &mut not_ect));
        assert_eq!(not_ect, packets::ipv4(1500, 0x00, 1));
    }

    #[test]
    fn mark_with_ack_ece_sets_ece_on_the_next_ack_of_the_congested_flow_only() {
        let mut marker = marker(15, true);
        marker.end_tti(10_000, 1000, 1000);
        let server = [10, 20, 0, 2];
        let ue = [172, 16, 0, 2];
        let mut data = packets::tcp(server, ue, (5201, 40000), 0x18, 0x02);
        let sent = data.clone();
        assert!(!marker.enqueue(20_000, &mut data), "the downlink packet is not marked");
        assert_eq!(data, sent);
        let mut other_flow = packets::tcp(ue, server, (40001, 5201), 0x10, 0);
        assert!(!marker.uplink(&mut other_flow));
        let mut ack = packets::tcp(ue, server, (40000, 5201), 0x10, 0);
        assert!(marker.uplink(&mut ack));
        assert_eq!(ack[33], 0x50);
        assert!(packets::tcp_is_valid(&ack));
        let mut next_ack = packets::tcp(ue, server, (40000, 5201), 0x10, 0);
        assert!(!marker.uplink(&mut next_ack), "one ECE per congestion found");
    }

    #[test]
    fn tail_drop_neither_marks_nor_drops() {
        let mut policy = Policy::new(Discipline::TailDrop, MS);
        let mut packet = packets::ipv4(1500, 0x02, 1);
        assert!(!policy.enqueue(10_000_000, &mut packet));
        assert_eq!(policy.dequeue(10_000, 0, 10_000_000, &mut packet), Verdict::Send);
        assert_eq!(packet, packets::ipv4(1500, 0x02, 1));
        assert!(!policy.decides_at_dequeue() && !policy.measures_rate());
    }
}
