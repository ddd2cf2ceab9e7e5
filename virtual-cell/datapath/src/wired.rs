//! One direction of the wired link (INTERFACE.md, "Wired link"): a drop-tail serialization queue at
//! `rate_bps` followed by a fixed one-way delay. Frames are Ethernet frames as read (no FCS, preamble or
//! gap). Time (ns) is an argument.

use std::collections::VecDeque;

use crate::delay::DelayLine;

#[derive(Debug)]
pub struct WiredLink<T> {
    rate_bps: u64,
    limit_bytes: u64,
    /// Frames not yet fully serialized, with the time their last bit leaves, in order.
    serializing: VecDeque<(u64, usize, T)>,
    queued_bytes: u64,
    /// When the transmitter is free again.
    busy_until: u64,
    delay_ns: u64,
    propagating: DelayLine<T>,
}

impl<T> WiredLink<T> {
    pub fn new(rate_bps: u64, delay_ns: u64, limit_bytes: u64) -> WiredLink<T> {
        WiredLink {
            rate_bps,
            limit_bytes,
            serializing: VecDeque::new(),
            queued_bytes: 0,
            busy_until: 0,
            delay_ns,
            propagating: DelayLine::new(delay_ns),
        }
    }

    /// Time to put `len` bytes on the wire, rounded up to the nanosecond.
    pub fn serialization_ns(&self, len: usize) -> u64 {
        ((len as u128 * 8 * 1_000_000_000).div_ceil(self.rate_bps as u128)) as u64
    }

    /// A frame of `len` bytes arrives at `now`; gives it back when the queue (bytes waiting or being
    /// serialized) would exceed the limit (drop-tail).
    pub fn offer(&mut self, now: u64, len: usize, frame: T) -> Result<(), T> {
        self.advance(now);
        if self.queued_bytes + len as u64 > self.limit_bytes {
            return Err(frame);
        }
        let done = self.busy_until.max(now) + self.serialization_ns(len);
        self.busy_until = done;
        self.queued_bytes += len as u64;
        self.serializing.push_back((done, len, frame));
        Ok(())
    }

    /// Moves frames whose last bit left by `now` into the delay line.
    fn advance(&mut self, now: u64) {
        while self.serializing.front().is_some_and(|&(done, _, _)| done <= now) {
            let (done, len, frame) = self.serializing.pop_front().unwrap();
            self.queued_bytes -= len as u64;
            self.propagating.push(done, frame);
        }
    }

    /// The next frame that has reached the far end by `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<T> {
        self.advance(now);
        self.propagating.pop_due(now)
    }

    /// When the next frame reaches the far end (frames leave in order, each `delay` after its last bit).
    pub fn next_arrival(&self) -> Option<u64> {
        match self.propagating.next_release() {
            Some(release) => Some(release),
            None => self.serializing.front().map(|&(done, _, _)| done + self.delay_ns),
        }
    }

    /// Bytes waiting for or in serialization at the last `offer`/`pop_due`.
    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_frame_arrives_after_its_serialization_time_plus_the_delay() {
        // 10 Mbit/s: 1250 bytes take 1 ms on the wire; then 5 ms of propagation.
        let mut link = WiredLink::new(10_000_000, 5 * MS, 1_000_000);
        assert_eq!(link.serialization_ns(1250), MS);
        link.offer(0, 1250, 'a').unwrap();
        assert_eq!(link.next_arrival(), Some(6 * MS));
        assert_eq!(link.pop_due(6 * MS - 1), None);
        assert_eq!(link.pop_due(6 * MS), Some('a'));
        assert_eq!(link.next_arrival(), None);
    }

    #[test]
    fn back_to_back_frames_queue_behind_each_other() {
        let mut link = WiredLink::new(10_000_000, 5 * MS, 1_000_000);
        for tag in 0..3 {
            link.offer(0, 1250, tag).unwrap();
        }
        assert_eq!(link.queued_bytes(), 3750);
        let mut arrivals = Vec::new();
        for t in (0..=20 * MS).step_by(100_000) {
            while let Some(tag) = link.pop_due(t) {
                arrivals.push((tag, t));
            }
        }
        assert_eq!(arrivals, [(0, 6 * MS), (1, 7 * MS), (2, 8 * MS)]);
        assert_eq!(link.queued_bytes(), 0);
    }

    #[test]
    fn an_idle_link_starts_serializing_at_arrival() {
        let mut link = WiredLink::new(8_000_000, 0, 10_000);
        link.offer(0, 1000, 1).unwrap();
        link.offer(50 * MS, 1000, 2).unwrap();
        assert_eq!(link.pop_due(MS), Some(1));
        assert_eq!(link.pop_due(51 * MS - 1), None);
        assert_eq!(link.pop_due(51 * MS), Some(2));
    }

    #[test]
    fn the_tail_is_dropped_when_the_queue_is_full_and_accepted_again_once_it_drains() {
        let mut link = WiredLink::new(8_000_000, 0, 2500);
        link.offer(0, 1000, 1).unwrap();
        link.offer(0, 1000, 2).unwrap();
        assert_eq!(link.offer(0, 1000, 3), Err(3));
        link.offer(0, 500, 4).unwrap();
        // After 1 ms (1000 bytes at 8 Mbit/s) the first frame has left the queue.
        assert_eq!(link.offer(MS - 1, 1000, 5), Err(5));
        link.offer(MS, 1000, 6).unwrap();
        let order: Vec<i32> = std::iter::from_fn(|| link.pop_due(10 * MS)).collect();
        assert_eq!(order, [1, 2, 4, 6]);
    }

    #[test]
    fn serialization_at_odd_rates_rounds_up_without_drifting() {
        let link: WiredLink<()> = WiredLink::new(3_000_000, 0, 1);
        assert_eq!(link.serialization_ns(1), 2667);
        assert_eq!(link.serialization_ns(1500), 4_000_000);
    }
}
