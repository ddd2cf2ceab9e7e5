//! The TTI scheduler (INTERFACE.md, "TTI clock and scheduler"): who gets how many bytes of one TTI.
//!
//! A pure function of its own state (round-robin position, proportional-fair averages), the UEs'
//! capacities `c_i(t)` and their backlogs.

use crate::config::SchedulerKind;

/// One UE's share of a TTI.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allocation {
    /// Bytes served: at most the backlog.
    pub bytes: u64,
    /// Capacity offered at its turn: `c_i(t)` (dedicated) or `f * c_i(t)` (shared), whole bytes.
    pub offered: u64,
}

#[derive(Debug)]
pub struct Scheduler {
    kind: SchedulerKind,
    /// Round robin: the UE that got the first place last time.
    last_first: usize,
    /// Proportional fair: moving average of bytes served per TTI, and its weight `1 / pf_window_ttis`.
    average: Vec<f64>,
    alpha: f64,
    order: Vec<usize>,
    /// The share of the last TTI no UE was served in (shared schedulers).
    unused: f64,
}

/// Rounding guard on `f * c` so that exact fractions such as 0.7 * 2000 give 1400 bytes, not 1399.
const EPSILON: f64 = 1e-6;

impl Scheduler {
    pub fn new(kind: SchedulerKind, ues: usize, pf_window_ttis: u64) -> Scheduler {
        Scheduler {
            kind,
            last_first: ues - 1,
            average: vec![0.0; ues],
            alpha: 1.0 / pf_window_ttis as f64,
            order: Vec::with_capacity(ues),
            unused: 1.0,
        }
    }

    /// Proportional fair's average bytes per TTI of UE `ue`.
    pub fn average(&self, ue: usize) -> f64 {
        self.average[ue]
    }

    /// What the last TTI would have carried for a UE of capacity `c_i(t)` that was served `served` bytes and had
    /// no more to send: what the share of the TTI no UE was served in (the resource blocks no grant used) offered
    /// it, whole bytes; with the dedicated scheduler, whose UEs have links of their own, `c_i(t)` less `served`.
    pub fn unused_capacity(&self, capacity: u32, served: u64) -> u64 {
        if self.kind == SchedulerKind::Dedicated {
            (capacity as u64).saturating_sub(served)
        } else {
            (self.unused * capacity as f64 + EPSILON).floor() as u64
        }
    }

    /// Shares one TTI: `capacity[i]` is `c_i(t)`, `backlog[i]` the bytes UE `i` could send; fills `out`.
    pub fn allocate(&mut self, capacity: &[u32], backlog: &[u64], out: &mut [Allocation]) {
        let n = capacity.len();
        debug_assert!(backlog.len() == n && out.len() == n && self.average.len() == n);
        out.fill(Allocation::default());
        if self.kind == SchedulerKind::Dedicated {
            for ((slot, &c), &b) in out.iter_mut().zip(capacity).zip(backlog) {
                *slot = Allocation { bytes: b.min(c as u64), offered: c as u64 };
            }
        } else {
            self.order.clear();
            self.order.extend((0..n).filter(|&i| backlog[i] > 0 && capacity[i] > 0));
            match self.kind {
                SchedulerKind::RoundRobin => {
                    let after = self.last_first + 1;
                    self.order.sort_by_key(|&i| (i + n - after % n) % n);
                    if let Some(&first) = self.order.first() {
                        self.last_first = first;
                    }
                }
                // Stable sorts on an index-ordered list: ties go to the lower index.
                SchedulerKind::MaxCi => self.order.sort_by_key(|&i| std::cmp::Reverse(capacity[i])),
                SchedulerKind::ProportionalFair => {
                    let metric = |i: usize| capacity[i] as f64 / self.average[i].max(1.0);
                    self.order.sort_by(|&a, &b| metric(b).total_cmp(&metric(a)));
                }
                SchedulerKind::Dedicated => unreachable!(),
            }
            let mut fraction = 1.0f64;
            for &i in &self.order {
                let c = capacity[i] as f64;
                let offered = (fraction * c + EPSILON).floor() as u64;
                let bytes = backlog[i].min(offered);
                out[i] = Allocation { bytes, offered };
                fraction = (fraction - bytes as f64 / c).max(0.0);
            }
            self.unused = fraction;
            // Backlogged UEs without a turn (outage, or after f was spent) were offered 0.
        }
        if self.kind == SchedulerKind::ProportionalFair {
            for (average, allocation) in self.average.iter_mut().zip(out.iter()) {
                *average += self.alpha * (allocation.bytes as f64 - *average);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(scheduler: &mut Scheduler, capacity: &[u32], backlog: &[u64]) -> Vec<Allocation> {
        let mut out = vec![Allocation::default(); capacity.len()];
        scheduler.allocate(capacity, backlog, &mut out);
        out
    }

    fn bytes(allocations: &[Allocation]) -> Vec<u64> {
        allocations.iter().map(|a| a.bytes).collect()
    }

    const BIG: u64 = u64::MAX / 4;

    #[test]
    fn dedicated_serves_every_backlogged_ue_up_to_its_own_capacity() {
        let mut s = Scheduler::new(SchedulerKind::Dedicated, 3, 100);
        let out = run(&mut s, &[1250, 3000, 0], &[BIG, 1000, BIG]);
        assert_eq!(bytes(&out), [1250, 1000, 0]);
        assert_eq!(out.iter().map(|a| a.offered).collect::<Vec<_>>(), [1250, 3000, 0]);
    }

    #[test]
    fn round_robin_alternates_between_backlogged_ues() {
        let mut s = Scheduler::new(SchedulerKind::RoundRobin, 2, 100);
        let firsts: Vec<Vec<u64>> = (0..4).map(|_| bytes(&run(&mut s, &[1000, 1000], &[BIG, BIG]))).collect();
        assert_eq!(firsts, [vec![1000, 0], vec![0, 1000], vec![1000, 0], vec![0, 1000]]);
    }

    #[test]
    fn round_robin_skips_ues_without_data_and_starts_after_the_last_first() {
        let mut s = Scheduler::new(SchedulerKind::RoundRobin, 3, 100);
        assert_eq!(bytes(&run(&mut s, &[100, 100, 100], &[BIG, 0, BIG])), [100, 0, 0]);
        assert_eq!(bytes(&run(&mut s, &[100, 100, 100], &[BIG, 0, BIG])), [0, 0, 100]);
        assert_eq!(bytes(&run(&mut s, &[100, 100, 100], &[BIG, BIG, BIG])), [100, 0, 0]);
        assert_eq!(bytes(&run(&mut s, &[100, 100, 100], &[BIG, BIG, BIG])), [0, 100, 0]);
    }

    #[test]
    fn max_ci_serves_the_best_channel_and_ties_go_to_the_lower_index() {
        let mut s = Scheduler::new(SchedulerKind::MaxCi, 3, 100);
        assert_eq!(bytes(&run(&mut s, &[500, 2000, 1000], &[BIG, BIG, BIG])), [0, 2000, 0]);
        assert_eq!(bytes(&run(&mut s, &[2000, 2000, 1000], &[BIG, BIG, BIG])), [2000, 0, 0]);
        assert_eq!(bytes(&run(&mut s, &[500, 2000, 1000], &[BIG, 0, BIG])), [0, 0, 1000]);
    }

    #[test]
    fn the_tti_fraction_left_by_a_short_queue_goes_to_the_next_ue() {
        // UE 1 (best channel) needs 30 % of the TTI; UE 2 gets the remaining 70 % of its own capacity.
        let mut s = Scheduler::new(SchedulerKind::MaxCi, 3, 100);
        let out = run(&mut s, &[1000, 3000, 2000], &[BIG, 900, BIG]);
        assert_eq!(bytes(&out), [0, 900, 1400]);
        assert_eq!(out.iter().map(|a| a.offered).collect::<Vec<_>>(), [0, 3000, 1400]);
        // Two short queues: the third UE gets what is left after both.
        let out = run(&mut s, &[1000, 3000, 2000], &[BIG, 1500, 500]);
        assert_eq!(bytes(&out), [250, 1500, 500]);
    }

    #[test]
    fn proportional_fair_shares_the_cell_over_time() {
        // UE 0 has twice UE 1's channel; PF equalises the time share, so UE 0 gets twice the bytes.
        let mut s = Scheduler::new(SchedulerKind::ProportionalFair, 2, 100);
        let mut total = [0u64; 2];
        let mut ttis_first = [0u64; 2];
        for _ in 0..10_000 {
            let out = run(&mut s, &[2000, 1000], &[BIG, BIG]);
            for i in 0..2 {
                total[i] += out[i].bytes;
                ttis_first[i] += (out[i].bytes > 0) as u64;
            }
        }
        let share = ttis_first[0] as f64 / 10_000.0;
        assert!((share - 0.5).abs() < 0.02, "UE 0 got {share} of the TTIs");
        assert!((total[0] as f64 / total[1] as f64 - 2.0).abs() < 0.1, "{total:?}");
        // Max C/I on the same channels would starve UE 1.
        let mut m = Scheduler::new(SchedulerKind::MaxCi, 2, 100);
        assert_eq!(bytes(&run(&mut m, &[2000, 1000], &[BIG, BIG])), [2000, 0]);
    }

    #[test]
    fn proportional_fair_favours_a_ue_at_its_channel_peak() {
        let mut s = Scheduler::new(SchedulerKind::ProportionalFair, 2, 100);
        for _ in 0..500 {
            run(&mut s, &[1000, 1000], &[BIG, BIG]);
        }
        // Equal averages (about 500 B/TTI each): a UE whose channel rises gets the TTI.
        assert_eq!(bytes(&run(&mut s, &[1000, 1500], &[BIG, BIG])), [0, 1500]);
        assert!((s.average(0) - 500.0).abs() < 20.0, "{}", s.average(0));
    }

    #[test]
    fn proportional_fair_averages_include_zero_ttis() {
        let mut s = Scheduler::new(SchedulerKind::ProportionalFair, 1, 10);
        run(&mut s, &[1000], &[BIG]);
        assert!((s.average(0) - 100.0).abs() < 1e-9);
        run(&mut s, &[1000], &[0]);
        assert!((s.average(0) - 90.0).abs() < 1e-9);
    }

    #[test]
    fn outage_ues_get_no_turn() {
        let mut s = Scheduler::new(SchedulerKind::RoundRobin, 2, 100);
        assert_eq!(bytes(&run(&mut s, &[0, 1000], &[BIG, BIG])), [0, 1000]);
        assert_eq!(bytes(&run(&mut s, &[0, 1000], &[BIG, BIG])), [0, 1000]);
    }
}
