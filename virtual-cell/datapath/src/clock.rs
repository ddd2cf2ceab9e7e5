//! The TTI clock (INTERFACE.md, "TTI clock and scheduler"): TTI `t` is due at `start + t * tti`; a late loop
//! runs every due TTI, in order; `duration_ms` ends the run at a TTI boundary. Time (ns) is an argument.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TtiClock {
    pub start_ns: u64,
    pub tti_ns: u64,
    /// The first TTI not to run (from `duration_ms`), if any.
    pub end_tti: Option<u64>,
}

/// What to do about TTI `next` at time `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Run it now; it is `lateness_ns` late.
    Run { due_ns: u64, lateness_ns: u64 },
    /// Not due yet.
    Wait { due_ns: u64 },
    /// `duration_ms` has passed: stop.
    End,
}

impl TtiClock {
    pub fn new(start_ns: u64, tti_us: u64, duration_ms: Option<u64>) -> TtiClock {
        let tti_ns = tti_us * 1000;
        TtiClock { start_ns, tti_ns, end_tti: duration_ms.map(|ms| (ms * 1_000_000).div_ceil(tti_ns)) }
    }

    pub fn due_ns(&self, tti: u64) -> u64 {
        self.start_ns + tti * self.tti_ns
    }

    pub fn step(&self, next: u64, now_ns: u64) -> Step {
        let due_ns = self.due_ns(next);
        if now_ns < due_ns {
            Step::Wait { due_ns }
        } else if self.end_tti.is_some_and(|end| next >= end) {
            Step::End
        } else {
            Step::Run { due_ns, lateness_ns: now_ns - due_ns }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// The TTIs a loop woken at `now` runs, with their lateness, as `run_due_ttis` does.
    fn catch_up(clock: &TtiClock, next: &mut u64, now: u64) -> Vec<(u64, u64)> {
        let mut ran = Vec::new();
        while let Step::Run { lateness_ns, .. } = clock.step(*next, now) {
            ran.push((*next, lateness_ns));
            *next += 1;
        }
        ran
    }

    #[test]
    fn tti_zero_is_due_at_the_start() {
        let clock = TtiClock::new(5 * MS, 1000, None);
        assert_eq!(clock.step(0, 5 * MS), Step::Run { due_ns: 5 * MS, lateness_ns: 0 });
        assert_eq!(clock.step(1, 5 * MS), Step::Wait { due_ns: 6 * MS });
    }

    #[test]
    fn a_late_loop_runs_every_due_tti_in_order() {
        let clock = TtiClock::new(0, 1000, None);
        let mut next = 0;
        assert_eq!(catch_up(&clock, &mut next, 50_000), [(0, 50_000)]);
        // Woken 3.5 ms late: TTIs 1..=4 all run now, each with its own lateness.
        assert_eq!(
            catch_up(&clock, &mut next, 4 * MS + MS / 2),
            [(1, 3_500_000), (2, 2_500_000), (3, 1_500_000), (4, 500_000)]
        );
        assert_eq!(clock.step(next, 4 * MS + MS / 2), Step::Wait { due_ns: 5 * MS });
    }

    #[test]
    fn the_duration_ends_at_a_tti_boundary() {
        // TTIs 0, 1 and 2 run; TTI 3, due at 3 ms, is the end.
        let clock = TtiClock { start_ns: 0, tti_ns: MS, end_tti: Some(3) };
        let mut next = 0;
        assert_eq!(catch_up(&clock, &mut next, 10 * MS).len(), 3);
        assert_eq!(clock.step(next, 10 * MS), Step::End);
        assert_eq!(clock.step(next, 3 * MS - 1), Step::Wait { due_ns: 3 * MS });
        assert_eq!(TtiClock::new(0, 1000, Some(2500)).end_tti, Some(2500));
        assert_eq!(TtiClock::new(0, 300, Some(1)).end_tti, Some(4));
    }
}
