//! One UE's downlink RLC queue (INTERFACE.md, "TTI clock and scheduler" and "HARQ").
//!
//! SDUs (IP packets) are queued whole and served as bytes: the queue is one byte stream, each SDU a range of
//! it, and a transport block is a list of ranges of that stream. A failed block's ranges come back as
//! retransmission records, served before new data once eligible. An SDU is delivered when all its bytes were
//! received and every earlier SDU was delivered (RLC AM, in order). Time is the TTI index, an argument.
//!
//! With a discard timer (PDCP's `discard_timer`, 3GPP TS 36.323 5.4: srsenb's QCI 9 bearer has 150 ms), an SDU
//! none of whose bytes was sent yet is discarded once it has waited that many TTIs: checked at every TTI's start
//! (`start_tti`) and, within a transport block, at every SDU it reaches. An SDU is stamped with the TTI that runs
//! next when it is offered.
//!
//! A queue discipline (aqm.rs) is consulted when an SDU is admitted and when an SDU's first byte goes into a
//! transport block (its dequeue): it may mark the SDU CE, or drop it whole, as the discard timer does. An SDU partly
//! transmitted is never dropped.

use std::collections::VecDeque;

use crate::aqm::{Policy, Verdict};

/// A downlink IP packet and when it was read from the SGi TUN (`CLOCK_REALTIME`, ns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sdu {
    pub data: Vec<u8>,
    pub arrival_ns: u64,
    /// The queue discipline marked it CE (for the packet log: a packet that came in CE is not counted).
    pub ce_marked: bool,
}

/// An SDU the queue discipline dropped, for the packet log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AqmDrop {
    pub arrival_ns: u64,
    pub length: u64,
}

/// Queue limits; 0 means no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub bytes: u64,
    pub sdus: u64,
    /// TTIs an SDU may wait untransmitted before it is discarded.
    pub discard_ttis: u64,
}

/// What happened to the transport block a UE got in a TTI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Received,
    /// Not received: its bytes are retransmitted from TTI `retry_tti` on.
    Failed {
        retry_tti: u64,
    },
}

/// What the queue discipline did since `take_aqm`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AqmCounts {
    pub ce_marked_sdus: u64,
    pub dropped_sdus: u64,
    pub dropped_bytes: u64,
}

/// Bytes served in one transport block, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Served {
    pub retx: u64,
    pub new: u64,
}

#[derive(Debug)]
struct Queued {
    /// Offset of the SDU's first byte in the queue's byte stream.
    start: u64,
    received: u64,
    /// The TTI that ran next when the SDU was offered.
    stamp: u64,
    discarded: bool,
    sdu: Sdu,
}

impl Queued {
    fn end(&self) -> u64 {
        self.start + self.sdu.data.len() as u64
    }
}

#[derive(Debug, Clone, Copy)]
struct Retx {
    eligible_tti: u64,
    start: u64,
    end: u64,
}

#[derive(Debug)]
pub struct RlcQueue {
    limits: Limits,
    /// SDUs not yet delivered, in order.
    sdus: VecDeque<Queued>,
    /// Stream offset of the first byte never transmitted.
    next_new: u64,
    /// Stream offset after the last queued SDU.
    end: u64,
    /// Failed bytes waiting for retransmission, ordered by eligibility.
    retx: VecDeque<Retx>,
    retx_bytes: u64,
    /// Scratch: the stream ranges of the transport block being built.
    block: Vec<(u64, u64)>,
    /// The TTI that runs next, for the stamps.
    next_tti: u64,
    /// SDUs and bytes discarded since `take_discarded`.
    discarded: (u64, u64),
    policy: Policy,
    aqm: AqmCounts,
    /// The SDUs the discipline dropped since `take_aqm_drops`.
    aqm_drops: Vec<AqmDrop>,
    /// For the policy's rate measurement: the backlog at the current TTI's start and the bytes served in it.
    tti_backlog: u64,
    tti_served: u64,
}

impl RlcQueue {
    pub fn new(limits: Limits, policy: Policy) -> RlcQueue {
        RlcQueue {
            limits,
            sdus: VecDeque::new(),
            next_new: 0,
            end: 0,
            retx: VecDeque::new(),
            retx_bytes: 0,
            block: Vec::new(),
            next_tti: 0,
            discarded: (0, 0),
            policy,
            aqm: AqmCounts::default(),
            aqm_drops: Vec::new(),
            tti_backlog: 0,
            tti_served: 0,
        }
    }

    /// Bytes awaiting their first transmission.
    pub fn new_bytes(&self) -> u64 {
        self.end - self.next_new
    }

    /// Bytes awaiting retransmission, eligible or not yet.
    pub fn retx_bytes(&self) -> u64 {
        self.retx_bytes
    }

    /// SDUs not yet delivered (waiting, partly sent, or waiting for an earlier SDU).
    pub fn sdus(&self) -> u64 {
        self.sdus.len() as u64
    }

    /// Appends an SDU at the tail, or gives it back when it would exceed a limit (tail drop).
    /// The byte limit applies to new plus retransmission bytes, the SDU limit to `sdus()`.
    pub fn offer(&mut self, mut sdu: Sdu) -> Result<(), Sdu> {
        let len = sdu.data.len() as u64;
        let ahead = self.new_bytes() + self.retx_bytes;
        let over_bytes = self.limits.bytes > 0 && ahead + len > self.limits.bytes;
        let over_sdus = self.limits.sdus > 0 && self.sdus() + 1 > self.limits.sdus;
        if over_bytes || over_sdus {
            return Err(sdu);
        }
        if self.policy.enqueue(ahead, &mut sdu.data) {
            self.aqm.ce_marked_sdus += 1;
            sdu.ce_marked = true;
        }
        self.sdus.push_back(Queued { start: self.end, received: 0, stamp: self.next_tti, discarded: false, sdu });
        self.end += len;
        Ok(())
    }

    /// TTI `tti` begins: SDUs that waited the discard timer untransmitted are discarded.
    pub fn start_tti(&mut self, tti: u64) {
        self.next_tti = tti;
        self.discard_stale(tti);
        if self.new_bytes() == 0 {
            self.policy.empty();
        }
        if self.policy.measures_rate() {
            self.tti_backlog = self.backlog(tti);
            self.tti_served = 0;
        }
    }

    /// The TTI started last has ended (whether or not the UE was served in it); the cell offered the UE
    /// `offered_bytes` in it.
    pub fn end_tti(&mut self, offered_bytes: u64) {
        if self.policy.measures_rate() {
            self.policy.end_tti(self.tti_backlog, self.tti_served, offered_bytes);
        }
    }

    /// What the queue discipline marked and dropped since the last call.
    pub fn take_aqm(&mut self) -> AqmCounts {
        std::mem::take(&mut self.aqm)
    }

    /// The SDUs the discipline dropped since the last call, in order.
    pub fn take_aqm_drops(&mut self) -> std::vec::Drain<'_, AqmDrop> {
        self.aqm_drops.drain(..)
    }

    /// An uplink packet of this UE passes: the discipline may set ECE on it (true).
    pub fn uplink(&mut self, packet: &mut [u8]) -> bool {
        self.policy.uplink(packet)
    }

    /// SDUs and bytes discarded since the last call.
    pub fn take_discarded(&mut self) -> (u64, u64) {
        std::mem::take(&mut self.discarded)
    }

    /// Discards, from the first byte never transmitted on, every whole SDU that waited the discard timer.
    fn discard_stale(&mut self, tti: u64) {
        if self.limits.discard_ttis == 0 {
            return;
        }
        let mut index = self.sdus.partition_point(|q| q.end() <= self.next_new);
        while let Some(queued) = self.sdus.get_mut(index) {
            if queued.start != self.next_new || tti < queued.stamp + self.limits.discard_ttis {
                break;
            }
            let len = queued.sdu.data.len() as u64;
            queued.received = len;
            queued.discarded = true;
            self.next_new += len;
            self.discarded.0 += 1;
            self.discarded.1 += len;
            index += 1;
        }
        while self.sdus.front().is_some_and(|q| q.discarded) {
            self.sdus.pop_front();
        }
    }

    /// Bytes the scheduler can serve in TTI `tti`: eligible retransmissions plus new data.
    pub fn backlog(&self, tti: u64) -> u64 {
        let eligible: u64 = self.retx.iter().take_while(|r| r.eligible_tti <= tti).map(|r| r.end - r.start).sum();
        eligible + self.new_bytes()
    }

    /// Serves up to `budget` bytes in TTI `tti`, eligible retransmissions first, then new data, as one
    /// transport block with `outcome`. SDUs completed in order are appended to `delivered`.
    pub fn transmit(&mut self, tti: u64, budget: u64, outcome: Outcome, delivered: &mut Vec<Sdu>) -> Served {
        let mut left = budget;
        let mut served = Served::default();
        self.block.clear();
        while left > 0 {
            let Some(front) = self.retx.front_mut() else { break };
            if front.eligible_tti > tti {
                break;
            }
            let take = left.min(front.end - front.start);
            self.block.push((front.start, front.start + take));
            front.start += take;
            left -= take;
            served.retx += take;
            if front.start == front.end {
                self.retx.pop_front();
            }
        }
        self.retx_bytes -= served.retx;
        let dequeues = self.policy.decides_at_dequeue();
        if self.limits.discard_ttis == 0 && !dequeues {
            let take = left.min(self.new_bytes());
            if take > 0 {
                self.block.push((self.next_new, self.next_new + take));
                self.next_new += take;
                served.new = take;
            }
        } else {
            // SDU by SDU, so that each one reached is checked against the timer and each one started is dequeued
            loop {
                self.discard_stale(tti);
                if left == 0 || self.new_bytes() == 0 {
                    break;
                }
                let index = self.sdus.partition_point(|q| q.end() <= self.next_new);
                if dequeues && self.sdus[index].start == self.next_new && self.dequeue(tti, index) == Verdict::Drop {
                    continue;
                }
                let take = left.min(self.sdus[index].end() - self.next_new);
                match self.block.last_mut() {
                    Some(last) if last.1 == self.next_new => last.1 += take,
                    _ => self.block.push((self.next_new, self.next_new + take)),
                }
                self.next_new += take;
                left -= take;
                served.new += take;
            }
            if dequeues && self.new_bytes() == 0 {
                self.policy.empty();
            }
        }
        self.tti_served += served.retx + served.new;
        match outcome {
            Outcome::Received => {
                for i in 0..self.block.len() {
                    let (start, end) = self.block[i];
                    self.credit(start, end);
                }
                while self.sdus.front().is_some_and(|q| q.received == q.sdu.data.len() as u64) {
                    let queued = self.sdus.pop_front().unwrap();
                    if !queued.discarded {
                        delivered.push(queued.sdu);
                    }
                }
            }
            Outcome::Failed { retry_tti } => {
                debug_assert!(self.retx.back().is_none_or(|r| r.eligible_tti <= retry_tti));
                for &(start, end) in &self.block {
                    match self.retx.back_mut() {
                        Some(last) if last.eligible_tti == retry_tti && last.end == start => last.end = end,
                        _ => self.retx.push_back(Retx { eligible_tti: retry_tti, start, end }),
                    }
                    self.retx_bytes += end - start;
                }
            }
        }
        served
    }

    /// The first byte of the SDU at `index` is next: the discipline's verdict on it. A dropped SDU is taken out of
    /// the stream as a discarded one is.
    fn dequeue(&mut self, tti: u64, index: usize) -> Verdict {
        let behind = self.end - self.sdus[index].end() + self.retx_bytes;
        let queued = &mut self.sdus[index];
        let verdict = self.policy.dequeue(tti, queued.stamp, behind, &mut queued.sdu.data);
        match verdict {
            Verdict::Send => {}
            Verdict::Mark => {
                self.aqm.ce_marked_sdus += 1;
                queued.sdu.ce_marked = true;
            }
            Verdict::Drop => {
                let len = queued.sdu.data.len() as u64;
                queued.received = len;
                queued.discarded = true;
                self.next_new += len;
                self.aqm.dropped_sdus += 1;
                self.aqm.dropped_bytes += len;
                self.aqm_drops.push(AqmDrop { arrival_ns: queued.sdu.arrival_ns, length: len });
            }
        }
        verdict
    }

    /// Marks the stream bytes `start..end` received, SDU by SDU.
    fn credit(&mut self, mut start: u64, end: u64) {
        let mut index = self.sdus.partition_point(|q| q.end() <= start);
        while start < end {
            let queued = &mut self.sdus[index];
            let upto = end.min(queued.end());
            queued.received += upto - start;
            start = upto;
            index += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::Discipline;
    use crate::ecn::packets;

    fn sdu(len: usize, tag: u8) -> Sdu {
        Sdu { data: vec![tag; len], arrival_ns: tag as u64, ce_marked: false }
    }

    fn unlimited() -> RlcQueue {
        RlcQueue::new(Limits { bytes: 0, sdus: 0, discard_ttis: 0 }, Policy::TailDrop)
    }

    fn tags(delivered: &[Sdu]) -> Vec<u8> {
        delivered.iter().map(|s| s.data[0]).collect()
    }

    #[test]
    fn sdus_are_segmented_and_delivered_when_their_last_byte_is_served() {
        let mut queue = unlimited();
        queue.offer(sdu(1000, 1)).unwrap();
        queue.offer(sdu(500, 2)).unwrap();
        let mut out = Vec::new();
        assert_eq!(queue.transmit(0, 600, Outcome::Received, &mut out), Served { retx: 0, new: 600 });
        assert!(out.is_empty());
        assert_eq!((queue.new_bytes(), queue.sdus()), (900, 2));
        assert_eq!(queue.transmit(1, 600, Outcome::Received, &mut out), Served { retx: 0, new: 600 });
        assert_eq!(tags(&out), [1]);
        assert_eq!(queue.transmit(2, 600, Outcome::Received, &mut out), Served { retx: 0, new: 300 });
        assert_eq!(tags(&out), [1, 2]);
        assert_eq!((queue.new_bytes(), queue.sdus(), queue.backlog(3)), (0, 0, 0));
    }

    #[test]
    fn tail_drop_by_bytes_refuses_the_sdu_that_would_exceed_the_limit() {
        let mut queue = RlcQueue::new(Limits { bytes: 3000, sdus: 0, discard_ttis: 0 }, Policy::TailDrop);
        for tag in 0..2 {
            queue.offer(sdu(1400, tag)).unwrap();
        }
        let refused = queue.offer(sdu(201, 9)).unwrap_err();
        assert_eq!(refused.data.len(), 201);
        queue.offer(sdu(200, 3)).unwrap();
        assert_eq!(queue.new_bytes(), 3000);
        assert!(queue.offer(sdu(1, 4)).is_err());
    }

    #[test]
    fn tail_drop_by_sdus_refuses_the_sdu_beyond_the_count() {
        let mut queue = RlcQueue::new(Limits { bytes: 0, sdus: 2, discard_ttis: 0 }, Policy::TailDrop);
        queue.offer(sdu(10, 1)).unwrap();
        queue.offer(sdu(10, 2)).unwrap();
        assert!(queue.offer(sdu(10, 3)).is_err());
        let mut out = Vec::new();
        queue.transmit(0, 10, Outcome::Received, &mut out);
        queue.offer(sdu(10, 3)).unwrap();
    }

    #[test]
    fn retransmission_bytes_count_against_the_byte_limit() {
        let mut queue = RlcQueue::new(Limits { bytes: 2000, sdus: 0, discard_ttis: 0 }, Policy::TailDrop);
        queue.offer(sdu(1500, 1)).unwrap();
        let mut out = Vec::new();
        queue.transmit(0, 1500, Outcome::Failed { retry_tti: 8 }, &mut out);
        assert_eq!((queue.new_bytes(), queue.retx_bytes()), (0, 1500));
        assert!(queue.offer(sdu(600, 2)).is_err());
        queue.offer(sdu(500, 3)).unwrap();
    }

    #[test]
    fn a_failed_block_is_resent_after_the_harq_rtt_before_new_data_and_delays_later_sdus() {
        let mut queue = unlimited();
        for tag in 1..=3 {
            queue.offer(sdu(100, tag)).unwrap();
        }
        let mut out = Vec::new();
        // TTI 0: SDU 1 and half of SDU 2 fail.
        assert_eq!(queue.transmit(0, 150, Outcome::Failed { retry_tti: 8 }, &mut out), Served { retx: 0, new: 150 });
        assert_eq!((queue.retx_bytes(), queue.new_bytes()), (150, 150));
        // TTI 1: the rest goes through, but SDU 2 and 3 wait for SDU 1 (in order).
        assert_eq!(queue.transmit(1, 1000, Outcome::Received, &mut out), Served { retx: 0, new: 150 });
        assert!(out.is_empty());
        assert_eq!(queue.backlog(7), 0, "retransmission not eligible before TTI 8");
        assert_eq!(queue.backlog(8), 150);
        // New data arriving meanwhile is served after the retransmission.
        queue.offer(sdu(100, 4)).unwrap();
        assert_eq!(queue.transmit(8, 200, Outcome::Received, &mut out), Served { retx: 150, new: 50 });
        assert_eq!(tags(&out), [1, 2, 3]);
        assert_eq!(queue.transmit(9, 200, Outcome::Received, &mut out), Served { retx: 0, new: 50 });
        assert_eq!(tags(&out), [1, 2, 3, 4]);
        assert_eq!(queue.retx_bytes(), 0);
    }

    #[test]
    fn a_retransmission_can_fail_again_and_be_split_across_ttis() {
        let mut queue = unlimited();
        queue.offer(sdu(300, 1)).unwrap();
        let mut out = Vec::new();
        queue.transmit(0, 300, Outcome::Failed { retry_tti: 8 }, &mut out);
        assert_eq!(queue.transmit(8, 100, Outcome::Failed { retry_tti: 16 }, &mut out), Served { retx: 100, new: 0 });
        assert_eq!(queue.transmit(9, 100, Outcome::Received, &mut out), Served { retx: 100, new: 0 });
        assert_eq!(queue.transmit(10, 500, Outcome::Received, &mut out), Served { retx: 100, new: 0 });
        assert!(out.is_empty());
        assert_eq!((queue.retx_bytes(), queue.backlog(15), queue.backlog(16)), (100, 0, 100));
        assert_eq!(queue.transmit(16, 500, Outcome::Received, &mut out), Served { retx: 100, new: 0 });
        assert_eq!(tags(&out), [1]);
        assert_eq!(out[0].data.len(), 300);
    }

    #[test]
    fn a_failed_block_after_served_data_counts_and_schedules_only_its_own_bytes() {
        let mut queue = unlimited();
        queue.offer(sdu(300, 1)).unwrap();
        let mut out = Vec::new();
        queue.transmit(0, 100, Outcome::Received, &mut out);
        // bytes 100..200 of the stream fail: 100 bytes to resend, not their offsets added up
        queue.transmit(1, 100, Outcome::Failed { retry_tti: 9 }, &mut out);
        assert_eq!((queue.retx_bytes(), queue.new_bytes()), (100, 100));
        assert_eq!((queue.backlog(8), queue.backlog(9)), (100, 200));
    }

    #[test]
    fn consecutive_failed_blocks_each_wait_their_own_harq_rtt() {
        let mut queue = unlimited();
        queue.offer(sdu(200, 1)).unwrap();
        let mut out = Vec::new();
        // adjacent ranges of the stream, failed one TTI apart: the second is not eligible with the first
        queue.transmit(0, 100, Outcome::Failed { retry_tti: 8 }, &mut out);
        queue.transmit(1, 100, Outcome::Failed { retry_tti: 9 }, &mut out);
        assert_eq!((queue.backlog(7), queue.backlog(8), queue.backlog(9)), (0, 100, 200));
        assert_eq!(queue.transmit(8, 1000, Outcome::Received, &mut out), Served { retx: 100, new: 0 });
        assert_eq!(queue.transmit(9, 1000, Outcome::Received, &mut out), Served { retx: 100, new: 0 });
        assert_eq!(tags(&out), [1]);
    }

    #[test]
    fn a_resent_block_with_new_data_that_fails_again_resends_only_its_two_ranges() {
        let mut queue = unlimited();
        for tag in 1..=3 {
            queue.offer(sdu(100, tag)).unwrap();
        }
        let mut out = Vec::new();
        queue.transmit(0, 100, Outcome::Failed { retry_tti: 8 }, &mut out); // SDU 1 fails
        queue.transmit(1, 100, Outcome::Received, &mut out); // SDU 2 arrives, waits for SDU 1
        // TTI 8: one block of SDU 1 (resent, stream 0..100) and SDU 3 (new, 200..300) fails again; SDU 2's
        // bytes between them were received and are not sent a third time
        assert_eq!(queue.transmit(8, 200, Outcome::Failed { retry_tti: 16 }, &mut out), Served { retx: 100, new: 100 });
        assert_eq!((queue.retx_bytes(), queue.backlog(16)), (200, 200));
        assert_eq!(queue.transmit(16, 1000, Outcome::Received, &mut out), Served { retx: 200, new: 0 });
        assert_eq!(tags(&out), [1, 2, 3]);
    }

    fn discarding(ttis: u64) -> RlcQueue {
        RlcQueue::new(Limits { bytes: 0, sdus: 0, discard_ttis: ttis }, Policy::TailDrop)
    }

    #[test]
    fn an_sdu_untransmitted_for_the_discard_timer_is_discarded_not_delivered() {
        let mut queue = discarding(5);
        queue.start_tti(0);
        queue.offer(sdu(100, 1)).unwrap(); // stamped TTI 0
        for tti in 1..5 {
            queue.start_tti(tti);
            assert_eq!((queue.new_bytes(), queue.take_discarded()), (100, (0, 0)), "TTI {tti}");
        }
        queue.start_tti(5); // waited 5 TTIs
        assert_eq!((queue.new_bytes(), queue.sdus(), queue.backlog(5)), (0, 0, 0));
        assert_eq!(queue.take_discarded(), (1, 100));
        assert_eq!(queue.take_discarded(), (0, 0));
        // an SDU offered later is stamped with the TTI that runs next, and served as usual
        queue.offer(sdu(50, 2)).unwrap();
        let mut out = Vec::new();
        queue.start_tti(9);
        assert_eq!(queue.transmit(9, 100, Outcome::Received, &mut out), Served { retx: 0, new: 50 });
        assert_eq!(tags(&out), [2]);
    }

    #[test]
    fn a_partly_sent_sdu_is_kept_and_the_stale_ones_behind_it_go_when_the_block_reaches_them() {
        let mut queue = discarding(5);
        queue.start_tti(0);
        for (len, tag) in [(300, 1), (100, 2), (100, 3)] {
            queue.offer(sdu(len, tag)).unwrap();
        }
        let mut out = Vec::new();
        assert_eq!(queue.transmit(0, 100, Outcome::Received, &mut out), Served { retx: 0, new: 100 });
        queue.start_tti(3);
        queue.offer(sdu(100, 4)).unwrap(); // stamped TTI 3
        queue.start_tti(5);
        // SDU 1 is segmented: the RLC has it, the timer no longer applies; 2 and 3 are behind it
        assert_eq!((queue.take_discarded(), queue.new_bytes()), ((0, 0), 500));
        // the block finishes SDU 1, reaches 2 and 3 (waited 5 TTIs: discarded) and serves 4 (waited 2)
        assert_eq!(queue.transmit(5, 1000, Outcome::Received, &mut out), Served { retx: 0, new: 300 });
        assert_eq!(tags(&out), [1, 4]);
        assert_eq!((queue.take_discarded(), queue.new_bytes(), queue.sdus()), ((2, 200), 0, 0));
    }

    #[test]
    fn with_a_discard_timer_fresh_sdus_are_served_and_resent_as_without_one() {
        // SDU by SDU into one block: two fresh SDUs in one TTI, then a failed block across two, resent whole
        let mut queue = discarding(50);
        queue.start_tti(0);
        for tag in 1..=4 {
            queue.offer(sdu(100, tag)).unwrap();
        }
        let mut out = Vec::new();
        assert_eq!(queue.transmit(0, 200, Outcome::Received, &mut out), Served { retx: 0, new: 200 });
        assert_eq!(tags(&out), [1, 2]);
        queue.start_tti(1);
        assert_eq!(queue.transmit(1, 200, Outcome::Failed { retry_tti: 9 }, &mut out), Served { retx: 0, new: 200 });
        assert_eq!((queue.retx_bytes(), queue.new_bytes()), (200, 0));
        queue.start_tti(9);
        assert_eq!(queue.transmit(9, 200, Outcome::Received, &mut out), Served { retx: 200, new: 0 });
        assert_eq!(tags(&out), [1, 2, 3, 4]);
        assert_eq!(queue.take_discarded(), (0, 0));
    }

    #[test]
    fn discarded_bytes_stop_counting_against_the_byte_limit() {
        let mut queue = RlcQueue::new(Limits { bytes: 1000, sdus: 0, discard_ttis: 2 }, Policy::TailDrop);
        queue.start_tti(0);
        queue.offer(sdu(1000, 1)).unwrap();
        assert!(queue.offer(sdu(1, 2)).is_err());
        queue.start_tti(2);
        assert_eq!(queue.take_discarded(), (1, 1000));
        queue.offer(sdu(1000, 3)).unwrap();
    }

    const MS: u64 = 1_000_000;

    fn with_policy(discipline: Discipline) -> RlcQueue {
        RlcQueue::new(Limits { bytes: 0, sdus: 0, discard_ttis: 0 }, Policy::new(discipline, MS))
    }

    /// Runs TTIs `ttis`, each serving up to `budget` bytes, received.
    fn serve(queue: &mut RlcQueue, ttis: std::ops::Range<u64>, budget: u64, out: &mut Vec<Sdu>) {
        for tti in ttis {
            queue.start_tti(tti);
            queue.transmit(tti, budget, Outcome::Received, out);
            queue.end_tti(budget);
        }
    }

    /// CoDel with a 2 ms target and a 10 ms interval, on 1 ms TTIs.
    fn codel_queue() -> RlcQueue {
        with_policy(Discipline::CoDel { target_ns: 2 * MS, interval_ns: 10 * MS })
    }

    #[test]
    fn codel_drops_whole_sdus_when_their_first_byte_is_due_and_counts_them() {
        // 40 SDUs of 1000 bytes (not IP: never ECN-capable) offered at TTI 0, one served per TTI: SDU k's sojourn
        // is its TTI. At TTI 2 the sojourn reaches the target: first_above_time = 12. TTI 12: first drop (SDU 12,
        // count 1, drop_next 22), SDU 13 is sent in its place. TTI 22: SDU 23 dropped (count 2), drop_next =
        // 22 + 10/sqrt(2) = 29.07. TTI 30: SDU 32 dropped (count 3), SDU 33 sent.
        let mut queue = codel_queue();
        queue.start_tti(0);
        for tag in 0..40 {
            queue.offer(sdu(1000, tag)).unwrap();
        }
        let mut out = Vec::new();
        serve(&mut queue, 0..31, 1000, &mut out);
        let expected: Vec<u8> = (0..=33).filter(|k| ![12, 23, 32].contains(k)).collect();
        assert_eq!(tags(&out), expected);
        assert_eq!(queue.take_aqm(), AqmCounts { ce_marked_sdus: 0, dropped_sdus: 3, dropped_bytes: 3000 });
        assert_eq!((queue.new_bytes(), queue.sdus(), queue.take_discarded()), (6000, 6, (0, 0)));
        // the packet log's records of the drops: SDU k arrived at k ns (`sdu`)
        let drops: Vec<AqmDrop> = queue.take_aqm_drops().collect();
        assert_eq!(drops, [12, 23, 32].map(|k| AqmDrop { arrival_ns: k, length: 1000 }));
        assert_eq!(queue.take_aqm_drops().count(), 0);
        assert!(out.iter().all(|s| !s.ce_marked));
    }

    #[test]
    fn codel_marks_ect_packets_ce_instead_of_dropping_them() {
        // As above with ECN-capable packets: nothing is dropped, so TTI t sends SDU t. Marks at 12 (count 1,
        // drop_next 22), 22 (count 2, drop_next 29.07), 30 (count 3, 29.07 + 10/sqrt(3) = 34.84), 35 (count 4,
        // 39.84); at TTI 38 one SDU (1000 bytes <= one MTU) remains behind: the dropping state ends.
        let mut queue = codel_queue();
        queue.start_tti(0);
        for tag in 0..40 {
            queue.offer(Sdu { data: packets::ipv4(1000, 0x02, tag), arrival_ns: 0, ce_marked: false }).unwrap();
        }
        let mut out = Vec::new();
        serve(&mut queue, 0..40, 1000, &mut out);
        assert_eq!(out.len(), 40);
        let marked: Vec<u8> = out.iter().filter(|s| s.data[1] == 0x03).map(|s| s.data[20]).collect();
        assert_eq!(marked, [12, 22, 30, 35]);
        let flagged: Vec<u8> = out.iter().filter(|s| s.ce_marked).map(|s| s.data[20]).collect();
        assert_eq!(flagged, [12, 22, 30, 35]);
        assert_eq!(queue.take_aqm_drops().count(), 0);
        assert!(out.iter().all(|s| matches!(s.data[1], 0x02 | 0x03) && packets::ipv4_header_is_valid(&s.data)));
        assert_eq!(queue.take_aqm(), AqmCounts { ce_marked_sdus: 4, dropped_sdus: 0, dropped_bytes: 0 });
    }

    #[test]
    fn codel_never_drops_an_sdu_already_partly_transmitted() {
        // 1500-byte SDUs, 1000 bytes per TTI: SDU k starts at stream byte 1500 k, mid-TTI. SDU 2 (TTI 3, sojourn
        // 3 ms) sets first_above_time = 13; SDU 9 starts in TTI 13 and is dropped (count 1, drop_next 23), SDU 10
        // starts in its place. TTI 23 opens with SDU 16 partly sent (its first 500 bytes went in TTI 22) although
        // the next drop is due: SDU 16 is finished, and SDU 17, the next to start (TTI 24), is dropped.
        let mut queue = codel_queue();
        queue.start_tti(0);
        for tag in 0..30 {
            queue.offer(sdu(1500, tag)).unwrap();
        }
        let mut out = Vec::new();
        serve(&mut queue, 0..25, 1000, &mut out);
        let expected: Vec<u8> = (0..=16).filter(|&k| k != 9).collect();
        assert_eq!(tags(&out), expected);
        assert!(out.iter().all(|s| s.data.len() == 1500));
        assert_eq!(queue.take_aqm(), AqmCounts { ce_marked_sdus: 0, dropped_sdus: 2, dropped_bytes: 3000 });
    }

    /// CoDel (2 ms, 4 ms) behind a failed 3000-byte SDU whose retransmission is far off: its bytes count behind
    /// every SDU (more than one MTU), so only an empty queue resets first_above_time. SDUs B0..B2 (stamp 0) are sent
    /// at TTIs 1..3; B1 (sojourn 2 ms) sets first_above_time = 6.
    fn codel_behind_a_retransmission(discard_ttis: u64, out: &mut Vec<Sdu>) -> RlcQueue {
        let limits = Limits { bytes: 0, sdus: 0, discard_ttis };
        let mut queue =
            RlcQueue::new(limits, Policy::new(Discipline::CoDel { target_ns: 2 * MS, interval_ns: 4 * MS }, MS));
        queue.start_tti(0);
        queue.offer(sdu(3000, 0)).unwrap();
        queue.transmit(0, 3000, Outcome::Failed { retry_tti: 1000 }, out);
        for tag in 1..=3 {
            queue.offer(sdu(1000, tag)).unwrap();
        }
        queue
    }

    #[test]
    fn codel_starts_over_once_a_block_has_emptied_the_queue() {
        let mut out = Vec::new();
        let mut queue = codel_behind_a_retransmission(0, &mut out);
        serve(&mut queue, 1..4, 1000, &mut out); // B2 empties the queue at TTI 3: first_above_time is reset
        queue.offer(sdu(1000, 4)).unwrap(); // C, stamp 3
        queue.offer(sdu(1000, 5)).unwrap();
        serve(&mut queue, 4..7, 0, &mut out);
        // TTI 7: C's sojourn is 4 ms, first_above_time becomes 11; without the reset (6) C would be dropped
        queue.start_tti(7);
        assert_eq!(queue.transmit(7, 1000, Outcome::Received, &mut out), Served { retx: 0, new: 1000 });
        assert_eq!(queue.take_aqm(), AqmCounts::default());
    }

    #[test]
    fn codel_starts_over_once_discards_have_emptied_the_queue() {
        let mut out = Vec::new();
        let mut queue = codel_behind_a_retransmission(5, &mut out);
        serve(&mut queue, 1..3, 1000, &mut out);
        serve(&mut queue, 3..5, 0, &mut out);
        queue.start_tti(5); // B2 (stamp 0) has waited 5 TTIs: discarded, the queue is empty
        assert_eq!(queue.take_discarded(), (1, 1000));
        queue.offer(sdu(1000, 4)).unwrap(); // C, stamp 5
        queue.offer(sdu(1000, 5)).unwrap();
        serve(&mut queue, 6..9, 0, &mut out);
        // TTI 9: C's sojourn is 4 ms, first_above_time becomes 13; without the reset (6) C would be dropped
        queue.start_tti(9);
        assert_eq!(queue.transmit(9, 1000, Outcome::Received, &mut out), Served { retx: 0, new: 1000 });
        assert_eq!(queue.take_aqm(), AqmCounts::default());
    }

    #[test]
    fn codel_counts_harq_bytes_as_queued_behind_the_head() {
        // SDUs B1..B11 behind the failed 3000 bytes, one per TTI: B2 sets first_above_time = 6, B6 is dropped at
        // TTI 6 (count 1, drop_next 10) and B7 sent in its place; at TTI 10, B11 is the last new SDU but the 3000
        // HARQ bytes (more than one MTU) are still queued behind it: dropped (count 2).
        let mut out = Vec::new();
        let mut queue = codel_behind_a_retransmission(0, &mut out);
        for tag in 4..=11 {
            queue.offer(sdu(1000, tag)).unwrap();
        }
        serve(&mut queue, 1..11, 1000, &mut out);
        assert_eq!(queue.take_aqm(), AqmCounts { ce_marked_sdus: 0, dropped_sdus: 2, dropped_bytes: 2000 });
        assert_eq!((queue.new_bytes(), queue.retx_bytes()), (0, 3000));
    }

    #[test]
    fn mark_predicts_the_delay_from_the_bytes_ahead_over_the_served_rate() {
        let mut queue = with_policy(Discipline::Mark { threshold_ns: 15 * MS, ack_ece: false });
        let mut out = Vec::new();
        serve(&mut queue, 0..1, 1000, &mut out); // empty: no rate sample
        for tag in 0..5 {
            queue.offer(sdu(1000, tag)).unwrap();
        }
        serve(&mut queue, 1..2, 1000, &mut out); // 1000 of 5000 served: rate 1000 bytes/TTI
        serve(&mut queue, 2..3, 0, &mut out); // backlogged, nothing served: 1000 - 1000/20 = 950
        queue.start_tti(3);
        queue.transmit(3, 1000, Outcome::Failed { retry_tti: 4 }, &mut out);
        queue.end_tti(1000); // 950 + (1000 - 950)/20 = 952.5; 3000 new and 1000 HARQ bytes left
        for tag in 5..15 {
            queue.offer(sdu(1000, tag)).unwrap();
        }
        queue.offer(sdu(200, 16)).unwrap(); // 13200 new + 1000 HARQ = 14200 bytes queued
        // 14200 / 952.5 = 14.91 ms: not marked; then 14400 / 952.5 = 15.12 ms: marked (at 1000 bytes/TTI 14.4 ms;
        // without the HARQ bytes 14.07 ms)
        queue.offer(Sdu { data: packets::ipv4(200, 0x02, 0xa), arrival_ns: 0, ce_marked: false }).unwrap();
        queue.offer(Sdu { data: packets::ipv4(1000, 0x02, 0xb), arrival_ns: 0, ce_marked: false }).unwrap();
        assert_eq!(queue.take_aqm(), AqmCounts { ce_marked_sdus: 1, dropped_sdus: 0, dropped_bytes: 0 });
        serve(&mut queue, 4..5, 100_000, &mut out);
        let last: Vec<(u8, u8, bool)> =
            out[out.len() - 2..].iter().map(|s| (s.data[20], s.data[1], s.ce_marked)).collect();
        assert_eq!(last, [(0xa, 0x02, false), (0xb, 0x03, true)]);
        assert!(packets::ipv4_header_is_valid(&out[out.len() - 1].data));
    }

    #[test]
    fn tail_drop_leaves_ect_packets_alone_however_long_they_wait() {
        let mut queue = RlcQueue::new(Limits { bytes: 100_000, sdus: 0, discard_ttis: 0 }, Policy::TailDrop);
        let refused = (0..70).filter(|&tag| {
            queue.offer(Sdu { data: packets::ipv4(1500, 0x02, tag), arrival_ns: 0, ce_marked: false }).is_err()
        });
        assert_eq!(refused.count(), 4);
        let mut out = Vec::new();
        serve(&mut queue, 0..1000, 100, &mut out);
        assert_eq!(out.len(), 66); // 66 x 1500 = 99000 bytes fit under the limit, the 67th would not
        assert!(out.iter().all(|s| s.data == packets::ipv4(1500, 0x02, s.data[20])));
        assert_eq!(queue.take_aqm(), AqmCounts::default());
    }

    #[test]
    fn a_zero_budget_serves_nothing() {
        let mut queue = unlimited();
        queue.offer(sdu(10, 1)).unwrap();
        let mut out = Vec::new();
        assert_eq!(queue.transmit(0, 0, Outcome::Received, &mut out), Served::default());
        assert_eq!(queue.new_bytes(), 10);
    }
}
