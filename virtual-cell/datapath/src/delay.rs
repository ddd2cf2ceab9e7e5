//! A fixed delay line: what goes in at `now` comes out at `now + delay`, in order. Time (ns) is an argument.

use std::collections::VecDeque;

#[derive(Debug)]
pub struct DelayLine<T> {
    delay_ns: u64,
    items: VecDeque<(u64, T)>,
}

impl<T> DelayLine<T> {
    pub fn new(delay_ns: u64) -> DelayLine<T> {
        DelayLine { delay_ns, items: VecDeque::new() }
    }

    /// Adds an item at `now`; times must not go backwards (a later push never leaves earlier).
    pub fn push(&mut self, now: u64, item: T) {
        self.push_until(now + self.delay_ns, item);
    }

    /// Adds an item released at `release`; `release` must not be before the last one's.
    pub fn push_until(&mut self, release: u64, item: T) {
        let release = self.items.back().map_or(release, |&(last, _)| release.max(last));
        self.items.push_back((release, item));
    }

    /// The oldest item if it is due at `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<T> {
        if self.items.front()?.0 <= now { self.items.pop_front().map(|(_, item)| item) } else { None }
    }

    /// When the oldest item is due.
    pub fn next_release(&self) -> Option<u64> {
        self.items.front().map(|&(release, _)| release)
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_leave_after_the_delay_in_order() {
        let mut line = DelayLine::new(10_000);
        line.push(1_000, "a");
        line.push(2_500, "b");
        assert_eq!(line.next_release(), Some(11_000));
        assert_eq!(line.pop_due(10_999), None);
        assert_eq!(line.pop_due(11_000), Some("a"));
        assert_eq!(line.pop_due(12_000), None);
        assert_eq!(line.pop_due(20_000), Some("b"));
        assert!(line.is_empty());
        assert_eq!(line.next_release(), None);
    }

    #[test]
    fn a_zero_delay_releases_at_once() {
        let mut line = DelayLine::new(0);
        line.push(5, 1);
        assert_eq!(line.pop_due(5), Some(1));
    }

    #[test]
    fn a_release_time_never_overtakes_an_earlier_item() {
        let mut line = DelayLine::new(0);
        line.push_until(100, 1);
        line.push_until(50, 2);
        assert_eq!(line.pop_due(99), None);
        assert_eq!(line.pop_due(100), Some(1));
        assert_eq!(line.pop_due(100), Some(2));
    }
}
