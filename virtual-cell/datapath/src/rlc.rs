//! One UE's downlink RLC queue (INTERFACE.md, "TTI clock and scheduler" and "HARQ").
//!
//! SDUs (IP packets) are queued whole and served as bytes: the queue is one byte stream, each SDU a range of
//! it, and a transport block is a list of ranges of that stream. A failed block's ranges come back as
//! retransmission records, served before new data once eligible. An SDU is delivered when all its bytes were
//! received and every earlier SDU was delivered (RLC AM, in order). Time is the TTI index, an argument.

use std::collections::VecDeque;

/// A downlink IP packet and when it was read from the SGi TUN (`CLOCK_REALTIME`, ns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sdu {
    pub data: Vec<u8>,
    pub arrival_ns: u64,
}

/// Queue limits; 0 means no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub bytes: u64,
    pub sdus: u64,
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
}

impl RlcQueue {
    pub fn new(limits: Limits) -> RlcQueue {
        RlcQueue {
            limits,
            sdus: VecDeque::new(),
            next_new: 0,
            end: 0,
            retx: VecDeque::new(),
            retx_bytes: 0,
            block: Vec::new(),
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
    pub fn offer(&mut self, sdu: Sdu) -> Result<(), Sdu> {
        let len = sdu.data.len() as u64;
        let over_bytes = self.limits.bytes > 0 && self.new_bytes() + self.retx_bytes + len > self.limits.bytes;
        let over_sdus = self.limits.sdus > 0 && self.sdus() + 1 > self.limits.sdus;
        if over_bytes || over_sdus {
            return Err(sdu);
        }
        self.sdus.push_back(Queued { start: self.end, received: 0, sdu });
        self.end += len;
        Ok(())
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
        let take = left.min(self.new_bytes());
        if take > 0 {
            self.block.push((self.next_new, self.next_new + take));
            self.next_new += take;
            served.new = take;
        }
        match outcome {
            Outcome::Received => {
                for i in 0..self.block.len() {
                    let (start, end) = self.block[i];
                    self.credit(start, end);
                }
                while self.sdus.front().is_some_and(|q| q.received == q.sdu.data.len() as u64) {
                    delivered.push(self.sdus.pop_front().unwrap().sdu);
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

    fn sdu(len: usize, tag: u8) -> Sdu {
        Sdu { data: vec![tag; len], arrival_ns: tag as u64 }
    }

    fn unlimited() -> RlcQueue {
        RlcQueue::new(Limits { bytes: 0, sdus: 0 })
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
        let mut queue = RlcQueue::new(Limits { bytes: 3000, sdus: 0 });
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
        let mut queue = RlcQueue::new(Limits { bytes: 0, sdus: 2 });
        queue.offer(sdu(10, 1)).unwrap();
        queue.offer(sdu(10, 2)).unwrap();
        assert!(queue.offer(sdu(10, 3)).is_err());
        let mut out = Vec::new();
        queue.transmit(0, 10, Outcome::Received, &mut out);
        queue.offer(sdu(10, 3)).unwrap();
    }

    #[test]
    fn retransmission_bytes_count_against_the_byte_limit() {
        let mut queue = RlcQueue::new(Limits { bytes: 2000, sdus: 0 });
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

    #[test]
    fn a_zero_budget_serves_nothing() {
        let mut queue = unlimited();
        queue.offer(sdu(10, 1)).unwrap();
        let mut out = Vec::new();
        assert_eq!(queue.transmit(0, 0, Outcome::Received, &mut out), Served::default());
        assert_eq!(queue.new_bytes(), 10);
    }
}
