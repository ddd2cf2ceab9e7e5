//! The cell: per-UE RLC queues, the scheduler and HARQ, run one TTI at a time, with the report counters.
//!
//! Pure: SDUs come in through `enqueue`, `run_tti` runs the next TTI and hands out the SDUs delivered in
//! it, `take_reports` closes a report period, and the UEs' uplink packets pass `uplink` (where a queue discipline
//! may set ECE on them) and, as they reach the base station, `regulate` (where an ACK Regulator may hold TCP ACKs,
//! ackreg.rs, released by later TTIs through `take_released`). The TTI index is the clock.

use crate::ackreg::{self, AckRegulator};
use crate::aqm::Policy;
use crate::config::SchedulerKind;
use crate::report::{Counters, UeReport};
use crate::rlc::{AqmDrop, Limits, Outcome, RlcQueue, Sdu};
use crate::scheduler::{Allocation, Scheduler};
use crate::trace::Trace;

/// How one UE's radio link behaves.
#[derive(Debug, Clone)]
pub struct UeParams {
    pub trace: Trace,
    pub limits: Limits,
    /// The RLC queue's discipline.
    pub policy: Policy,
    pub harq_bler: f64,
    /// TTIs between a failed transport block and its retransmission becoming eligible (at least 1).
    pub harq_rtt_ttis: u64,
    /// The ACK Regulator on the UE's uplink ACKs, if any.
    pub ack_regulator: Option<ackreg::Params>,
    /// The trace starts with the TTI after the UE's first uplink packet (`start_trace`), not with the cell.
    pub trace_starts_at_first_packet: bool,
}

/// An SDU written to UE `ue`'s TUN.
#[derive(Debug, PartialEq, Eq)]
pub struct Delivery {
    pub ue: usize,
    pub sdu: Sdu,
}

/// A report period that ended with the TTI just run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeriodEnd {
    pub period: u64,
    pub tti_end: u64,
}

#[derive(Debug)]
struct Ue {
    trace: Trace,
    /// The TTI that plays the trace's first entry; `None` until the UE's first uplink packet when the trace
    /// waits for it (entry 0 plays until then).
    trace_origin: Option<u64>,
    rlc: RlcQueue,
    harq_bler: f64,
    harq_rtt_ttis: u64,
    rng: SplitMix64,
    counters: Counters,
    regulator: Option<AckRegulator>,
}

#[derive(Debug)]
pub struct Cell {
    ues: Vec<Ue>,
    scheduler: Scheduler,
    report_period_ttis: u64,
    next_tti: u64,
    last_period: Option<PeriodEnd>,
    /// The SDUs the queue disciplines dropped in the TTI run last, by UE.
    aqm_drops: Vec<(usize, AqmDrop)>,
    capacity: Vec<u32>,
    backlog: Vec<u64>,
    allocation: Vec<Allocation>,
    delivered: Vec<Sdu>,
    released: Vec<Vec<u8>>,
}

impl Cell {
    pub fn new(
        kind: SchedulerKind,
        pf_window_ttis: u64,
        report_period_ttis: u64,
        seed: u64,
        ues: Vec<UeParams>,
    ) -> Cell {
        let n = ues.len();
        let ues = ues
            .into_iter()
            .enumerate()
            .map(|(i, p)| Ue {
                trace: p.trace,
                trace_origin: if p.trace_starts_at_first_packet { None } else { Some(0) },
                rlc: RlcQueue::new(p.limits, p.policy),
                harq_bler: p.harq_bler,
                harq_rtt_ttis: p.harq_rtt_ttis.max(1),
                // One independent stream per UE.
                rng: SplitMix64::new(seed ^ (i as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03)),
                counters: Counters::default(),
                regulator: p.ack_regulator.map(AckRegulator::new),
            })
            .collect();
        Cell {
            ues,
            scheduler: Scheduler::new(kind, n, pf_window_ttis),
            report_period_ttis,
            next_tti: 0,
            last_period: None,
            aqm_drops: Vec::new(),
            capacity: vec![0; n],
            backlog: vec![0; n],
            allocation: vec![Allocation::default(); n],
            delivered: Vec::new(),
            released: Vec::new(),
        }
    }

    /// The SDUs the queue disciplines dropped in the TTI `run_tti` ran last, with their UE (for the packet log).
    pub fn aqm_drops(&self) -> &[(usize, AqmDrop)] {
        &self.aqm_drops
    }

    /// The index of the next TTI `run_tti` runs (= TTIs run so far).
    pub fn next_tti(&self) -> u64 {
        self.next_tti
    }

    /// The TTI at which UE `ue`'s trace started (its t = 0); none while it waits for the UE's first packet.
    pub fn trace_origin(&self, ue: usize) -> Option<u64> {
        self.ues[ue].trace_origin
    }

    /// An SDU enters UE `ue`'s RLC queue (after the backhaul delay); given back when dropped at the tail.
    pub fn enqueue(&mut self, ue: usize, sdu: Sdu) -> Result<(), Sdu> {
        let state = &mut self.ues[ue];
        let len = sdu.data.len() as u64;
        if let Some(regulator) = &mut state.regulator {
            regulator.arrived(&sdu.data);
        }
        match state.rlc.offer(sdu) {
            Ok(()) => {
                state.counters.arrived_sdus += 1;
                state.counters.arrived_bytes += len;
                Ok(())
            }
            Err(sdu) => {
                state.counters.dropped_sdus += 1;
                state.counters.dropped_bytes += len;
                Err(sdu)
            }
        }
    }

    /// UE `ue` sends a packet: a trace that waits for its first packet starts with the next TTI. True when it
    /// starts now (the caller starts the UE's replayed uplink transmissions with it).
    pub fn start_trace(&mut self, ue: usize) -> bool {
        let state = &mut self.ues[ue];
        if state.trace_origin.is_some() {
            return false;
        }
        state.trace_origin = Some(self.next_tti);
        true
    }

    /// An uplink packet of UE `ue` passes on its way to the core; its queue discipline may set ECE on it.
    pub fn uplink(&mut self, ue: usize, packet: &mut [u8]) {
        let state = &mut self.ues[ue];
        if state.rlc.uplink(packet) {
            state.counters.ece_marked_acks += 1;
        }
    }

    /// An uplink packet of UE `ue` reaches the base station: appended to `out` to go on, or held by the UE's ACK
    /// Regulator (with those it releases now).
    pub fn regulate(&mut self, ue: usize, packet: Vec<u8>, out: &mut Vec<Vec<u8>>) {
        match &mut self.ues[ue].regulator {
            Some(regulator) => regulator.offer(packet, out),
            None => out.push(packet),
        }
    }

    /// The uplink packets the ACK Regulators released in the TTIs run since the last call.
    pub fn take_released(&mut self, out: &mut Vec<Vec<u8>>) {
        out.append(&mut self.released);
    }

    /// Runs the next TTI; SDUs completed in it are appended to `out` in delivery order. Returns the report
    /// period that ended with this TTI, if one did.
    pub fn run_tti(&mut self, out: &mut Vec<Delivery>) -> Option<PeriodEnd> {
        let tti = self.next_tti;
        self.aqm_drops.clear();
        for (i, ue) in self.ues.iter_mut().enumerate() {
            let capacity = ue.trace.at(ue.trace_origin.map_or(0, |origin| tti - origin));
            self.capacity[i] = capacity.bytes;
            ue.counters.capacity_bytes += capacity.bytes as u64;
            ue.counters.outage_ttis += capacity.outage as u64;
            ue.rlc.start_tti(tti);
            self.backlog[i] = ue.rlc.backlog(tti);
        }
        self.scheduler.allocate(&self.capacity, &self.backlog, &mut self.allocation);
        for (i, ue) in self.ues.iter_mut().enumerate() {
            let allocation = self.allocation[i];
            let counters = &mut ue.counters;
            if self.backlog[i] > 0 {
                counters.backlogged_ttis += 1;
                counters.backlogged_capacity_bytes += allocation.offered;
            }
            if allocation.bytes >= self.backlog[i] {
                // nothing left to send after this TTI (nothing waited, or its grant took all): what it could have
                // carried beyond is the capacity the empty queue left unused
                counters.idle_ttis += 1;
                counters.idle_capacity_bytes += self.scheduler.unused_capacity(self.capacity[i], allocation.bytes);
            }
            if allocation.bytes == 0 {
                continue;
            }
            counters.grant_ttis += 1;
            counters.granted_capacity_bytes += self.capacity[i] as u64;
            let failed = ue.harq_bler > 0.0 && ue.rng.uniform() < ue.harq_bler;
            let outcome =
                if failed { Outcome::Failed { retry_tti: tti + ue.harq_rtt_ttis } } else { Outcome::Received };
            let served = ue.rlc.transmit(tti, allocation.bytes, outcome, &mut self.delivered);
            self.aqm_drops.extend(ue.rlc.take_aqm_drops().map(|drop| (i, drop)));
            counters.sched_new_bytes += served.new;
            counters.sched_retx_bytes += served.retx;
            for sdu in self.delivered.drain(..) {
                counters.delivered_sdus += 1;
                counters.delivered_bytes += sdu.data.len() as u64;
                out.push(Delivery { ue: i, sdu });
            }
        }
        for (ue, allocation) in self.ues.iter_mut().zip(&self.allocation) {
            ue.rlc.end_tti(allocation.offered);
            if let Some(regulator) = &mut ue.regulator {
                let queue = ue.rlc.new_bytes() + ue.rlc.retx_bytes();
                regulator.end_tti(tti, queue, &mut self.released);
                let counts = regulator.take_counts();
                ue.counters.held_acks += counts.held_acks;
                ue.counters.held_ack_ttis += counts.held_ttis;
                ue.counters.forced_acks += counts.forced_acks;
                ue.counters.ece_marked_acks += counts.ece_acks;
            }
            let (sdus, bytes) = ue.rlc.take_discarded();
            ue.counters.discarded_sdus += sdus;
            ue.counters.discarded_bytes += bytes;
            let aqm = ue.rlc.take_aqm();
            ue.counters.ce_marked_sdus += aqm.ce_marked_sdus;
            ue.counters.aqm_dropped_sdus += aqm.dropped_sdus;
            ue.counters.aqm_dropped_bytes += aqm.dropped_bytes;
        }
        self.next_tti += 1;
        if (tti + 1) % self.report_period_ttis == 0 {
            let end = PeriodEnd { period: tti / self.report_period_ttis, tti_end: tti };
            self.last_period = Some(end);
            Some(end)
        } else {
            None
        }
    }

    /// The reports of the period that ended last (one per UE), stamped `time_ns`; counters restart at zero.
    pub fn take_reports(&mut self, time_ns: u64, out: &mut Vec<UeReport>) {
        let Some(end) = self.last_period.take() else { return };
        for (i, ue) in self.ues.iter_mut().enumerate() {
            out.push(UeReport {
                kind: "ue",
                ue: i,
                period: end.period,
                tti_end: end.tti_end,
                time_ns,
                queue_new_bytes: ue.rlc.new_bytes(),
                queue_retx_bytes: ue.rlc.retx_bytes(),
                queue_sdus: ue.rlc.sdus(),
                counters: std::mem::take(&mut ue.counters),
            });
        }
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a small seeded generator, plenty for Bernoulli HARQ failures.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::Discipline;
    use crate::ecn::packets;
    use crate::trace::OUTAGE;

    fn ue(trace: &[u32]) -> UeParams {
        UeParams {
            trace: Trace::new(trace.to_vec()).unwrap(),
            limits: Limits { bytes: 0, sdus: 0, discard_ttis: 0 },
            policy: Policy::TailDrop,
            harq_bler: 0.0,
            harq_rtt_ttis: 8,
            ack_regulator: None,
            trace_starts_at_first_packet: false,
        }
    }

    fn packet(len: usize, tag: u8) -> Sdu {
        Sdu { data: vec![tag; len], arrival_ns: 0, ce_marked: false }
    }

    fn fill(cell: &mut Cell, ue: usize, packets: usize, len: usize) {
        for k in 0..packets {
            cell.enqueue(ue, packet(len, k as u8)).unwrap();
        }
    }

    fn run(cell: &mut Cell, ttis: u64) -> (Vec<Delivery>, Vec<UeReport>) {
        let mut out = Vec::new();
        let mut reports = Vec::new();
        for _ in 0..ttis {
            if cell.run_tti(&mut out).is_some() {
                cell.take_reports(7, &mut reports);
            }
        }
        (out, reports)
    }

    #[test]
    fn a_backlogged_ue_is_served_exactly_its_trace_capacity_each_tti() {
        let trace = [1250, 3000, 0, 700, 1500];
        let mut cell = Cell::new(SchedulerKind::Dedicated, 100, 1, 1, vec![ue(&trace)]);
        fill(&mut cell, 0, 100, 1500);
        let (out, reports) = run(&mut cell, 10);
        let served: Vec<u64> = reports.iter().map(|r| r.counters.sched_new_bytes).collect();
        assert_eq!(served, [1250, 3000, 0, 700, 1500, 1250, 3000, 0, 700, 1500]);
        // 12900 bytes served: the first 8 whole 1500-byte packets are delivered, in order.
        assert_eq!(out.iter().map(|d| d.sdu.data[0]).collect::<Vec<_>>(), (0..8).collect::<Vec<u8>>());
        assert_eq!(reports[9].queue_new_bytes, 100 * 1500 - 12900);
    }

    #[test]
    fn a_trace_that_waits_for_the_first_packet_plays_its_first_entry_until_then() {
        let mut params = ue(&[100, 200, 300, 400]);
        params.trace_starts_at_first_packet = true;
        let mut cell = Cell::new(SchedulerKind::Dedicated, 100, 1, 1, vec![params]);
        fill(&mut cell, 0, 10, 1500);
        let (_, before) = run(&mut cell, 3);
        assert!(cell.start_trace(0)); // the first packet: entry 0 plays in TTI 3
        assert!(!cell.start_trace(0)); // later ones change nothing
        let (_, after) = run(&mut cell, 5);
        let served: Vec<u64> = before.iter().chain(&after).map(|r| r.counters.sched_new_bytes).collect();
        assert_eq!(served, [100, 100, 100, 100, 200, 300, 400, 100]);
        // a trace that starts with the cell ignores the packet
        let mut cell = Cell::new(SchedulerKind::Dedicated, 100, 1, 1, vec![ue(&[100, 200, 300, 400])]);
        fill(&mut cell, 0, 10, 1500);
        run(&mut cell, 3);
        assert!(!cell.start_trace(0));
        let (_, reports) = run(&mut cell, 2);
        assert_eq!(reports.iter().map(|r| r.counters.sched_new_bytes).collect::<Vec<_>>(), [400, 100]);
    }

    #[test]
    fn a_report_period_carries_the_counters_and_the_queue_snapshot() {
        let mut cell = Cell::new(SchedulerKind::Dedicated, 100, 10, 1, vec![ue(&[1000])]);
        fill(&mut cell, 0, 10, 1500);
        let (out, reports) = run(&mut cell, 10);
        assert_eq!(reports.len(), 1);
        let r = &reports[0];
        assert_eq!((r.period, r.tti_end, r.time_ns), (0, 9, 7));
        let c = r.counters;
        assert_eq!((c.sched_new_bytes, c.sched_retx_bytes, c.grant_ttis), (10_000, 0, 10));
        assert_eq!((c.capacity_bytes, c.granted_capacity_bytes), (10_000, 10_000));
        assert_eq!((c.backlogged_ttis, c.backlogged_capacity_bytes), (10, 10_000));
        assert_eq!((c.arrived_sdus, c.arrived_bytes), (10, 15_000));
        assert_eq!((c.delivered_sdus, c.delivered_bytes), (6, 9_000));
        assert_eq!((r.queue_new_bytes, r.queue_retx_bytes, r.queue_sdus), (5_000, 0, 4));
        assert_eq!(out.len(), 6);
        // The next period starts from zero.
        let (_, reports) = run(&mut cell, 10);
        assert_eq!((reports[0].period, reports[0].tti_end), (1, 19));
        assert_eq!(reports[0].counters.arrived_sdus, 0);
        assert_eq!(reports[0].counters.sched_new_bytes, 5_000);
        assert_eq!(reports[0].counters.backlogged_ttis, 5);
        // the 5th TTI's grant took the last 1000 bytes, and the other 5 offered their 1000 bytes each to an empty
        // queue: 6 idle TTIs, 5000 bytes unused
        assert_eq!((c.idle_ttis, c.idle_capacity_bytes), (0, 0));
        assert_eq!((reports[0].counters.idle_ttis, reports[0].counters.idle_capacity_bytes), (6, 5_000));
    }

    #[test]
    fn outage_ttis_serve_nothing_and_are_counted() {
        let mut cell = Cell::new(SchedulerKind::Dedicated, 100, 4, 1, vec![ue(&[1000, OUTAGE, OUTAGE, 1000])]);
        fill(&mut cell, 0, 10, 1000);
        let (out, reports) = run(&mut cell, 4);
        let c = reports[0].counters;
        assert_eq!((c.outage_ttis, c.capacity_bytes, c.sched_new_bytes, c.grant_ttis), (2, 2000, 2000, 2));
        assert_eq!((c.backlogged_ttis, c.backlogged_capacity_bytes), (4, 2000));
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn tail_drops_are_counted_and_not_arrivals() {
        let mut params = ue(&[0]);
        params.limits = Limits { bytes: 4000, sdus: 0, discard_ttis: 0 };
        let mut cell = Cell::new(SchedulerKind::Dedicated, 100, 1, 1, vec![params]);
        let refused: Vec<bool> = (0..5).map(|k| cell.enqueue(0, packet(1500, k)).is_err()).collect();
        assert_eq!(refused, [false, false, true, true, true]);
        let (_, reports) = run(&mut cell, 1);
        let c = reports[0].counters;
        assert_eq!((c.arrived_sdus, c.arrived_bytes, c.dropped_sdus, c.dropped_bytes), (2, 3000, 3, 4500));
        assert_eq!(reports[0].queue_sdus, 2);
    }

    #[test]
    fn harq_failures_delay_in_order_delivery_and_count_retransmitted_bytes() {
        let mut params = ue(&[1500]);
        params.harq_bler = 0.3;
        params.harq_rtt_ttis = 8;
        let mut cell = Cell::new(SchedulerKind::Dedicated, 100, 1000, 42, vec![params]);
        let packets = 400;
        for k in 0..packets {
            cell.enqueue(0, Sdu { data: vec![0; 1500], arrival_ns: k, ce_marked: false }).unwrap();
        }
        let (out, reports) = run(&mut cell, 1000);
        let c = reports[0].counters;
        // Every packet eventually gets through, in order, and failures cost retransmitted bytes.
        assert_eq!(out.len(), packets as usize);
        assert!(out.iter().enumerate().all(|(k, d)| d.sdu.arrival_ns == k as u64));
        assert_eq!(c.sched_new_bytes, 400 * 1500);
        let retx_share = c.sched_retx_bytes as f64 / (c.sched_new_bytes + c.sched_retx_bytes) as f64;
        assert!((retx_share - 0.3).abs() < 0.05, "retransmitted share {retx_share}");
        assert_eq!(c.delivered_bytes, 400 * 1500);
        // One 1500-byte block a TTI, one draw of UE 0's stream per block sent: each failed draw is one block sent
        // again. Replayed, the draws until the 400th success give the blocks retransmitted.
        let mut rng = SplitMix64::new(42 ^ 0xD1B5_4A32_D192_ED03);
        let (mut successes, mut failures) = (0, 0u64);
        while successes < packets {
            if rng.uniform() < 0.3 { failures += 1 } else { successes += 1 }
        }
        assert_eq!(c.sched_retx_bytes, failures * 1500);
    }

    #[test]
    fn one_failure_holds_back_later_packets_until_its_retransmission() {
        let mut params = ue(&[1000]);
        params.harq_bler = 0.5;
        params.harq_rtt_ttis = 8;
        // Find a seed whose first draw fails and the next nine succeed.
        let seed = (0..10_000u64)
            .find(|&seed| {
                let mut rng = SplitMix64::new(seed ^ 0xD1B5_4A32_D192_ED03);
                rng.uniform() < 0.5 && (0..9).all(|_| rng.uniform() >= 0.5)
            })
            .unwrap();
        let mut cell = Cell::new(SchedulerKind::Dedicated, 100, 1, seed, vec![params]);
        fill(&mut cell, 0, 8, 1000);
        let mut out = Vec::new();
        let mut delivered_at = Vec::new();
        for tti in 0..9 {
            cell.run_tti(&mut out);
            delivered_at.push((tti, out.len()));
        }
        // TTI 0 fails; TTIs 1..7 carry packets 2..8, held back; TTI 8 resends packet 1 and all 8 go out.
        assert_eq!(delivered_at, (0..9).map(|t| (t, if t < 8 { 0 } else { 8 })).collect::<Vec<_>>());
        let mut reports = Vec::new();
        cell.take_reports(0, &mut reports);
        assert_eq!(reports[0].counters.sched_retx_bytes, 1000);
    }

    #[test]
    fn round_robin_cell_alternates_and_the_waiting_ue_counts_a_zero_offer() {
        let mut cell = Cell::new(SchedulerKind::RoundRobin, 100, 2, 1, vec![ue(&[1000]), ue(&[1000])]);
        fill(&mut cell, 0, 10, 1000);
        fill(&mut cell, 1, 10, 1000);
        let (out, reports) = run(&mut cell, 2);
        assert_eq!(out.iter().map(|d| d.ue).collect::<Vec<_>>(), [0, 1]);
        for r in &reports {
            assert_eq!((r.counters.grant_ttis, r.counters.backlogged_ttis), (1, 2));
            assert_eq!(r.counters.backlogged_capacity_bytes, 1000);
            assert_eq!(r.counters.capacity_bytes, 2000);
        }
    }

    #[test]
    fn a_shared_cell_is_work_conserving() {
        // UE 0 needs 250 of its 1000 bytes (25 % of the TTI); UE 1 gets 75 % of its 2000 bytes.
        let mut cell = Cell::new(SchedulerKind::RoundRobin, 100, 1, 1, vec![ue(&[1000]), ue(&[2000])]);
        cell.enqueue(0, packet(250, 0)).unwrap();
        fill(&mut cell, 1, 10, 500);
        let (out, reports) = run(&mut cell, 1);
        assert_eq!(reports[0].counters.sched_new_bytes, 250);
        assert_eq!(reports[1].counters.sched_new_bytes, 1500);
        assert_eq!(reports[1].counters.backlogged_capacity_bytes, 1500);
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn an_idle_ue_of_a_shared_cell_is_offered_what_the_others_left() {
        // UE 1 sends all it has, 1500 of its 2000 bytes (75 % of the TTI): the 25 % left would have carried 250 of
        // UE 0's 1000, whose queue is empty, and 500 more of UE 1's; the next TTI nobody is served, and each could
        // have had all its capacity.
        let mut cell = Cell::new(SchedulerKind::RoundRobin, 100, 2, 1, vec![ue(&[1000]), ue(&[2000])]);
        cell.enqueue(1, packet(1500, 0)).unwrap();
        let (_, reports) = run(&mut cell, 2);
        let counted = |r: &UeReport| (r.counters.backlogged_ttis, r.counters.idle_ttis, r.counters.idle_capacity_bytes);
        assert_eq!(counted(&reports[0]), (0, 2, 1250));
        assert_eq!(counted(&reports[1]), (1, 2, 2500));
    }

    #[test]
    fn an_empty_queue_gets_no_grant_and_is_not_backlogged() {
        let mut cell = Cell::new(SchedulerKind::ProportionalFair, 100, 3, 1, vec![ue(&[1000])]);
        let (out, reports) = run(&mut cell, 3);
        assert!(out.is_empty());
        let c = reports[0].counters;
        assert_eq!((c.grant_ttis, c.backlogged_ttis, c.capacity_bytes, c.granted_capacity_bytes), (0, 0, 3000, 0));
    }

    const MS: u64 = 1_000_000;
    const UNLIMITED: Limits = Limits { bytes: 0, sdus: 0, discard_ttis: 0 };

    fn with_discipline(discipline: Discipline, limits: Limits) -> UeParams {
        UeParams { policy: Policy::new(discipline, MS), limits, ..ue(&[1000]) }
    }

    #[test]
    fn the_sdus_codel_drops_are_handed_out_with_their_ue_in_the_tti_that_drops_them() {
        // As below without the limit: UE 1 (tail drop) stays idle; CoDel drops SDUs 12, 23 and 32 of UE 0 at TTIs
        // 12, 22 and 30, and each TTI's list holds only its own drops.
        let codel = with_discipline(Discipline::CoDel { target_ns: 2 * MS, interval_ns: 10 * MS }, UNLIMITED);
        let mut cell = Cell::new(SchedulerKind::Dedicated, 100, 1000, 1, vec![codel, ue(&[1000])]);
        for k in 0..40 {
            cell.enqueue(0, Sdu { data: vec![k; 1000], arrival_ns: k as u64, ce_marked: false }).unwrap();
        }
        let mut out = Vec::new();
        let mut drops = Vec::new();
        for tti in 0..31u64 {
            cell.run_tti(&mut out);
            drops.extend(cell.aqm_drops().iter().map(|&(ue, drop)| (tti, ue, drop.arrival_ns, drop.length)));
        }
        assert_eq!(drops, [(12, 0, 12, 1000), (22, 0, 23, 1000), (30, 0, 32, 1000)]);
        assert!(out.iter().all(|d| !d.sdu.ce_marked));
    }

    #[test]
    fn codel_drops_are_counted_apart_from_tail_drops_and_discards() {
        // 1000 bytes per TTI; 40 SDUs of 1000 bytes offered, 35 fit under the limit (5 tail drops). CoDel (2 ms,
        // 10 ms) then drops SDUs 12, 23 and 32 at TTIs 12, 22 and 30, as in rlc.rs's test (SDU 32 still has 2000
        // bytes behind it, more than one MTU); 31 TTIs deliver 31 SDUs.
        let limits = Limits { bytes: 35_000, sdus: 0, discard_ttis: 0 };
        let params = with_discipline(Discipline::CoDel { target_ns: 2 * MS, interval_ns: 10 * MS }, limits);
        let mut cell = Cell::new(SchedulerKind::Dedicated, 100, 31, 1, vec![params]);
        let refused = (0..40).filter(|&k| cell.enqueue(0, packet(1000, k)).is_err()).count();
        assert_eq!(refused, 5);
        let (out, reports) = run(&mut cell, 31);
        let c = reports[0].counters;
        assert_eq!((c.dropped_sdus, c.dropped_bytes), (5, 5000));
        assert_eq!((c.aqm_dropped_sdus, c.aqm_dropped_bytes, c.ce_marked_sdus), (3, 3000, 0));
        assert_eq!((c.discarded_sdus, c.arrived_sdus, c.delivered_sdus), (0, 35, 31));
        assert!(out.iter().all(|d| ![12, 23, 32].contains(&d.sdu.data[0])));
    }

    #[test]
    fn mark_counts_the_packets_it_marks_ce() {
        // 1000 bytes per TTI measured in TTI 0; then 20000 bytes queued ahead of an ECT packet: 20 ms > 15 ms.
        let params = with_discipline(Discipline::Mark { threshold_ns: 15 * MS, ack_ece: false }, UNLIMITED);
        let mut cell = Cell::new(SchedulerKind::Dedicated, 100, 2, 1, vec![params]);
        fill(&mut cell, 0, 5, 1000);
        let mut out = Vec::new();
        cell.run_tti(&mut out);
        fill(&mut cell, 0, 16, 1000);
        cell.enqueue(0, Sdu { data: packets::ipv4(1000, 0x01, 9), arrival_ns: 0, ce_marked: false }).unwrap();
        cell.run_tti(&mut out);
        let mut reports = Vec::new();
        cell.take_reports(0, &mut reports);
        assert_eq!((reports[0].counters.ce_marked_sdus, reports[0].counters.ece_marked_acks), (1, 0));
    }

    #[test]
    fn mark_with_ack_ece_sets_ece_on_the_ues_next_ack_of_the_flow_and_counts_it() {
        let discipline = Discipline::Mark { threshold_ns: 15 * MS, ack_ece: true };
        let mut cell = Cell::new(SchedulerKind::Dedicated, 100, 2, 1, vec![with_discipline(discipline, UNLIMITED)]);
        let (server, phone) = ([10, 20, 0, 2], [172, 16, 0, 2]);
        fill(&mut cell, 0, 5, 1000);
        let mut out = Vec::new();
        cell.run_tti(&mut out);
        fill(&mut cell, 0, 16, 1000);
        let data = packets::tcp(server, phone, (5201, 40000), 0x18, 0x02);
        cell.enqueue(0, Sdu { data: data.clone(), arrival_ns: 0, ce_marked: false }).unwrap();
        let mut ack = packets::tcp(phone, server, (40000, 5201), 0x10, 0x00);
        cell.uplink(0, &mut ack);
        assert_eq!(ack[33], 0x50);
        assert!(packets::tcp_is_valid(&ack));
        cell.run_tti(&mut out);
        let mut reports = Vec::new();
        cell.take_reports(0, &mut reports);
        assert_eq!((reports[0].counters.ce_marked_sdus, reports[0].counters.ece_marked_acks), (0, 1));
    }

    #[test]
    fn harq_draws_are_reproducible_from_the_seed() {
        let make = |seed| {
            let mut params = ue(&[500]);
            params.harq_bler = 0.2;
            let mut cell = Cell::new(SchedulerKind::Dedicated, 100, 100, seed, vec![params]);
            fill(&mut cell, 0, 100, 100);
            run(&mut cell, 100).1[0].counters
        };
        assert_eq!(make(5), make(5));
        assert_ne!(make(5), make(6));
    }
}
