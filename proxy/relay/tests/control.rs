//! The controller laws (`src/control.rs`) through the C ABI the proxy calls (`rnf_smvs_step`, `rnf_rnf_step`,
//! INTERFACE.md), on one or two bank rows whose columns are laid out as `rnf_proxy.feedback.RowBank` lays them
//! out. Every expected value is worked out by hand in the comments from paper 000 eq. (36) (SMVS) and paper 001
//! eqs. (1)-(2) (RNF) and the rules `control.rs` documents; the Python tests (`proxy/tests/test_smvs.py`,
//! `test_rnf.py`) check the same laws through the proxy's banks. These run under `cargo test` and are what
//! `cargo mutants` on the laws is measured with (docs/testing.md).
//!
//! The column layout is written once, in `COMMON`, `SMVS` and `RNF` below: a column added to a law's columns
//! structure is one line here, and a count that no longer matches is refused by the library (-EINVAL), which
//! `smvs` and `rnf1` report as such.

use std::ffi::c_void;

use rnf_relay::control::{
    ERROR_HORIZON, FORECAST_RING, LAGS, MAX_D, MIN_REFERENCE, MOMENTS, Output, QUOTA_HISTORY, Report, RnfParams,
    SmvsParams, cqi_efficiency,
};
use rnf_relay::{rnf_rnf_step, rnf_smvs_step};

const NAN: f64 = f64::NAN;
const TS: f64 = 0.01;
/// Blocks of the eta horizon in every SMVS bank here.
const BLOCKS: usize = 2;

/// A column's element type, its width in elements per row and its value in a new row.
#[derive(Clone, Copy)]
enum Init {
    F(f64, usize),
    I(i64),
    B(bool),
}

const COMMON: [(&str, Init); 22] = [
    ("min_rtt", Init::F(0.0, 1)),
    ("prev_queue", Init::F(0.0, 1)),
    ("steps", Init::I(0)),
    ("last_report", Init::F(NAN, 1)),
    ("in_fallback", Init::B(true)),
    ("w", Init::F(NAN, 1)),
    ("q", Init::F(0.0, 1)),
    ("b", Init::F(0.0, 1)),
    ("s", Init::F(NAN, 1)),
    ("outage", Init::B(false)),
    ("per_efficiency", Init::F(NAN, 1)),
    ("cqi", Init::F(NAN, 1)),
    ("services", Init::F(0.0, FORECAST_RING)),
    ("forecasts", Init::F(NAN, FORECAST_RING)),
    ("errors", Init::F(0.0, ERROR_HORIZON)),
    ("error_count", Init::I(0)),
    ("margin", Init::F(NAN, 1)),
    ("measured", Init::B(false)),
    ("first_release_step", Init::I(-1)),
    ("first_awaited", Init::F(NAN, 1)),
    ("first_loop", Init::I(0)),
    ("reserve", Init::F(0.0, 1)),
];

const SMVS: [(&str, Init); 14] = [
    ("q0", Init::F(NAN, 1)),
    ("eps", Init::F(NAN, 1)),
    ("b_max", Init::F(NAN, 1)),
    ("b_bar", Init::F(NAN, 1)),
    ("eta_low", Init::F(0.0, BLOCKS)),
    ("eta_high", Init::F(0.0, BLOCKS)),
    ("eta_count", Init::I(0)),
    ("quotas", Init::F(0.0, QUOTA_HISTORY)),
    ("d", Init::I(1)),
    ("lag_cov", Init::F(0.0, LAGS)),
    ("means", Init::F(0.0, MOMENTS)),
    ("loop_steps", Init::I(0)),
    ("b_fast", Init::F(NAN, 1)),
    ("rate_errors", Init::F(0.0, 2)),
];

const RNF: [(&str, Init); 18] = [
    ("rate", Init::F(NAN, 1)),
    ("queue_sum", Init::F(0.0, 1)),
    ("queue_count", Init::F(0.0, 1)),
    ("next_feedback", Init::F(NAN, 1)),
    ("q_ref", Init::F(NAN, 1)),
    ("smoothed", Init::F(NAN, 1)),
    ("in_flight", Init::F(NAN, 1)),
    ("srtt", Init::F(0.0, 1)),
    ("pipe", Init::F(NAN, 1)),
    ("loop_tau", Init::F(NAN, 1)),
    ("quotas", Init::F(0.0, QUOTA_HISTORY)),
    ("transit", Init::F(NAN, 1)),
    ("lag_cov", Init::F(0.0, LAGS)),
    ("means", Init::F(0.0, MOMENTS)),
    ("loop_steps", Init::I(0)),
    ("loop_now", Init::I(0)),
    ("fast", Init::F(NAN, 1)),
    ("rate_errors", Init::F(0.0, 2)),
];

enum Column {
    F(Vec<f64>),
    I(Vec<i64>),
    B(Vec<bool>),
}

/// A bank's columns, `capacity` rows, owned here as numpy owns them in the proxy.
struct Bank {
    capacity: usize,
    names: Vec<&'static str>,
    columns: Vec<Column>,
}

impl Bank {
    fn new(layout: &[(&'static str, Init)], capacity: usize) -> Bank {
        let columns = layout
            .iter()
            .map(|&(_, init)| match init {
                Init::F(value, width) => Column::F(vec![value; capacity * width]),
                Init::I(value) => Column::I(vec![value; capacity]),
                Init::B(value) => Column::B(vec![value; capacity]),
            })
            .collect();
        Bank { capacity, names: layout.iter().map(|&(name, _)| name).collect(), columns }
    }

    fn smvs(capacity: usize) -> Bank {
        Bank::new(&[&COMMON[..], &SMVS[..]].concat(), capacity)
    }

    fn rnf(capacity: usize) -> Bank {
        Bank::new(&[&COMMON[..], &RNF[..]].concat(), capacity)
    }

    fn index(&self, name: &str) -> usize {
        self.names.iter().position(|&n| n == name).unwrap_or_else(|| panic!("no column {name}"))
    }

    fn f(&mut self, name: &str) -> &mut Vec<f64> {
        let index = self.index(name);
        match &mut self.columns[index] {
            Column::F(values) => values,
            _ => panic!("{name} is not a column of doubles"),
        }
    }

    fn i(&mut self, name: &str) -> &mut Vec<i64> {
        let index = self.index(name);
        match &mut self.columns[index] {
            Column::I(values) => values,
            _ => panic!("{name} is not a column of i64"),
        }
    }

    fn flag(&mut self, name: &str) -> &mut Vec<bool> {
        let index = self.index(name);
        match &mut self.columns[index] {
            Column::B(values) => values,
            _ => panic!("{name} is not a column of bool"),
        }
    }

    fn pointers(&mut self) -> Vec<*mut c_void> {
        self.columns
            .iter_mut()
            .map(|column| match column {
                Column::F(values) => values.as_mut_ptr().cast(),
                Column::I(values) => values.as_mut_ptr().cast(),
                Column::B(values) => values.as_mut_ptr().cast(),
            })
            .collect()
    }
}

/// A report of one 10 ms period: no outage flag, nothing dropped, no limit or CQI reported, the proxy's release
/// not known, the idle TTIs not counted.
fn report(row: usize, queue: f64, served: f64) -> Report {
    // SAFETY: a Report is doubles only; zero is a valid value of each (fields added later read as "none").
    let mut report: Report = unsafe { std::mem::zeroed() };
    report.row = row as f64;
    report.queue = queue;
    report.served = served;
    report.period = TS;
    report.released = NAN;
    report.idle = NAN;
    report
}

/// SMVS with the paper's switching, d configured (1), a horizon of one-step blocks, no target, no guard:
/// Ts = 10 ms, alpha = 1/2, gamma = 1, delta Ts = 1/2.
fn smvs_params() -> SmvsParams {
    // SAFETY: plain numbers; zero is "off" for every switch (the paper's sgn, no channel rate, no guard).
    let mut params: SmvsParams = unsafe { std::mem::zeroed() };
    params.ts = TS;
    params.alpha = 0.5;
    params.gamma = 1.0;
    params.delta = 50.0;
    params.d = 1;
    params.block = 1;
    params.blocks = BLOCKS as i64;
    params.target = NAN;
    params.band_fraction = NAN;
    params
}

/// RNF with q_ref = 20000 B, tau = 50 ms, feedback every 40 ms, one period's rate (the paper's), no guard.
fn rnf_params() -> RnfParams {
    // SAFETY: plain numbers; zero is "off" for every switch.
    let mut params: RnfParams = unsafe { std::mem::zeroed() };
    params.q_ref = 20_000.0;
    params.tau = 0.05;
    params.feedback_period = 0.04;
    params.rate_change = 0.1;
    params.min_window = 2896.0;
    params
}

fn output() -> Output {
    Output { limit: 0, step: 0, step_s: 0.0, pacing: 0.0, cap: 0.0 }
}

/// A law's entry point in the C ABI (`rnf_smvs_step`, `rnf_rnf_step`), over its parameters `P` and columns `C`.
type Step<P, C> = unsafe extern "C" fn(*const P, *const C, usize, usize, *const Report, usize, f64, *mut Output) -> i32;

/// The library's answer to a burst: its status and one output per report.
fn step_status<P, C>(
    step: Step<P, C>,
    params: &P,
    bank: &mut Bank,
    reports: &[Report],
    now: f64,
) -> (i32, Vec<Output>) {
    let pointers = bank.pointers();
    let mut outputs = vec![output(); reports.len()];
    // SAFETY: the pointers address the bank's columns, `capacity` rows each, wide as the layout says.
    let status = unsafe {
        step(
            params,
            pointers.as_ptr().cast(),
            pointers.len(),
            bank.capacity,
            reports.as_ptr(),
            reports.len(),
            now,
            outputs.as_mut_ptr(),
        )
    };
    (status, outputs)
}

fn smvs_status(params: &SmvsParams, bank: &mut Bank, reports: &[Report], now: f64) -> (i32, Vec<Output>) {
    step_status(rnf_smvs_step, params, bank, reports, now)
}

fn smvs(params: &SmvsParams, bank: &mut Bank, reports: &[Report], now: f64) -> Vec<Output> {
    let (status, outputs) = smvs_status(params, bank, reports, now);
    assert_eq!(status, 0, "refused: if the column layout changed, update SMVS/COMMON here");
    outputs
}

/// One report of row 0 at `now`; its output.
fn smvs1(params: &SmvsParams, bank: &mut Bank, report: Report, now: f64) -> Output {
    smvs(params, bank, &[report], now)[0]
}

fn rnf_status(params: &RnfParams, bank: &mut Bank, reports: &[Report], now: f64) -> (i32, Vec<Output>) {
    step_status(rnf_rnf_step, params, bank, reports, now)
}

fn rnf1(params: &RnfParams, bank: &mut Bank, report: Report, now: f64) -> Output {
    let (status, outputs) = rnf_status(params, bank, &[report], now);
    assert_eq!(status, 0, "refused: if the column layout changed, update RNF/COMMON here");
    outputs[0]
}

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() <= 1e-9 * expected.abs().max(1.0)
}

macro_rules! assert_close {
    ($actual:expr, $expected:expr) => {{
        let (actual, expected): (f64, f64) = ($actual, $expected);
        assert!(close(actual, expected), "{} = {actual}, expected {expected}", stringify!($actual));
    }};
}

// ---- SMVS, paper 000 eq. (36) ----

#[test]
fn smvs_quotas_follow_eq_36_step_by_step() {
    let params = smvs_params();
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0; // eps Ts = 100 B
    // n = 2d = 2 quotas in flight. Step 1: b = 500 kB/s, b_bar = b (first), eta = 0 fills the horizon.
    // S = 4000 - 10000 - 2 x 5000 + 0 = -16000; w = 5000 + 0 - 0.5 x (-16000) - (0 + 100) x (-1) = 13100
    let out = smvs1(&params, &mut bank, report(0, 4000.0, 5000.0), 1.0);
    assert_eq!((out.limit, out.step, out.step_s, out.pacing, out.cap), (13_100, 1, TS, 0.0, 0.0));
    assert_close!(bank.f("s")[0], -16_000.0);
    // Step 2: b = 700 kB/s, b_bar = (500 + 700) / 2 = 600 kB/s, eta = (700 - 600) kB/s x Ts = 1000 in block 1:
    // eta_l = 0, eta_u = 1000, eta_1 = eta_2 = 500. Past quotas w(1) + w(0) = 13100.
    // S = 12000 - 10000 - 2 x 6000 + 13100 = 3100; w = 6000 + 500 - 1550 - (500 + 100) = 4350
    let out = smvs1(&params, &mut bank, report(0, 12_000.0, 7000.0), 1.01);
    assert_eq!((out.limit, out.step), (4350, 2));
    assert_close!(bank.f("s")[0], 3100.0);
    assert_close!(bank.f("b_bar")[0], 600_000.0);
    assert_close!(bank.f("w")[0], 4350.0);
    assert_close!(bank.f("q")[0], 12_000.0);
    assert_close!(bank.f("b")[0], 700_000.0);
    assert_close!(bank.f("last_report")[0], 1.01);
    assert!(!bank.flag("outage")[0] && !bank.flag("in_fallback")[0]);
    assert_eq!((bank.i("steps")[0], bank.i("d")[0]), (2, 1));
    // Step 3: b = b_bar = 600 kB/s, eta = 0 starts block 0 afresh; block 1 still holds 1000.
    // Past w(2) + w(1) = 17450. S = 9000 - 10000 - 12000 + 17450 = 4450; w = 6000 + 500 - 2225 - 600 = 3675
    let out = smvs1(&params, &mut bank, report(0, 9000.0, 6000.0), 1.02);
    assert_eq!(out.limit, 3675);
    // Step 4: eta = 0 starts block 1 afresh: the 1000 has left the horizon, eta_1 = eta_2 = 0.
    // Past 3675 + 4350 = 8025. S = 10000 - 10000 - 12000 + 8025 = -3975; w = 6000 + 1987.5 + 100 = 8087.5,
    // rounded half to even
    let out = smvs1(&params, &mut bank, report(0, 10_000.0, 6000.0), 1.03);
    assert_eq!(out.limit, 8088);
    assert_close!(bank.f("w")[0], 8087.5);
    assert_eq!(&bank.f("quotas")[..5], &[0.0, 13_100.0, 4350.0, 3675.0, 8087.5]);
}

#[test]
fn at_the_sliding_surface_the_quota_is_the_rate_with_no_switching() {
    let params = smvs_params();
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    // S = 20000 - 10000 - 2 x 5000 + 0 = 0, sgn(0) = 0: w = b_bar Ts = 5000, neither pushed up nor down
    let out = smvs1(&params, &mut bank, report(0, 20_000.0, 5000.0), 0.0);
    assert_eq!(out.limit, 5000);
    assert_eq!(bank.f("s")[0], 0.0);
}

#[test]
fn a_large_queue_asks_for_nothing_rather_than_a_negative_quota() {
    let params = smvs_params();
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    // S = 50000 - 10000 - 10000 = 30000: w = 5000 - 15000 - 100 < 0, clipped at 0
    let out = smvs1(&params, &mut bank, report(0, 50_000.0, 5000.0), 0.0);
    assert_eq!(out.limit, 0);
    assert_eq!(bank.f("w")[0], 0.0);
}

#[test]
fn the_eta_horizon_keeps_each_blocks_extremes_and_forgets_a_block_a_horizon_later() {
    let mut params = smvs_params();
    params.block = 2; // two blocks of two steps
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 0.0;
    // eta = (b - b_bar) Ts after b_bar <- (b_bar + b) / 2
    let served_eta_low_high: [(f64, [f64; 2], [f64; 2]); 5] = [
        (5000.0, [0.0, 0.0], [0.0, 0.0]),            // eta 0, the first: fills every block
        (7000.0, [0.0, 0.0], [1000.0, 0.0]),         // b_bar 600k, eta 1000: block 0 (steps 0-1) widens
        (4000.0, [0.0, -1000.0], [1000.0, -1000.0]), // b_bar 500k, eta -1000: block 1 starts afresh
        (5000.0, [0.0, -1000.0], [1000.0, 0.0]),     // b_bar 500k, eta 0: block 1 widens
        (6000.0, [500.0, -1000.0], [500.0, 0.0]),    // b_bar 550k, eta 500: block 0 starts afresh
    ];
    for (step, (served, low, high)) in served_eta_low_high.into_iter().enumerate() {
        smvs1(&params, &mut bank, report(0, 10_000.0, served), step as f64 * TS);
        assert_eq!(
            (bank.f("eta_low").clone(), bank.f("eta_high").clone()),
            (low.to_vec(), high.to_vec()),
            "step {}",
            step + 1
        );
        assert_eq!(bank.i("eta_count")[0], step as i64 + 1);
    }
    // the last step's law: eta_l = -1000, eta_u = 500: eta_1 = -250, eta_2 = 750; b_bar Ts = 5500,
    // past w(4) + w(3); S = 10000 - 10000 - 11000 + past
    let past = bank.f("quotas")[4] + bank.f("quotas")[3];
    let s = -11_000.0 + past;
    let w = (5500.0 - 250.0 - 0.5 * s - 750.0 * s.signum()).max(0.0);
    assert_close!(bank.f("s")[0], s);
    assert_close!(bank.f("w")[0], w);
}

#[test]
fn an_outage_releases_nothing_and_freezes_the_rate_estimates() {
    let params = smvs_params();
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    smvs1(&params, &mut bank, report(0, 4000.0, 5000.0), 0.0);
    let (b_bar, b_fast) = (bank.f("b_bar")[0], bank.f("b_fast")[0]);
    // flagged by the eNB
    let mut flagged = report(0, 4000.0, 7000.0);
    flagged.flagged = 1.0;
    let out = smvs1(&params, &mut bank, flagged, 0.01);
    assert_eq!((out.limit, out.step), (0, 2));
    assert!(bank.flag("outage")[0]);
    assert_eq!((bank.f("b")[0], bank.f("w")[0], bank.f("quotas")[2]), (0.0, 0.0, 0.0));
    assert_eq!((bank.f("b_bar")[0], bank.f("b_fast")[0], bank.i("eta_count")[0]), (b_bar, b_fast, 1));
    // nothing served for a whole period while data waited before and after, unflagged, is no outage: a sample of
    // the rate, b = 0 in eq. (19): b_bar = 0.5 x b_bar
    smvs1(&params, &mut bank, report(0, 4000.0, 0.0), 0.02);
    assert!(!bank.flag("outage")[0]);
    assert_eq!(bank.f("b_bar")[0], 0.5 * b_bar);
}

#[test]
fn an_empty_period_is_no_outage_when_the_queue_was_empty_or_is_empty() {
    let params = smvs_params();
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    // nothing served, queue empty before: data has just arrived, the link is not known to be down
    smvs1(&params, &mut bank, report(0, 4000.0, 0.0), 0.0);
    assert!(!bank.flag("outage")[0]);
    assert_eq!(bank.f("b_bar")[0], 0.0);
    // nothing served with data waiting before, but none now: nothing to serve, no outage either
    smvs1(&params, &mut bank, report(0, 0.0, 0.0), 0.01);
    assert!(!bank.flag("outage")[0]);
    assert_eq!(bank.i("eta_count")[0], 2);
}

#[test]
fn back_from_the_fallback_the_quotas_in_flight_are_the_steady_state() {
    let params = smvs_params();
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    bank.f("b_bar")[0] = 600_000.0; // known from before the fallback (in_fallback is set in a new row)
    // b stays 600 kB/s: the history is b_bar Ts = 6000 per step, so S = 15000 - 10000 - 12000 + 12000 = 5000
    smvs1(&params, &mut bank, report(0, 15_000.0, 6000.0), 0.0);
    assert_close!(bank.f("s")[0], 5000.0);
    assert!(bank.f("quotas").iter().enumerate().all(|(slot, &w)| slot == 1 || w == 6000.0));
    // stepped again without a fallback in between, the history is the quotas released
    let w1 = bank.f("w")[0];
    smvs1(&params, &mut bank, report(0, 15_000.0, 6000.0), 0.01);
    assert_close!(bank.f("s")[0], 15_000.0 - 10_000.0 - 12_000.0 + w1 + 6000.0);
}

#[test]
fn b_max_is_the_reported_limit_unless_configured() {
    let params = smvs_params();
    let mut bank = Bank::smvs(2);
    bank.f("q0").fill(10_000.0);
    bank.f("eps").fill(10_000.0);
    bank.f("b_max")[1] = 50_000.0; // configured for row 1
    let mut none = report(0, 0.0, 5000.0);
    none.limit = 0.0;
    smvs(&params, &mut bank, &[none], 0.0);
    assert!(bank.f("b_max")[0].is_nan());
    let (mut zero, mut one) = (report(0, 0.0, 5000.0), report(1, 0.0, 5000.0));
    zero.limit = 100_000.0;
    one.limit = 100_000.0;
    smvs(&params, &mut bank, &[zero, one], 0.01);
    assert_eq!(bank.f("b_max")[..], [100_000.0, 50_000.0]);
}

#[test]
fn the_overflow_guard_keeps_the_queue_and_the_quotas_in_flight_under_b_max_less_the_margin() {
    let mut params = smvs_params();
    params.guard = 1;
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 90_000.0;
    bank.f("eps")[0] = 10_000.0;
    bank.f("b_max")[0] = 100_000.0; // margin 4 % + 3000 = 7000: 93000 B
    bank.f("quotas")[0] = 10_000.0; // w(0)
    bank.f("quotas")[QUOTA_HISTORY - 1] = 5000.0; // w(-1): 15000 in flight at step 1
    // S = 70000 - 90000 - 10000 + 15000 = -15000: the law asks 5000 + 7500 + 100 = 12600, the room is
    // 93000 - 70000 - 15000 = 8000
    let out = smvs1(&params, &mut bank, report(0, 70_000.0, 5000.0), 0.0);
    assert_eq!((out.limit, out.cap), (8000, 93_000.0));
    // without the guard the law's quota stands and nothing is capped
    params.guard = 0;
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 90_000.0;
    bank.f("eps")[0] = 10_000.0;
    bank.f("b_max")[0] = 100_000.0;
    bank.f("quotas")[0] = 10_000.0;
    bank.f("quotas")[QUOTA_HISTORY - 1] = 5000.0;
    let out = smvs1(&params, &mut bank, report(0, 70_000.0, 5000.0), 0.0);
    assert_eq!((out.limit, out.cap), (12_600, 0.0));
}

#[test]
fn the_guard_releases_nothing_once_the_queue_and_the_quotas_in_flight_fill_the_room() {
    let mut params = smvs_params();
    params.guard = 1;
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 90_000.0;
    bank.f("eps")[0] = 10_000.0;
    bank.f("b_max")[0] = 100_000.0;
    bank.f("quotas")[0] = 10_000.0;
    bank.f("quotas")[QUOTA_HISTORY - 1] = 5000.0;
    // S = 90000 - 90000 - 10000 + 15000 = 5000: the law asks 5000 - 2500 - 100 = 2400; the room is
    // 93000 - 90000 - 15000 < 0
    let out = smvs1(&params, &mut bank, report(0, 90_000.0, 5000.0), 0.0);
    assert_eq!(out.limit, 0);
}

#[test]
fn without_b_max_the_guard_has_nothing_to_guard() {
    let mut params = smvs_params();
    params.guard = 1;
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    let out = smvs1(&params, &mut bank, report(0, 4000.0, 5000.0), 0.0);
    assert_eq!((out.limit, out.cap), (13_100, 0.0));
}

#[test]
fn a_delay_target_sets_q0_from_the_slower_rate_estimate_and_eps_from_rule_43() {
    let mut params = smvs_params();
    params.alpha = 0.9;
    params.target = 0.02;
    params.band_fraction = 0.5;
    let mut bank = Bank::smvs(1);
    bank.flag("measured")[0] = true; // past its start-up
    // step 1: b = b_bar = b_fast = 750 kB/s: q0 = 20 ms x 750 kB/s = 15000 B; no B_max: the margin is q0,
    // eps = 0.5 x 15000 x (1 - 0.5) / 0.01 = 375000 B/s
    smvs1(&params, &mut bank, report(0, 0.0, 7500.0), 0.0);
    assert_close!(bank.f("q0")[0], 15_000.0);
    assert_close!(bank.f("eps")[0], 375_000.0);
    // step 2, the eNB reports B_max = 100 kB: b = 250 kB/s, b_bar = 0.9 x 750k + 0.1 x 250k = 700 kB/s,
    // b_fast = (750k + 250k) / 2 = 500 kB/s: q0 = 20 ms x 500 kB/s = 10000; margin min(10000, 90000),
    // eps = 0.5 x 10000 x 0.5 / 0.01 = 250000
    let mut second = report(0, 0.0, 2500.0);
    second.limit = 100_000.0;
    smvs1(&params, &mut bank, second, 0.01);
    assert_close!(bank.f("b_bar")[0], 700_000.0);
    assert_close!(bank.f("b_fast")[0], 500_000.0);
    assert_close!(bank.f("q0")[0], 10_000.0);
    assert_close!(bank.f("eps")[0], 250_000.0);
}

#[test]
fn a_delay_target_is_held_under_the_guarded_limit_and_over_the_smallest_reference() {
    let mut params = smvs_params();
    params.target = 0.05;
    params.band_fraction = 0.5;
    let mut bank = Bank::smvs(1);
    bank.flag("measured")[0] = true; // past its start-up: the smallest reference is two packets
    bank.f("b_max")[0] = 30_000.0;
    // 50 ms x 750 kB/s = 37500 B, but at most (30000 - 1200 - 3000) / 1.5 = 17200 B; the margin is
    // min(17200, 30000 - 17200) = 12800: eps = 0.5 x 12800 x 0.5 / 0.01 = 320000
    smvs1(&params, &mut bank, report(0, 0.0, 7500.0), 0.0);
    assert_close!(bank.f("q0")[0], 17_200.0);
    assert_close!(bank.f("eps")[0], 320_000.0);
    // a rate near nothing: 50 ms x 10 kB/s = 500 B, raised to the smallest reference, 3000 B
    let mut bank = Bank::smvs(1);
    bank.flag("measured")[0] = true; // past its start-up: the smallest reference is two packets
    smvs1(&params, &mut bank, report(0, 0.0, 100.0), 0.0);
    assert_eq!(bank.f("q0")[0], MIN_REFERENCE);
    // a B_max too small for any reference: 0, never negative
    let mut bank = Bank::smvs(1);
    bank.flag("measured")[0] = true; // past its start-up: the smallest reference is two packets
    bank.f("b_max")[0] = 3000.0;
    smvs1(&params, &mut bank, report(0, 0.0, 7500.0), 0.0);
    assert_eq!(bank.f("q0")[0], 0.0);
}

#[test]
fn the_default_target_is_the_loop_delay_and_a_fixed_eps_stays() {
    let mut params = smvs_params();
    params.target = 0.0;
    let mut bank = Bank::smvs(1);
    bank.f("eps")[0] = 1234.0;
    // d = 1 configured: 2 quotas in flight, a loop of 3 steps, 30 ms x 750 kB/s = 22500 B; eps is left alone
    smvs1(&params, &mut bank, report(0, 0.0, 7500.0), 0.0);
    assert_close!(bank.f("q0")[0], 22_500.0);
    assert_eq!(bank.f("eps")[0], 1234.0);
}

#[test]
fn the_quotas_in_flight_come_from_the_rtt_as_in_the_paper() {
    let mut params = smvs_params();
    params.d = -1;
    // d = ceil(min RTT / 2 / Ts): 35 ms -> 2, 40 ms -> 2 (exactly), 0 (none yet) -> 1, 10 s -> MAX_D
    for (min_rtt, d) in [(0.035, 2), (0.04, 2), (0.0, 1), (10.0, MAX_D)] {
        let mut bank = Bank::smvs(1);
        bank.f("q0")[0] = 10_000.0;
        bank.f("eps")[0] = 10_000.0;
        bank.f("min_rtt")[0] = min_rtt;
        smvs1(&params, &mut bank, report(0, 20_000.0, 5000.0), 0.0);
        assert_eq!(bank.i("d")[0], d, "min RTT {min_rtt}");
        // 2d quotas in flight at b_bar Ts = 5000 each, none released yet
        assert_close!(bank.f("s")[0], 10_000.0 - 2.0 * d as f64 * 5000.0);
    }
}

#[test]
fn the_quotas_in_flight_are_the_measured_loop_delay_less_one() {
    let mut params = smvs_params();
    params.d = -1;
    params.loop_measured = 1;
    // learnt, else the first release's (0 until it has arrived), else 1 + d from the RTT (17.5 ms: d = 2)
    for (loop_steps, first_loop, min_rtt, in_flight) in
        [(5, 2, 0.035, 4), (0, 2, 0.035, 1), (0, 0, 0.035, 2), (0, 0, 0.0, 1)]
    {
        let mut bank = Bank::smvs(1);
        bank.f("q0")[0] = 10_000.0;
        bank.f("eps")[0] = 10_000.0;
        bank.i("loop_steps")[0] = loop_steps;
        bank.i("first_loop")[0] = first_loop;
        bank.f("min_rtt")[0] = min_rtt;
        smvs1(&params, &mut bank, report(0, 20_000.0, 5000.0), 0.0);
        assert_eq!(bank.i("d")[0], in_flight);
        assert_close!(bank.f("s")[0], 10_000.0 - in_flight as f64 * 5000.0);
    }
}

#[test]
fn an_unresolved_q0_gives_no_decision_and_releases_nothing() {
    let params = smvs_params();
    let mut bank = Bank::smvs(1); // q0 NaN: B_max not known yet
    let out = smvs1(&params, &mut bank, report(0, 4000.0, 5000.0), 0.0);
    assert_eq!((out.limit, out.step), (-1, 1));
    assert!(bank.f("w")[0].is_nan());
    assert_eq!(bank.f("quotas")[1], 0.0);
}

#[test]
fn reports_step_their_rows_in_order_and_a_row_reported_twice_twice() {
    let params = smvs_params();
    let mut bank = Bank::smvs(2);
    bank.f("q0").fill(10_000.0);
    bank.f("eps").fill(10_000.0);
    let outs =
        smvs(&params, &mut bank, &[report(1, 4000.0, 5000.0), report(0, 4000.0, 5000.0), report(1, 0.0, 5000.0)], 0.0);
    assert_eq!(outs.iter().map(|o| o.step).collect::<Vec<_>>(), [1, 1, 2]);
    assert_eq!(outs[0].limit, outs[1].limit);
    assert_eq!(bank.i("steps")[..], [1, 2]);
    assert_eq!(bank.f("q")[..], [4000.0, 0.0]);
}

#[test]
fn a_row_out_of_range_or_impossible_parameters_step_nothing() {
    let params = smvs_params();
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    for row in [1.0, -1.0, 0.5] {
        let mut bad = report(0, 0.0, 5000.0);
        bad.row = row;
        let (status, _) = smvs_status(&params, &mut bank, &[report(0, 0.0, 5000.0), bad], 0.0);
        assert_eq!(status, -libc_einval(), "row {row}");
    }
    let mut broken = [smvs_params(), smvs_params(), smvs_params()];
    broken[0].blocks = 0;
    broken[1].block = 0;
    broken[2].d = MAX_D + 1;
    for params in &broken {
        assert_eq!(smvs_status(params, &mut bank, &[report(0, 0.0, 5000.0)], 0.0).0, -libc_einval());
    }
    assert_eq!(bank.i("steps")[0], 0, "nothing stepped");
    let mut longest = smvs_params();
    longest.d = MAX_D;
    assert_eq!(smvs_status(&longest, &mut bank, &[report(0, 0.0, 5000.0)], 0.0).0, 0);
}

fn libc_einval() -> i32 {
    22 // EINVAL on Linux
}

// ---- SMVS's loop-delay estimator ----

/// A row that has taken `steps` steps, releasing from its first, with the quotas of `history` (by age: w(k-1),
/// w(k-2), ...) and the covariances and moments (the means of the changes of w and of the arrivals, the last
/// arrivals, the changes' variances, the pause, the arrivals' last change) given; no q0, so the law itself decides
/// nothing.
fn estimator(steps: i64, history: &[f64], lag_cov: &[f64], means: [f64; MOMENTS]) -> Bank {
    let mut bank = Bank::smvs(1);
    bank.i("steps")[0] = steps;
    bank.i("first_release_step")[0] = 0;
    let k = steps + 1;
    for (age, &w) in history.iter().enumerate() {
        bank.f("quotas")[(k - 1 - age as i64).rem_euclid(QUOTA_HISTORY as i64) as usize] = w;
    }
    bank.f("lag_cov")[..lag_cov.len()].copy_from_slice(lag_cov);
    bank.f("means").copy_from_slice(&means);
    bank
}

#[test]
fn the_loop_delay_is_the_lag_at_which_the_changes_of_quotas_and_arrivals_covary_most() {
    let params = smvs_params();
    // w(k-1) = 1000, w(k-2) = 400, 0 before: the quota changed by 600 one step ago, by 400 two steps ago; the
    // arrivals changed by 200 the period before
    let mut bank = estimator(130, &[1000.0, 400.0], &[], [200.0, 400.0, 100.0, 0.0, 0.0, 0.0, 200.0]);
    bank.f("prev_queue")[0] = 100.0;
    let mut arrivals = report(0, 600.0, 300.0);
    arrivals.dropped = 200.0; // arrived: 600 - 100 (queued before) + 300 served + 200 dropped = 1000, 900 more
    smvs1(&params, &mut bank, arrivals, 0.0);
    // lag 1 against a(k) - (a(k-1) + a(k-2)) / 2, about the mean change: (900 - 400) + (200 - 400) / 2 = 400, so
    // cov(1) = 0.01 x (600 - 200) x 400 = 1600; the other lags against the change: cov(2) = 0.01 x (400 - 200) x
    // (900 - 400) = 1000, every other lag 0.01 x (0 - 200) x 500 = -1000
    let cov = bank.f("lag_cov").clone();
    assert_close!(cov[0], 1600.0);
    assert_close!(cov[1], 1000.0);
    assert!(cov[2..].iter().all(|&c| close(c, -1000.0)), "{cov:?}");
    // means <- 0.99 x mean + 0.01 x the newest change: w 198 + 6, arrivals 396 + 9; the arrivals and their change
    // kept
    let means = bank.f("means").clone();
    assert_close!(means[0], 204.0);
    assert_close!(means[1], 405.0);
    assert_eq!(means[2], 1000.0);
    assert_eq!(means[6], 900.0);
    // the variances, about the old means: 0.01 x 400^2 = 1600 and 0.01 x 500^2 = 2500; lag 1's correlation is
    // 1600 / sqrt(1600 x 2500) = 0.8
    assert_close!(means[3], 1600.0);
    assert_close!(means[4], 2500.0);
    assert_eq!(bank.i("loop_steps")[0], 1); // lag 2 is beside the peak, not a rival
}

#[test]
fn a_loop_delay_is_learnt_only_past_the_warm_up_counted_from_the_first_release() {
    let params = smvs_params();
    let mut cov = vec![0.0; LAGS];
    cov[2] = 100.0; // lag 3 stands out
    // (steps taken, the step of the first release, -1 for none, the loop learnt): the step is steps + 1, and 100
    // steps must have passed since the first release; the steps a UE reported idle before it count for nothing, and
    // while reports say the proxy released nothing, nothing is learnt however long. With no release known (reports
    // that do not say what was released) they count from the first report.
    for (steps, first_release, released, learnt) in [
        (99, 0, NAN, 0),
        (100, 0, NAN, 3),
        (179, 80, NAN, 0),
        (180, 80, NAN, 3),
        (180, 80, 0.0, 3),
        (99, -1, NAN, 0),
        (100, -1, NAN, 3),
        (100, -1, 0.0, 0),
        (1000, -1, 0.0, 0),
    ] {
        let mut bank = estimator(steps, &[], &cov, [0.0, 0.0, 0.0, 100.0, 100.0, 0.0, 0.0]);
        bank.i("first_release_step")[0] = first_release;
        smvs1(&params, &mut bank, Report { released, ..report(0, 0.0, 0.0) }, 0.0);
        assert_close!(bank.f("lag_cov")[2], 99.0); // 0.99 x 100, no new covariance (no change anywhere)
        assert_eq!(bank.i("loop_steps")[0], learnt, "step {} after a first release at {first_release}", steps + 1);
    }
}

#[test]
fn nothing_is_learnt_from_reports_that_waited_for_the_proxy_nor_for_the_lags_after() {
    let params = smvs_params();
    let mut cov = vec![0.0; LAGS];
    cov[2] = 100.0; // lag 3 stands out at a correlation of 1
    // the row's last report was stepped at 1 s; this one (step `steps` + 1) at `now`, with a pause set before;
    // the loop learnt, the pause's last step and lag 3's covariance after the step
    let learnt = |steps: i64, now: f64, paused_to: f64| {
        let mut bank = estimator(steps, &[], &cov, [0.0, 0.0, 0.0, 100.0, 100.0, paused_to, 0.0]);
        bank.f("last_report")[0] = 1.0;
        bank.i("loop_steps")[0] = 7;
        smvs1(&params, &mut bank, report(0, 0.0, 0.0), now);
        (bank.i("loop_steps")[0], bank.f("means")[5], bank.f("lag_cov")[2])
    };
    // 19 ms later, within two periods: on time; the covariance decays (0.99 x 100) and lag 3 is learnt
    assert_eq!(learnt(130, 1.019, 0.0), (3, 0.0, 99.0));
    // 77 ms later, the proxy stalled: 8 periods waited (ceil(7.7)), the 7 behind it are stepped at once; step 131
    // learns nothing and leaves the covariances as they were, and so does every step up to 131 + 8 + 40 (LAGS) =
    // 179, while the burst's quotas are within the lags
    assert_eq!(learnt(130, 1.077, 0.0), (7, 179.0, 100.0));
    // on time again, the pause holds to its last step, and learning resumes after it
    assert_eq!(learnt(178, 1.01, 179.0), (7, 179.0, 100.0));
    assert_eq!(learnt(179, 1.01, 179.0), (3, 179.0, 99.0));
}

#[test]
fn a_neighbouring_lag_does_not_hide_the_peak_but_an_alias_two_lags_away_does() {
    let params = smvs_params();
    let learnt = |cov: &[f64]| {
        let mut bank = estimator(130, &[], cov, [0.0, 0.0, 0.0, 100.0, 100.0, 0.0, 0.0]); // the peak's correlation: 1
        bank.i("loop_steps")[0] = 7; // learnt before
        smvs1(&params, &mut bank, report(0, 0.0, 0.0), 0.0);
        bank.i("loop_steps")[0]
    };
    assert_eq!(learnt(&[0.0, 0.0, 100.0, 80.0]), 3); // lag 4 beside lag 3: the delay's spread
    assert_eq!(learnt(&[0.0, 0.0, 100.0, 0.0, 80.0]), 7); // lag 5, 80 % of the peak: an alias, nothing learnt
    assert_eq!(learnt(&[0.0, 0.0, 100.0, 0.0, 60.0]), 3); // 60 %: the peak stands out
    assert_eq!(learnt(&[60.0, 0.0, 100.0]), 3); // a rival below the peak's lag
    assert_eq!(learnt(&[80.0, 0.0, 100.0]), 7);
    assert_eq!(learnt(&[-1.0, -5.0, -2.0]), 7); // no positive covariance: nothing learnt
    let mut none_at_all = vec![-5.0; LAGS];
    none_at_all[0] = 0.0;
    assert_eq!(learnt(&none_at_all), 7); // the largest is no covariance at all, however negative the rest
}

#[test]
fn one_pulse_meeting_one_pulse_is_not_a_loop_however_large_its_correlation() {
    let params = smvs_params();
    // variances of 100 B^2: a covariance of c is a correlation of c / 100. Every other lag +-16 (noise whose spread
    // is 16, mean 0), as a constant-rate run logged
    let learnt = |at: usize, peak: f64, beside: f64| {
        let mut cov: Vec<f64> = (0..LAGS).map(|lag| if lag % 2 == 0 { 16.0 } else { -16.0 }).collect();
        cov[at] = peak;
        cov[at - 1] = beside;
        cov[at + 1] = beside;
        let mut bank = estimator(130, &[], &cov, [0.0, 0.0, 0.0, 100.0, 100.0, 0.0, 0.0]);
        bank.i("loop_steps")[0] = 7;
        smvs1(&params, &mut bank, report(0, 0.0, 0.0), 0.0);
        bank.i("loop_steps")[0]
    };
    // a pulse pair at lag 28: 0.5 > 0.45, but 0.5 is 3 spreads of the other lags, not 5: nothing learnt
    assert_eq!(learnt(27, 50.0, -30.0), 7);
    // a loop of 3 that carries a change of rate: 0.9, 5.6 spreads above the others' mean
    assert_eq!(learnt(2, 90.0, 20.0), 3);
}

#[test]
fn a_loop_longer_than_the_path_allows_is_not_learnt() {
    let params = smvs_params();
    // one lag stands out at a correlation of 1, the others 0; `min_rtt` in seconds, 0 for none measured
    let learnt = |at: usize, min_rtt: f64| {
        let mut cov = vec![0.0; LAGS];
        cov[at - 1] = 100.0;
        let mut bank = estimator(130, &[], &cov, [0.0, 0.0, 0.0, 100.0, 100.0, 0.0, 0.0]);
        bank.f("min_rtt")[0] = min_rtt;
        bank.i("loop_steps")[0] = 7;
        smvs1(&params, &mut bank, report(0, 0.0, 0.0), 0.0);
        bank.i("loop_steps")[0]
    };
    // a smallest RTT of 45 ms at 10 ms periods: released over a step, then up to a round trip in the sender and
    // one more to the eNB (90 ms, 9 periods), and counted by the report of the period it arrived in, a step
    // later: 1 + 9 + 1 = 11 steps at most
    assert_eq!(learnt(11, 0.045), 11);
    assert_eq!(learnt(12, 0.045), 7);
    assert_eq!(learnt(22, 0.045), 7); // the constant-rate test's coincidence
    assert_eq!(learnt(22, 0.0), 22); // no RTT yet: every lag may be the loop
    assert_eq!(learnt(40, 0.5), 40); // a long path: all LAGS
    // a lag beyond the path still counts as a rival: the path's peak at lag 2 is not unique beside it
    let mut cov = vec![0.0; LAGS];
    cov[1] = 100.0;
    cov[21] = 90.0;
    let mut bank = estimator(130, &[], &cov, [0.0, 0.0, 0.0, 100.0, 100.0, 0.0, 0.0]);
    bank.f("min_rtt")[0] = 0.045;
    bank.i("loop_steps")[0] = 7;
    smvs1(&params, &mut bank, report(0, 0.0, 0.0), 0.0);
    assert_eq!(bank.i("loop_steps")[0], 7);
}

#[test]
fn a_lag_that_stands_out_is_learnt_only_if_it_explains_more_than_noise_would() {
    let params = smvs_params();
    // variances of 100 B^2 for both changes; every step decays the covariances and the variances alike, so the
    // correlation of lag 3 is its covariance over 100
    let learnt = |peak: f64| {
        let mut cov = vec![0.0; LAGS];
        cov[2] = peak;
        let mut bank = estimator(130, &[], &cov, [0.0, 0.0, 0.0, 100.0, 100.0, 0.0, 0.0]);
        bank.i("loop_steps")[0] = 7;
        smvs1(&params, &mut bank, report(0, 0.0, 0.0), 0.0);
        bank.i("loop_steps")[0]
    };
    // 5 standard deviations of two unrelated first differences over 199 periods: sqrt(1.5 / 199) x 5 = 0.434
    assert_eq!(learnt(40.0), 7); // 0.40: what 40 unrelated lags can reach
    assert_eq!(learnt(50.0), 3); // 0.50
    assert_eq!(learnt(19.0), 7); // the virtual cell's 25-step lag at a constant rate: 0.19
}

// ---- RNF, paper 001 eqs. (1)-(2) ----

#[test]
fn rnf_windows_follow_eqs_1_and_2() {
    let params = rnf_params();
    let mut bank = Bank::rnf(1);
    // eq. (1) at the first report: b = 500 kB/s, w = b tau + q_ref = 25000 + 20000 = 45000, paced over tau
    let out = rnf1(&params, &mut bank, report(0, 0.0, 5000.0), 0.0);
    assert_eq!((out.limit, out.step, out.step_s, out.cap), (45_000, 1, 0.0, 0.0));
    assert_close!(out.pacing, 45_000.0 / 0.05);
    assert_eq!((bank.f("rate")[0], bank.f("q_ref")[0], bank.f("next_feedback")[0]), (500_000.0, 20_000.0, 0.04));
    // 520 kB/s is within 10 % of 500: no new feed-forward; the queue is summed for eq. (2)
    assert_eq!(rnf1(&params, &mut bank, report(0, 10_000.0, 5200.0), 0.01).limit, 45_000);
    assert_eq!(rnf1(&params, &mut bank, report(0, 30_000.0, 5000.0), 0.02).limit, 45_000);
    assert_eq!((bank.f("queue_sum")[0], bank.f("queue_count")[0]), (40_000.0, 3.0));
    // eq. (2) when due (40 ms): the mean queue 66000 / 4 = 16500, w += 20000 - 16500
    let out = rnf1(&params, &mut bank, report(0, 26_000.0, 5000.0), 0.04);
    assert_eq!((out.limit, out.step), (48_500, 4));
    assert_eq!((bank.f("queue_sum")[0], bank.f("queue_count")[0], bank.f("next_feedback")[0]), (0.0, 0.0, 0.08));
    assert_close!(bank.f("w")[0], 48_500.0);
    assert_eq!((bank.f("q")[0], bank.f("b")[0]), (26_000.0, 500_000.0));
    // 800 kB/s is a change: eq. (1) replaces the window, correction included: 40000 + 20000
    let out = rnf1(&params, &mut bank, report(0, 5000.0, 8000.0), 0.05);
    assert_eq!(out.limit, 60_000);
    assert_close!(out.pacing, 1_200_000.0);
    // a drop to 200 kB/s with an empty queue served what arrived, not the link's rate: no change
    assert_eq!(rnf1(&params, &mut bank, report(0, 0.0, 2000.0), 0.06).limit, 60_000);
    assert_eq!(bank.f("rate")[0], 800_000.0);
    // the same drop with data waiting: 10000 + 20000
    assert_eq!(rnf1(&params, &mut bank, report(0, 100.0, 2000.0), 0.07).limit, 30_000);
    // a rise with an empty queue is a change all the same: 1 MB/s, 50000 + 20000
    assert_eq!(rnf1(&params, &mut bank, report(0, 0.0, 10_000.0), 0.075).limit, 70_000);
}

#[test]
fn rnf_freezes_its_window_in_an_outage() {
    let params = rnf_params();
    let mut bank = Bank::rnf(1);
    rnf1(&params, &mut bank, report(0, 10_000.0, 5000.0), 0.0);
    let mut flagged = report(0, 30_000.0, 9000.0);
    flagged.flagged = 1.0;
    // due for feedback and changed in rate, but down: neither law runs, nothing is summed
    let out = rnf1(&params, &mut bank, flagged, 0.05);
    assert_eq!(out.limit, 45_000);
    assert!(bank.flag("outage")[0]);
    assert_eq!((bank.f("queue_sum")[0], bank.f("queue_count")[0], bank.f("next_feedback")[0]), (10_000.0, 1.0, 0.04));
    assert_eq!(bank.f("rate")[0], 500_000.0);
    // nothing served with data waiting before and after, unflagged: no outage, the rate fell to 0 (eq. 1 with
    // b = 0: w = q_ref), and the feedback that was due runs (the queue's mean 20000: no correction)
    assert_eq!(rnf1(&params, &mut bank, report(0, 30_000.0, 0.0), 0.06).limit, 20_000);
    assert!(!bank.flag("outage")[0]);
}

/// The RAN clock: the window bounds the eNB's queue and what is on its way to it; each report releases the rest as
/// a quota in payload bytes (1448 of every 1500). tau = 50 ms: a loop of five periods, four quotas on their way.
#[test]
fn the_ran_clock_releases_the_window_less_the_queue_and_what_is_counted_on_its_way() {
    let mut params = rnf_params();
    params.ran_clock = 1;
    let payload: f64 = 1448.0 / 1500.0;
    let mut bank = Bank::rnf(1);
    // w = 500 kB/s x 0.05 + 20000 = 45000; 10000 queued, nothing released yet: 35000 B of packets
    let out = rnf1(&params, &mut bank, report(0, 10_000.0, 5000.0), 0.0);
    assert_eq!((out.limit, out.step, out.step_s, out.pacing), ((35_000.0 * payload).round() as i64, 1, TS, 0.0));
    assert_eq!(bank.f("transit")[0], 0.0);
    assert_eq!(bank.i("loop_now")[0], 5); // tau 50 ms: 5 periods, for the recorder
    // the proxy released 20000 B of payload (20718.8 of packets); 8000 B arrived (3000 more queued, 5000 served):
    // 12718.8 on the way, leaning 5 % toward the four quotas of the loop (20718.8): 13118.8
    let mut next = report(0, 13_000.0, 5000.0);
    next.released = 20_000.0;
    let out = rnf1(&params, &mut bank, next, 0.01);
    let on_the_way = 0.95 * (20_000.0 / payload - 8000.0) + 0.05 * 20_000.0 / payload;
    assert_close!(bank.f("transit")[0], on_the_way);
    assert_eq!(out.limit, ((45_000.0 - 13_000.0 - on_the_way) * payload).round() as i64);
    // flagged down: nothing is released. The ring holds step k's quota in slot k, step 1's as it was released
    let mut flagged = report(0, 13_000.0, 0.0);
    flagged.flagged = 1.0;
    assert_eq!(rnf1(&params, &mut bank, flagged, 0.02).limit, 0);
    assert_eq!((bank.f("quotas")[1], bank.f("quotas")[3]), (20_000.0, 0.0));
}

#[test]
fn an_outage_before_any_window_holds_the_reference() {
    let mut params = rnf_params();
    let mut flagged = report(0, 0.0, 0.0);
    flagged.flagged = 1.0;
    let mut bank = Bank::rnf(1);
    assert_eq!(rnf1(&params, &mut bank, flagged, 0.0).limit, 20_000);
    // with a delay target and no rate yet: the smallest reference, before the first backlogged period TCP's
    // initial window
    params.q_ref = NAN;
    params.target = 0.02;
    let mut bank = Bank::rnf(1);
    assert_eq!(rnf1(&params, &mut bank, flagged, 0.0).limit, 14_480);
    let mut bank = Bank::rnf(1);
    bank.flag("measured")[0] = true;
    assert_eq!(rnf1(&params, &mut bank, flagged, 0.0).limit, MIN_REFERENCE as i64);
}

#[test]
fn until_the_first_backlogged_period_the_default_references_are_at_least_tcps_initial_window() {
    // smvs, the forecast margin's default: a loop (3 steps at d = 1) of 100 kB/s is 3000 B, raised to 10 x 1448;
    // once data waited through a period, two packets' 3000 B
    let mut params = smvs_params();
    params.target = 0.0;
    let mut bank = Bank::smvs(1);
    smvs1(&params, &mut bank, report(0, 0.0, 1000.0), 0.0);
    assert_close!(bank.f("q0")[0], 14_480.0);
    smvs1(&params, &mut bank, report(0, 500.0, 1000.0), 0.01);
    assert_close!(bank.f("q0")[0], 14_480.0);
    smvs1(&params, &mut bank, report(0, 500.0, 1000.0), 0.02); // backlogged
    assert_close!(bank.f("q0")[0], 3000.0);
    // the paper's q0 in bytes stays what it is
    params.target = NAN;
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 5000.0;
    smvs1(&params, &mut bank, report(0, 0.0, 1000.0), 0.0);
    assert_close!(bank.f("q0")[0], 5000.0);
    // rnf: 100 kB/s x 50 ms + 14480 (tau / 2 + Ts of 100 kB/s is 3500); then the paper's q_ref in bytes
    let mut params = rnf_params();
    params.q_ref = NAN;
    let mut bank = Bank::rnf(1);
    assert_eq!(rnf1(&params, &mut bank, report(0, 0.0, 1000.0), 0.0).limit, 5000 + 14_480);
    params.q_ref = 2000.0;
    let mut bank = Bank::rnf(1);
    assert_eq!(rnf1(&params, &mut bank, report(0, 0.0, 1000.0), 0.0).limit, 7000);
}

#[test]
fn a_delay_target_makes_q_ref_the_target_times_the_fed_forward_rate() {
    let mut params = rnf_params();
    params.q_ref = NAN;
    params.target = 0.02;
    let mut bank = Bank::rnf(1);
    bank.flag("measured")[0] = true; // past its start-up: the smallest reference is two packets
    // 750 kB/s: q_ref = 15000, w = 37500 + 15000
    assert_eq!(rnf1(&params, &mut bank, report(0, 0.0, 7500.0), 0.0).limit, 52_500);
    assert_close!(bank.f("q_ref")[0], 15_000.0);
    // 10 kB/s: 200 B, raised to 3000; w = 500 + 3000
    let mut bank = Bank::rnf(1);
    bank.flag("measured")[0] = true; // past its start-up: the smallest reference is two packets
    assert_eq!(rnf1(&params, &mut bank, report(0, 0.0, 100.0), 0.0).limit, 3500);
    // no target: the loop delay, tau / 2 + the period = 35 ms: 26250, w = 37500 + 26250
    params.target = 0.0;
    let mut bank = Bank::rnf(1);
    bank.flag("measured")[0] = true; // past its start-up: the smallest reference is two packets
    assert_eq!(rnf1(&params, &mut bank, report(0, 0.0, 7500.0), 0.0).limit, 63_750);
}

#[test]
fn the_smoothed_rate_averages_over_tau_and_an_empty_queue_never_lowers_it() {
    let mut params = rnf_params();
    params.smooth_rate = 1;
    let mut bank = Bank::rnf(1);
    rnf1(&params, &mut bank, report(0, 5000.0, 5000.0), 0.0);
    assert_eq!(bank.f("smoothed")[0], 500_000.0);
    // weight exp(-10 ms / 50 ms) on the old: 1 MB/s - 0.818730753 x 500 kB/s = 590634.6 B/s, a change
    let smoothed = 1_000_000.0 - (-0.2f64).exp() * 500_000.0;
    let out = rnf1(&params, &mut bank, report(0, 5000.0, 10_000.0), 0.01);
    assert_close!(bank.f("smoothed")[0], smoothed);
    assert_close!(bank.f("rate")[0], smoothed);
    assert_eq!(out.limit, (smoothed * 0.05 + 20_000.0).round() as i64);
    // an empty queue and less served: the average stays
    rnf1(&params, &mut bank, report(0, 0.0, 1000.0), 0.02);
    assert_close!(bank.f("smoothed")[0], smoothed);
    // an empty queue and more served: it rises
    rnf1(&params, &mut bank, report(0, 0.0, 20_000.0), 0.03);
    let risen = 2_000_000.0 - (-0.2f64).exp() * (2_000_000.0 - smoothed);
    assert_close!(bank.f("smoothed")[0], risen);
    // began empty, ends with a packet waiting: it may have run dry in between; less served, the average stays
    rnf1(&params, &mut bank, report(0, 1500.0, 1000.0), 0.04);
    assert_close!(bank.f("smoothed")[0], risen);
    // without an RTT the weight is 0: the period's own rate
    let mut no_rtt = params;
    no_rtt.tau = NAN;
    let mut bank = Bank::rnf(1);
    rnf1(&no_rtt, &mut bank, report(0, 5000.0, 5000.0), 0.0);
    rnf1(&no_rtt, &mut bank, report(0, 5000.0, 7000.0), 0.01);
    assert_eq!(bank.f("smoothed")[0], 700_000.0);
}

#[test]
fn the_measured_loop_is_what_is_in_flight_outside_the_queue_over_the_rate() {
    let mut params = rnf_params();
    params.tau = NAN;
    params.loop_measured = 1;
    params.feedback_period = 10.0; // eq. (2) out of the way
    let mut bank = Bank::rnf(1);
    bank.f("min_rtt")[0] = 0.03;
    bank.f("in_flight")[0] = 100_000.0;
    bank.f("srtt")[0] = 0.2;
    // nothing measured yet: tau is the smallest RTT, w = 1 MB/s x 30 ms + 20000; then the loop is measured:
    // 100000 in flight less 20000 queued = 80000 B outside the queue, 80 ms at 1 MB/s
    assert_eq!(rnf1(&params, &mut bank, report(0, 20_000.0, 10_000.0), 0.0).limit, 50_000);
    assert_eq!(bank.f("pipe")[0], 80_000.0);
    assert_close!(bank.f("loop_tau")[0], 0.08);
    // a rate change: eq. (1) with tau = 80 ms, 1.5 MB/s x 0.08 + 20000; the pipe averages over those 80 ms
    // (weight exp(-10/80) on the old): 40000 outside the queue now
    let out = rnf1(&params, &mut bank, report(0, 60_000.0, 15_000.0), 0.01);
    assert_eq!(out.limit, 140_000);
    assert_close!(out.pacing, 140_000.0 / 0.08);
    let pipe = 40_000.0 + (-0.125f64).exp() * 40_000.0;
    assert_close!(bank.f("pipe")[0], pipe);
    assert_close!(bank.f("loop_tau")[0], pipe / 1_500_000.0);
    // the sockets' smoothed RTT bounds it (a rate estimate that lags a fall must not stretch the loop)
    bank.f("srtt")[0] = 0.04;
    rnf1(&params, &mut bank, report(0, 60_000.0, 15_000.0), 0.02);
    assert_eq!(bank.f("loop_tau")[0], 0.04);
    // and the smallest RTT floors it: a loop measured shorter than the min RTT is not used
    bank.f("loop_tau")[0] = 0.01;
    assert_eq!(rnf1(&params, &mut bank, report(0, 60_000.0, 30_000.0), 0.03).limit, 3_000_000 * 3 / 100 + 20_000);
    // the paper's tau (loop_measured 0) is the smallest RTT whatever is in flight, and nothing is measured
    params.loop_measured = 0;
    let mut bank = Bank::rnf(1);
    bank.f("min_rtt")[0] = 0.03;
    bank.f("in_flight")[0] = 100_000.0;
    rnf1(&params, &mut bank, report(0, 20_000.0, 10_000.0), 0.0);
    assert_eq!(rnf1(&params, &mut bank, report(0, 60_000.0, 15_000.0), 0.01).limit, 65_000);
    assert!(bank.f("pipe")[0].is_nan() && bank.f("loop_tau")[0].is_nan());
}

#[test]
fn the_feedback_period_defaults_to_two_rtts_and_at_least_four_periods() {
    let mut params = rnf_params();
    params.feedback_period = NAN;
    let mut bank = Bank::rnf(1);
    rnf1(&params, &mut bank, report(0, 0.0, 5000.0), 1.0);
    assert_close!(bank.f("next_feedback")[0], 1.1); // 2 x 50 ms
    params.tau = 0.01;
    let mut bank = Bank::rnf(1);
    rnf1(&params, &mut bank, report(0, 0.0, 5000.0), 1.0);
    assert_close!(bank.f("next_feedback")[0], 1.04); // 2 x 10 ms < 4 periods of 10 ms
}

#[test]
fn tau_is_the_measured_minimum_rtt_unless_configured() {
    let mut params = rnf_params();
    params.tau = NAN;
    let mut bank = Bank::rnf(1);
    bank.f("min_rtt")[0] = 0.04;
    // w = 500 kB/s x 40 ms + 20000 = 40000, paced at w / 40 ms
    let out = rnf1(&params, &mut bank, report(0, 0.0, 5000.0), 0.0);
    assert_eq!(out.limit, 40_000);
    assert_close!(out.pacing, 1_000_000.0);
    // no RTT known: w = q_ref, and no pacing
    let mut bank = Bank::rnf(1);
    let out = rnf1(&params, &mut bank, report(0, 0.0, 5000.0), 0.0);
    assert_eq!((out.limit, out.pacing), (20_000, 0.0));
}

#[test]
fn the_window_stays_between_the_smallest_window_and_the_guarded_limit() {
    let mut params = rnf_params();
    params.q_ref = 100.0;
    let mut bank = Bank::rnf(1);
    // 10 kB/s x 50 ms + 100 = 600 B, raised to two segments
    assert_eq!(rnf1(&params, &mut bank, report(0, 0.0, 100.0), 0.0).limit, 2896);
    params.q_ref = 20_000.0;
    params.guard = 1;
    let mut bank = Bank::rnf(1);
    let mut large = report(0, 0.0, 30_000.0);
    large.limit = 100_000.0;
    // 3 MB/s x 50 ms + 20000 = 170000, held at 100000 less 4 % and 3000 = 93000
    assert_eq!(rnf1(&params, &mut bank, large, 0.0).limit, 93_000);
    // a limit too small for the margin: the smallest window
    let mut tiny = report(0, 0.0, 30_000.0);
    tiny.limit = 3000.0;
    let mut bank = Bank::rnf(1);
    assert_eq!(rnf1(&params, &mut bank, tiny, 0.0).limit, 2896);
    // no limit reported: nothing to guard
    let mut bank = Bank::rnf(1);
    assert_eq!(rnf1(&params, &mut bank, report(0, 0.0, 30_000.0), 0.0).limit, 170_000);
}

#[test]
fn rnf_refuses_a_row_out_of_range() {
    let params = rnf_params();
    let mut bank = Bank::rnf(1);
    let (status, _) = rnf_status(&params, &mut bank, &[report(0, 0.0, 5000.0), report(1, 0.0, 5000.0)], 0.0);
    assert_eq!(status, -libc_einval());
    assert_eq!(bank.i("steps")[0], 0);
}

#[test]
fn a_period_of_no_length_has_no_rate() {
    let params = rnf_params();
    let mut bank = Bank::rnf(1);
    let mut instant = report(0, 0.0, 5000.0);
    instant.period = 0.0;
    // b = 0: the window is q_ref alone (the target rule's period does not matter with q_ref in bytes)
    assert_eq!(rnf1(&params, &mut bank, instant, 0.0).limit, 20_000);
}

#[test]
fn the_longest_loop_counts_a_whole_ring_of_quotas() {
    let mut params = smvs_params();
    params.d = MAX_D; // 2d = 100 quotas in flight: every slot of the ring, the oldest about to be overwritten
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    for (slot, w) in bank.f("quotas").iter_mut().enumerate() {
        *w = slot as f64; // 0 + 1 + ... + 99 = 4950 in flight
    }
    smvs1(&params, &mut bank, report(0, 0.0, 5000.0), 0.0);
    // S = 0 - 10000 - 100 x 5000 + 4950
    assert_close!(bank.f("s")[0], -505_050.0);
    assert_eq!(QUOTA_HISTORY, 2 * MAX_D as usize, "the ring rnf_proxy.smvs allocates");
}

// ---- SMVS's boundary layer ----

/// The paper's parameters but delta Ts = 1/4 and sgn(S) saturated in the layer.
fn saturated_params() -> SmvsParams {
    let mut params = smvs_params();
    params.saturate = 1;
    params.delta = 25.0;
    params
}

#[test]
fn in_the_boundary_layer_the_switching_term_is_proportional_to_s() {
    // eps Ts = 100, eta 0 at the first step: the switching amplitude is 100, the layer
    // phi = 100 / (1/2 - 1/4) = 400. S = q - 10000 - 2 x 5000.
    for (queue, w) in [
        (20_200.0, 5000.0 - 50.0 - 100.0 * 0.5), // S = 200, inside: sgn = 200 / 400
        (19_800.0, 5000.0 + 50.0 + 100.0 * 0.5), // S = -200: -1/2
        (21_000.0, 5000.0 - 250.0 - 100.0),      // S = 1000, beyond: the sign
        (18_000.0, 5000.0 + 500.0 + 100.0),      // S = -2000: -1
    ] {
        let mut bank = Bank::smvs(1);
        bank.f("q0")[0] = 10_000.0;
        bank.f("eps")[0] = 10_000.0;
        smvs1(&saturated_params(), &mut bank, report(0, queue, 5000.0), 0.0);
        assert_close!(bank.f("w")[0], w);
    }
}

#[test]
fn with_delta_ts_at_the_layers_gain_there_is_no_switching_term() {
    let mut params = saturated_params();
    params.delta = 50.0; // delta Ts = 1/2, the layer's whole gain
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    // S = 1000: w = 5000 - 500, no switching (with sgn it would be 4400)
    smvs1(&params, &mut bank, report(0, 21_000.0, 5000.0), 0.0);
    assert_close!(bank.f("w")[0], 4500.0);
}

#[test]
fn without_a_switching_amplitude_the_layer_is_the_sign() {
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 0.0; // no eps, eta 0: the amplitude is 0 and so the layer; sgn times 0 is 0 all the same
    smvs1(&saturated_params(), &mut bank, report(0, 20_200.0, 5000.0), 0.0);
    assert_close!(bank.f("w")[0], 5000.0 - 50.0);
    // and on the sliding surface, S = 0, no amplitude: the rate, not 0 / 0
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 0.0;
    let out = smvs1(&saturated_params(), &mut bank, report(0, 20_000.0, 5000.0), 0.0);
    assert_eq!(out.limit, 5000);
}

// ---- The channel's rate from the CQI ----

#[test]
fn the_efficiency_of_a_cqi_is_36_213_table_7_2_3_1_between_its_rows() {
    assert_eq!(cqi_efficiency(7.0), 1.4766);
    assert_close!(cqi_efficiency(7.5), 1.4766 + 0.5 * (1.9141 - 1.4766));
    assert_close!(cqi_efficiency(0.25), 0.25 * 0.1523);
    assert_eq!((cqi_efficiency(0.0), cqi_efficiency(15.0), cqi_efficiency(20.0)), (0.0, 5.5547, 5.5547));
    assert!(cqi_efficiency(f64::NAN).is_nan() && cqi_efficiency(-1.0).is_nan());
}

fn with_cqi(queue: f64, served: f64, cqi: f64) -> Report {
    let mut report = report(0, queue, served);
    report.cqi = cqi;
    report
}

#[test]
fn a_starved_period_is_served_at_the_rate_its_cqi_offers_once_the_channel_is_learnt() {
    let mut params = smvs_params();
    params.channel_rate = 1;
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    // data just arrived: not backlogged for a whole period, nothing learnt; b is what was served
    smvs1(&params, &mut bank, with_cqi(10_000.0, 7000.0, 7.0), 0.0);
    assert!(bank.f("per_efficiency")[0].is_nan());
    assert_eq!((bank.f("b")[0], bank.f("cqi")[0]), (700_000.0, 7.0));
    // backlogged all period, no CQI this time (the last one, 7, stands): 700 kB/s per 1.4766 bit/RE
    smvs1(&params, &mut bank, with_cqi(10_000.0, 7000.0, NAN), 0.01);
    let learnt = 700_000.0 / 1.4766;
    assert_close!(bank.f("per_efficiency")[0], learnt);
    assert_eq!((bank.f("b")[0], bank.f("cqi")[0]), (700_000.0, 7.0));
    // the queue ran empty at CQI 7.5: it served only what came, 200 kB/s; the channel offered learnt x 1.69535
    smvs1(&params, &mut bank, with_cqi(0.0, 2000.0, 7.5), 0.02);
    assert_close!(bank.f("b")[0], learnt * (1.4766 + 0.5 * (1.9141 - 1.4766)));
    assert_close!(bank.f("per_efficiency")[0], learnt); // an empty queue teaches nothing
    // more served than the channel's estimate: the served rate stands
    smvs1(&params, &mut bank, with_cqi(0.0, 9000.0, 7.0), 0.03);
    assert_eq!(bank.f("b")[0], 900_000.0);
    // two backlogged periods in a row: the estimate moves a tenth of the way to 800 kB/s / 1.4766
    smvs1(&params, &mut bank, with_cqi(5000.0, 8000.0, 7.0), 0.04);
    smvs1(&params, &mut bank, with_cqi(5000.0, 8000.0, 7.0), 0.05);
    let learnt = 0.9 * learnt + 0.1 * 800_000.0 / 1.4766;
    assert_close!(bank.f("per_efficiency")[0], learnt);
    // began empty and ends with a packet waiting: it may have run dry in between, 300 kB/s served is what came;
    // the channel offered learnt x 1.4766
    smvs1(&params, &mut bank, with_cqi(0.0, 8000.0, 7.0), 0.06);
    smvs1(&params, &mut bank, with_cqi(1500.0, 3000.0, 7.0), 0.07);
    assert_close!(bank.f("b")[0], learnt * 1.4766);
    assert_close!(bank.f("per_efficiency")[0], learnt);
}

#[test]
fn without_channel_rate_an_empty_queue_keeps_the_served_rate_and_an_outage_or_no_cqi_teaches_nothing() {
    let mut params = smvs_params();
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    bank.f("per_efficiency")[0] = 400_000.0;
    smvs1(&params, &mut bank, with_cqi(0.0, 2000.0, 7.0), 0.0);
    assert_eq!(bank.f("b")[0], 200_000.0); // channel_rate off
    params.channel_rate = 1;
    smvs1(&params, &mut bank, with_cqi(5000.0, 2000.0, 0.0), 0.01); // CQI 0: no efficiency
    smvs1(&params, &mut bank, with_cqi(5000.0, 2000.0, 0.0), 0.02);
    assert_eq!(bank.f("per_efficiency")[0], 400_000.0);
    let mut down = with_cqi(5000.0, 2000.0, 7.0);
    down.flagged = 1.0;
    smvs1(&params, &mut bank, down, 0.03);
    assert_eq!(bank.f("per_efficiency")[0], 400_000.0);
}

#[test]
fn rnf_feeds_forward_the_channels_rate_in_a_starved_period() {
    let mut params = rnf_params();
    params.channel_rate = 1;
    let mut bank = Bank::rnf(1);
    bank.f("per_efficiency")[0] = 500_000.0 / 1.4766; // learnt: 500 kB/s at CQI 7
    // empty queue, 100 kB/s served at CQI 7: b = 500 kB/s, w = 25000 + 20000
    assert_eq!(rnf1(&params, &mut bank, with_cqi(0.0, 1000.0, 7.0), 0.0).limit, 45_000);
}

// ---- The forecast margin: what the loop served beyond what the law counted on ----

#[test]
fn the_forecast_margin_is_the_largest_excess_of_service_over_its_forecast_one_loop_later() {
    let params = smvs_params();
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    bank.flag("measured")[0] = true; // past its start-up
    // d = 1: a loop of 3 steps; the forecast at step k is 3 x b_bar Ts, checked at step k + 3 against the
    // service of steps k + 1 to k + 3
    let served = [5000.0, 5000.0, 5000.0, 8000.0, 2000.0, 2000.0];
    for (step, &bytes) in served.iter().enumerate() {
        smvs1(&params, &mut bank, report(0, 10_000.0, bytes), step as f64 * TS);
    }
    // forecasts, per period: 5000 at steps 1-3 (b_bar 500 kB/s), then b_bar 650k, 425k, 312.5k: 6500, 4250, 3125
    // (over the loop: 15000, then 19500, 12750, 9375)
    assert_eq!(&bank.f("forecasts")[1..7], &[5000.0, 5000.0, 5000.0, 6500.0, 4250.0, 3125.0]);
    assert_eq!(&bank.f("services")[1..7], &served[..]);
    // step 4: 5000 + 5000 + 8000 served against 15000, +3000; step 5: 15000, 0; step 6: 12000, -3000
    assert_eq!(bank.i("error_count")[0], 3);
    assert_eq!(&bank.f("errors")[..3], &[3000.0, 0.0, -3000.0]);
    assert_eq!(bank.f("margin")[0], 3000.0); // a few errors: the largest
    // an outage is no measure of the forecast: nothing recorded, the margin stands
    let mut down = report(0, 10_000.0, 9000.0);
    down.flagged = 1.0;
    smvs1(&params, &mut bank, down, 0.06);
    assert_eq!((bank.i("error_count")[0], bank.f("margin")[0]), (3, 3000.0));
}

#[test]
fn a_loop_learnt_longer_checks_the_forecasts_over_the_new_loop_without_a_spurious_error() {
    // 5000 B served every period at b_bar = 500 kB/s: every forecast comes true, whatever the loop. The loop goes
    // from 3 steps (d = 1) to 7 (d = 3); a forecast made for 3 periods (15000 B) and checked over 7 (35000 B)
    // would count 20000 B of error
    let mut params = smvs_params();
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    bank.flag("measured")[0] = true;
    for step in 0..8 {
        smvs1(&params, &mut bank, report(0, 10_000.0, 5000.0), step as f64 * TS);
    }
    params.d = 3;
    for step in 8..16 {
        smvs1(&params, &mut bank, report(0, 10_000.0, 5000.0), step as f64 * TS);
    }
    let count = bank.i("error_count")[0] as usize;
    assert!(count >= 10, "{count} errors");
    assert!(bank.f("errors")[..count].iter().all(|&e| e == 0.0), "{:?}", &bank.f("errors")[..count]);
    assert_eq!(bank.f("margin")[0], 0.0);
}

#[test]
fn forecasts_made_before_the_first_backlogged_period_teach_the_margin_nothing() {
    // the start: the queue is empty, then holds data at one report, then at two in a row (backlogged)
    let params = smvs_params(); // d = 1: a loop of 3 steps
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    let queues = [0.0, 0.0, 5000.0, 5000.0, 5000.0, 5000.0, 5000.0, 5000.0];
    for (step, &queue) in queues.iter().enumerate() {
        smvs1(&params, &mut bank, report(0, queue, 5000.0), step as f64 * TS);
        // backlogged from the 4th report (step 4) on: the data waited through the whole period
        assert_eq!(bank.flag("measured")[0], step >= 3, "step {}", step + 1);
    }
    // steps 1-3 forecast nothing; step 4's forecast (500 kB/s x 10 ms per period, 3 periods) is checked at step
    // 7, step 5's at 8
    let forecasts = bank.f("forecasts")[1..9].to_vec();
    assert!(forecasts[..3].iter().all(|f| f.is_nan()), "{forecasts:?}");
    assert_eq!(forecasts[3..], [5000.0; 5]);
    assert_eq!(bank.i("error_count")[0], 2);
    assert_eq!(bank.f("errors")[..2], [0.0, 0.0]);
    // an outage is no backlogged period, whatever the queue
    let mut bank = Bank::smvs(1);
    let mut down = report(0, 5000.0, 0.0);
    down.flagged = 1.0;
    for step in 0..3 {
        smvs1(&params, &mut bank, down, step as f64 * TS);
    }
    assert!(!bank.flag("measured")[0]);
}

#[test]
fn at_the_end_of_the_start_up_the_slow_rate_average_goes_on_from_the_fast_one() {
    // a delay target, alpha 0.5 (smvs_params): b_bar and b_fast both start at the first period's rate; the
    // queue empties while the rate is 100, 200, 400 kB/s (b_fast follows at 1/2, b_bar at 1 - alpha), then
    // data waits through a period at 800 kB/s
    let mut params = smvs_params();
    params.alpha = 0.9;
    params.target = 0.02;
    let mut bank = Bank::smvs(1);
    let steps = [(0.0, 1000.0), (0.0, 2000.0), (0.0, 4000.0), (5000.0, 8000.0), (5000.0, 8000.0)];
    for (step, &(queue, served)) in steps.iter().enumerate().take(4) {
        smvs1(&params, &mut bank, report(0, queue, served), step as f64 * TS);
    }
    // not yet backlogged (the queue was empty at the report before): eq. (19) from 100 kB/s,
    // 0.9 x 100k + 0.1 x 200k = 110k, then 139k, then 205.1k; the fast one 150k, 275k, 537.5k
    assert_close!(bank.f("b_bar")[0], 205_100.0);
    assert_close!(bank.f("b_fast")[0], 537_500.0);
    let (queue, served) = steps[4];
    smvs1(&params, &mut bank, report(0, queue, served), 0.04);
    // backlogged: the average goes on from 537.5k, not 205.1k: 0.9 x 537.5k + 0.1 x 800k
    assert_close!(bank.f("b_bar")[0], 563_750.0);
    // with q0 in bytes (the paper's law) eq. (19) goes on from its own value
    params.target = NAN;
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    for (step, &(queue, served)) in steps.iter().enumerate() {
        smvs1(&params, &mut bank, report(0, queue, served), step as f64 * TS);
    }
    assert_close!(bank.f("b_bar")[0], 0.9 * 205_100.0 + 0.1 * 800_000.0);
}

/// Row 0 of `bank` made to have taken `steps` steps, its error ring full but one slot, holding 0, 100, ...,
/// 25400 in a scrambled order, with the service of the two steps before the next one at 0 and a forecast of 0
/// made one loop (3 steps) before it.
fn fill_error_ring(bank: &mut Bank, steps: i64) {
    bank.i("steps")[0] = steps;
    bank.i("error_count")[0] = ERROR_HORIZON as i64 - 1;
    for (slot, error) in bank.f("errors").iter_mut().take(ERROR_HORIZON - 1).enumerate() {
        *error = ((slot * 37) % (ERROR_HORIZON - 1)) as f64 * 100.0;
    }
    bank.f("forecasts")[(steps + 1 - 3) as usize % FORECAST_RING] = 0.0;
    // what the library holds for such a ring: the ceil(0.02 x 255) = 6th largest of 0 to 25400
    bank.f("margin")[0] = 24_900.0;
}

#[test]
fn the_forecast_margin_is_the_98th_percentile_of_a_full_ring_and_the_default_reference_once_warm() {
    let mut params = smvs_params();
    params.target = 0.0; // the default: the loop delay's worth of the rate, then the margin
    let mut bank = Bank::smvs(1);
    fill_error_ring(&mut bank, 10);
    // this step serves 20000 B against the forecast of 0: the ring's 256 errors are 0 to 25400 and 20000;
    // the 98th percentile from above is the ceil(0.02 x 256) = 6th largest: 25400, 25300, ..., 24900
    smvs1(&params, &mut bank, report(0, 0.0, 20_000.0), 0.0);
    assert_eq!(bank.f("errors")[ERROR_HORIZON - 1], 20_000.0);
    assert_eq!(bank.f("margin")[0], 24_900.0);
    assert_eq!(bank.f("q0")[0], 24_900.0); // warm (256 errors): the margin is the reference
    // never less than a period's service: 100000 B served in the period (b_bar = b at the first step), over the
    // margin 25000 (errors 0 to 25400 and 100000: the 6th largest)
    let mut bank = Bank::smvs(1);
    fill_error_ring(&mut bank, 10);
    smvs1(&params, &mut bank, report(0, 0.0, 100_000.0), 0.0);
    assert_eq!(bank.f("margin")[0], 25_000.0);
    assert_eq!(bank.f("q0")[0], 100_000.0);
    // one error short of warm (49), the reference is still the loop's worth of the rate: 3 x 10 ms x 10 MB/s
    let mut bank = Bank::smvs(1);
    bank.i("error_count")[0] = 48;
    bank.i("steps")[0] = 10;
    bank.f("forecasts")[8] = 0.0;
    smvs1(&params, &mut bank, report(0, 0.0, 100_000.0), 0.0);
    assert_eq!(bank.i("error_count")[0], 49);
    assert_close!(bank.f("q0")[0], 300_000.0);
}

#[test]
fn the_margin_is_the_98th_percentile_of_the_ring_at_every_step_as_it_fills_and_wraps() {
    // the margin is kept up to date without sorting the ring each step (only when the new error or the one it
    // replaces is at or above it): checked against a sort of the ring itself after every step, over a
    // pseudo-random service long enough to fill the ring twice
    let mut params = smvs_params();
    params.target = 0.0;
    let mut bank = Bank::smvs(1);
    let mut state: u64 = 12_345;
    for step in 0..(2 * ERROR_HORIZON + 40) {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let served = 1000.0 + ((state >> 33) % 20_000) as f64;
        smvs1(&params, &mut bank, report(0, 10_000.0, served), step as f64 * TS);
        let count = bank.i("error_count")[0] as usize;
        if count == 0 {
            continue;
        }
        let mut ring: Vec<f64> = bank.f("errors")[..count.min(ERROR_HORIZON)].to_vec();
        ring.sort_by(|a, b| b.total_cmp(a));
        let rank = (0.02 * ring.len() as f64).ceil() as usize; // the ceil(0.02 n)-th largest
        assert_eq!(bank.f("margin")[0], ring[rank - 1], "step {step}, {count} errors");
    }
}

#[test]
fn capacity_an_empty_queue_lost_beyond_two_percent_builds_a_reserve_on_top_of_the_default_reference() {
    let mut params = smvs_params();
    params.channel_rate = 1;
    params.target = 0.0;
    let mut bank = Bank::smvs(1);
    fill_error_ring(&mut bank, 10);
    bank.f("prev_queue")[0] = 5000.0;
    bank.flag("measured")[0] = true;
    bank.f("per_efficiency")[0] = 1_000_000.0; // bytes/s per bit/RE
    // the queue ran empty at CQI 7: the channel offered 1.4766 MB/s, 14766 B in the period, of which 10000 B
    // were served: the reserve grows by half of 4766 B less 2 % of 14766 B, 2235.34 B
    smvs1(&params, &mut bank, with_cqi(0.0, 10_000.0, 7.0), 0.0);
    let reserve = 0.5 * (4766.0 - 0.02 * 14_766.0);
    assert_close!(bank.f("reserve")[0], reserve);
    // the reference: the margin (errors 0 to 25400 and this period's 14766 against a forecast of 0: the 6th
    // largest, 24900) and the reserve
    assert_close!(bank.f("q0")[0], 24_900.0 + reserve);
    // it began empty: the channel offered 14766 B again, 12000 served; then backlogged, 10000 B served and
    // nothing lost: it shrinks by half of 2 % of 10000 B
    smvs1(&params, &mut bank, with_cqi(5000.0, 12_000.0, 7.0), 0.01);
    let reserve = reserve + 0.5 * (2766.0 - 0.02 * 14_766.0);
    assert_close!(bank.f("reserve")[0], reserve);
    smvs1(&params, &mut bank, with_cqi(5000.0, 10_000.0, 7.0), 0.02);
    let reserve = reserve - 0.5 * 0.02 * 10_000.0;
    assert_close!(bank.f("reserve")[0], reserve);
    // 40 more such periods take 4000 B off: nothing is left, and it stays at 0
    for step in 3..43 {
        smvs1(&params, &mut bank, with_cqi(5000.0, 10_000.0, 7.0), step as f64 * TS);
    }
    assert_eq!(bank.f("reserve")[0], 0.0);
    // with a limit reported, it stops where the guarded limit leaves room for a reference and its band:
    // (300000 - 0.04 x 300000 - 3000) / 1.5 = 190000 B, however much is lost
    for step in 43..143 {
        let mut starved = with_cqi(0.0, 0.0, 15.0);
        starved.limit = 300_000.0;
        smvs1(&params, &mut bank, starved, step as f64 * TS);
    }
    assert_close!(bank.f("reserve")[0], 190_000.0);
}

#[test]
fn rnf_holds_the_reserve_and_neither_law_builds_one_where_the_loss_is_unknown_or_not_the_margins() {
    let mut params = rnf_params();
    params.channel_rate = 1;
    params.q_ref = NAN;
    params.target = 0.0;
    let mut bank = Bank::rnf(1);
    bank.i("error_count")[0] = 300; // warm: the margin (none yet, 0) or the floors
    bank.flag("measured")[0] = true;
    bank.f("per_efficiency")[0] = 1_000_000.0;
    bank.f("reserve")[0] = 10_000.0;
    bank.f("prev_queue")[0] = 5000.0;
    rnf1(&params, &mut bank, with_cqi(5000.0, 10_000.0, 7.0), 0.0);
    // backlogged, 10000 B: the reserve shrinks by 100 B; q_ref = the floor, max(a period's service at the rate,
    // 10000 B; 3000 B), and the reserve
    assert_close!(bank.f("reserve")[0], 9900.0);
    assert_close!(bank.f("q_ref")[0], 10_000.0 + 9900.0);
    // without the channel's rate, before the margin has 50 errors (the start-up's, which the reference then is
    // not the margin's), without a rate per unit of efficiency, with no CQI, in an outage: an empty queue's lost
    // capacity is not known or not the margin's, and nothing moves; with all of them it does (the control)
    let starved = with_cqi(0.0, 2000.0, 7.0);
    let mut down = starved;
    down.flagged = 1.0;
    let cases = [
        (0, 50, 1_000_000.0, starved, false),
        (1, 49, 1_000_000.0, starved, false),
        (1, 50, NAN, starved, false),
        (1, 50, 1_000_000.0, with_cqi(0.0, 2000.0, NAN), false),
        (1, 50, 1_000_000.0, down, false),
        (1, 50, 1_000_000.0, starved, true),
    ];
    for (channel_rate, errors, per_efficiency, report, moves) in cases {
        let mut params = smvs_params();
        params.channel_rate = channel_rate;
        let mut bank = Bank::smvs(1);
        bank.flag("measured")[0] = true;
        bank.i("error_count")[0] = errors;
        bank.f("per_efficiency")[0] = per_efficiency;
        bank.f("reserve")[0] = 1000.0;
        bank.f("margin")[0] = 20_000.0; // the reference held more than the loss: it counts whole
        smvs1(&params, &mut bank, report, 0.0);
        // the control: 14766 B offered at CQI 7, 2000 B served, the reserve grows by half of the rest less 2 %
        let expected = if moves { 1000.0 + 0.5 * (12_766.0 - 0.02 * 14_766.0) } else { 1000.0 };
        assert_close!(bank.f("reserve")[0], expected);
    }
}

fn with_idle(queue: f64, served: f64, cqi: f64, idle: f64) -> Report {
    Report { idle, ..with_cqi(queue, served, cqi) }
}

#[test]
fn a_periods_loss_counts_up_to_what_the_reference_held() {
    let mut params = smvs_params();
    params.channel_rate = 1;
    params.target = 0.0;
    let mut bank = Bank::smvs(1);
    fill_error_ring(&mut bank, 10); // the margin: 24900 B
    bank.f("prev_queue")[0] = 5000.0;
    bank.flag("measured")[0] = true;
    bank.f("reserve")[0] = 1000.0;
    // a spike: the TTIs with an empty queue offered 60000 B, 2000 B were served. A queue larger by the whole
    // reference, 24900 + 1000 B, would have covered that much of it: the reserve grows by half of 25900 B less
    // 2 % of the 62000 B offered, not by half of 60000 B less the same (30380 B)
    smvs1(&params, &mut bank, with_idle(5000.0, 2000.0, 15.0, 60_000.0), 0.0);
    assert_close!(bank.f("reserve")[0], 1000.0 + 0.5 * (25_900.0 - 0.02 * 62_000.0));
    // no margin yet: it counts as the smallest reference, 3000 B, so 4000 B count
    let mut bank = Bank::smvs(1);
    bank.i("error_count")[0] = 300;
    bank.f("prev_queue")[0] = 5000.0;
    bank.flag("measured")[0] = true;
    bank.f("reserve")[0] = 1000.0;
    smvs1(&params, &mut bank, with_idle(5000.0, 2000.0, 15.0, 60_000.0), 0.0);
    assert_close!(bank.f("reserve")[0], 1000.0 + 0.5 * (4000.0 - 0.02 * 62_000.0));
}

#[test]
fn the_capacity_the_enb_counts_in_ttis_with_an_empty_queue_is_the_rate_and_the_loss() {
    let mut params = smvs_params();
    params.channel_rate = 1;
    params.target = 0.0;
    let mut bank = Bank::smvs(1);
    fill_error_ring(&mut bank, 10);
    bank.f("prev_queue")[0] = 5000.0;
    bank.flag("measured")[0] = true;
    bank.f("per_efficiency")[0] = 1_000_000.0; // the CQI would say 1.4766 MB/s at CQI 7
    // data at both reports, but the queue ran dry in TTIs that offered 3000 B: not backlogged, nothing learnt;
    // b = (10000 + 3000) B / 10 ms, not the CQI's 1.4766 MB/s; the reserve grows by half of 3000 B less 2 % of
    // 13000 B
    smvs1(&params, &mut bank, with_idle(5000.0, 10_000.0, 7.0, 3000.0), 0.0);
    assert_close!(bank.f("b")[0], 1_300_000.0);
    assert_eq!(bank.f("per_efficiency")[0], 1_000_000.0);
    let reserve = 0.5 * (3000.0 - 0.02 * 13_000.0);
    assert_close!(bank.f("reserve")[0], reserve);
    // the queue ends empty but the count says no TTI found it so (it emptied in the last): the served rate is
    // the link's, the CQI's estimate is not asked, and nothing was lost
    smvs1(&params, &mut bank, with_idle(0.0, 9000.0, 7.0, 0.0), 0.01);
    assert_close!(bank.f("b")[0], 900_000.0);
    let reserve = reserve - 0.5 * 0.02 * 9000.0;
    assert_close!(bank.f("reserve")[0], reserve);
    // backlogged at both ends and in every TTI: the rate per unit of efficiency learns, a tenth of the way
    smvs1(&params, &mut bank, with_idle(5000.0, 8000.0, 7.0, 0.0), 0.02);
    smvs1(&params, &mut bank, with_idle(5000.0, 8000.0, 7.0, 0.0), 0.03);
    assert_close!(bank.f("per_efficiency")[0], 0.9 * 1_000_000.0 + 0.1 * 800_000.0 / 1.4766);
    // an outage is no sample of the loss, counted or not
    let mut down = with_idle(5000.0, 0.0, 7.0, 5000.0);
    down.flagged = 1.0;
    let before = bank.f("reserve")[0];
    smvs1(&params, &mut bank, down, 0.04);
    assert_eq!(bank.f("reserve")[0], before);
}

#[test]
fn without_channel_rate_the_idle_count_is_not_read() {
    // the papers' laws see the served rate and the queue's ends, as they always did
    let params = smvs_params();
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    bank.f("prev_queue")[0] = 5000.0;
    smvs1(&params, &mut bank, with_idle(5000.0, 10_000.0, 7.0, 3000.0), 0.0);
    assert_close!(bank.f("b")[0], 1_000_000.0);
    assert!(bank.flag("measured")[0]); // backlogged at both ends: the start-up is over
}

#[test]
fn rnf_feeds_forward_the_rate_the_enb_counts_in_a_period_whose_queue_ran_dry() {
    let mut params = rnf_params();
    params.channel_rate = 1;
    let mut bank = Bank::rnf(1);
    bank.f("per_efficiency")[0] = 500_000.0 / 1.4766; // the CQI would say 500 kB/s
    // empty queue, 1000 B served and 3000 B offered to the empty queue: b = 400 kB/s, w = 20000 + 0.05 x 400000
    assert_eq!(rnf1(&params, &mut bank, with_idle(0.0, 1000.0, 7.0, 3000.0), 0.0).limit, 40_000);
}

#[test]
fn the_loop_is_measured_only_with_an_rtt_and_a_rate_and_bounded_only_by_a_known_srtt() {
    let mut params = rnf_params();
    params.tau = NAN;
    params.loop_measured = 1;
    params.feedback_period = 10.0;
    // no RTT known yet (tau 0): nothing is measured
    let mut bank = Bank::rnf(1);
    bank.f("in_flight")[0] = 100_000.0;
    rnf1(&params, &mut bank, report(0, 20_000.0, 10_000.0), 0.0);
    assert!(bank.f("pipe")[0].is_nan() && bank.f("loop_tau")[0].is_nan());
    // an RTT, but nothing served (b = 0): the pipe is averaged, the loop is not divided by 0
    let mut bank = Bank::rnf(1);
    bank.f("min_rtt")[0] = 0.03;
    bank.f("in_flight")[0] = 100_000.0;
    rnf1(&params, &mut bank, report(0, 20_000.0, 0.0), 0.0);
    assert_eq!(bank.f("pipe")[0], 80_000.0);
    assert!(bank.f("loop_tau")[0].is_nan());
    // no smoothed RTT from the sockets (0): no bound, pipe / b = 80000 / 1 MB/s
    rnf1(&params, &mut bank, report(0, 20_000.0, 10_000.0), 0.01);
    assert_close!(bank.f("loop_tau")[0], 0.08);
}

#[test]
fn a_warm_margin_is_rnfs_default_reference_too() {
    let mut params = rnf_params();
    params.q_ref = NAN;
    params.tau = 0.03; // span: 3 periods, as the ring's forecast was made for
    let mut bank = Bank::rnf(1);
    fill_error_ring(&mut bank, 10);
    // 2 MB/s: w = 2 MB/s x 30 ms + the margin 24900 (as above)
    assert_eq!(rnf1(&params, &mut bank, report(0, 0.0, 20_000.0), 0.0).limit, 84_900);
    assert_eq!(bank.f("q_ref")[0], 24_900.0);
    // at 10 MB/s a period's service, 100000 B, is more than the margin (25000): w = 300000 + 100000
    let mut bank = Bank::rnf(1);
    fill_error_ring(&mut bank, 10);
    assert_eq!(rnf1(&params, &mut bank, report(0, 0.0, 100_000.0), 0.0).limit, 400_000);
    assert_eq!(bank.f("q_ref")[0], 100_000.0);
}

#[test]
fn rows_are_independent_whatever_is_stepped_beside_them() {
    let params = smvs_params();
    let mut bank = Bank::smvs(3);
    bank.f("q0").fill(10_000.0);
    bank.f("eps").fill(10_000.0);
    bank.flag("measured").fill(true);
    // row 0: the steps of smvs_quotas_follow_eq_36_step_by_step. Rows 1 and 2: 20000 B queued, 500 kB/s then
    // 600 kB/s. Step 1: S = 0, w = 5000. Step 2: b_bar 550k, eta 500 (eta_1 = eta_2 = 250), S = 20000 - 10000
    // - 11000 + 5000 = 4000, w = 5500 + 250 - 2000 - 350 = 3400. Step 3: b_bar 575k, eta 250 afresh in block 0
    // (eta_1 375, eta_2 125), S = 20000 - 10000 - 11500 + 8400 = 6900, w = 5750 + 375 - 3450 - 225 = 2450.
    // Step 4: b_bar 587.5k, eta 125 afresh in block 1 (eta_1 187.5, eta_2 62.5), S = 20000 - 10000 - 11750
    // + 5850 = 4100, w = 5875 + 187.5 - 2050 - 162.5 = 3850.
    let steps = [(4000.0, 5000.0), (12_000.0, 7000.0), (9000.0, 6000.0), (10_000.0, 6000.0)];
    let others = [5000.0, 6000.0, 6000.0, 6000.0];
    let mut limits = [vec![], vec![], vec![]];
    for (step, (&(queue, served), &other)) in steps.iter().zip(&others).enumerate() {
        let reports = [report(0, queue, served), report(1, 20_000.0, other), report(2, 20_000.0, other)];
        for (row, out) in smvs(&params, &mut bank, &reports, step as f64 * TS).into_iter().enumerate() {
            limits[row].push(out.limit);
        }
    }
    assert_eq!(limits, [vec![13_100, 4350, 3675, 8088], vec![5000, 3400, 2450, 3850], vec![5000, 3400, 2450, 3850]]);
    // and each row's own rings: its service, its forecast errors and its rate averages' errors
    let services = bank.f("services").clone();
    assert_eq!(services[1..5], [5000.0, 7000.0, 6000.0, 6000.0]);
    assert_eq!(services[FORECAST_RING + 1..FORECAST_RING + 5], others);
    assert_eq!(services[FORECAST_RING..2 * FORECAST_RING], services[2 * FORECAST_RING..]);
    // step 4 against the 15000 forecast at step 1: row 0 served 7000 + 6000 + 6000, rows 1 and 2 3 x 6000
    let errors = bank.f("errors").clone();
    assert_eq!([errors[0], errors[ERROR_HORIZON], errors[2 * ERROR_HORIZON]], [4000.0, 3000.0, 3000.0]);
    assert_eq!(bank.f("margin")[..], [4000.0, 3000.0, 3000.0]);
    // row 0's averages were 200 kB/s off at step 2, right since: 0.99^2 x 0.01 x 4e10 each; rows 1 and 2's
    // were 100k off, then 50k, then 25k: (0.99 x 1e8 + 2.5e7) x 0.99 + 6.25e6 each
    let errors = bank.f("rate_errors").clone();
    assert!(errors[..2].iter().all(|&e| close(e, 0.99 * 0.99 * 4e8)), "{errors:?}");
    assert!(errors[2..].iter().all(|&e| close(e, (0.99 * 1e8 + 2.5e7) * 0.99 + 6.25e6)), "{errors:?}");
    let cov = bank.f("lag_cov").clone();
    assert_eq!(cov[LAGS..2 * LAGS], cov[2 * LAGS..]);
}

#[test]
fn gamma_converts_queue_bytes_to_quota_bytes() {
    let mut params = smvs_params();
    params.gamma = 2.0; // the queue grows by 2 bytes per byte released
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    // step 1: S = -16000 as with gamma 1, the quota half of 13100; step 2: gamma x w(1) = 13100 in flight, S = 3100
    // as with gamma 1, the quota half of 4350
    assert_eq!(smvs1(&params, &mut bank, report(0, 4000.0, 5000.0), 0.0).limit, 6550);
    assert_eq!(smvs1(&params, &mut bank, report(0, 12_000.0, 7000.0), 0.01).limit, 2175);
    assert_close!(bank.f("s")[0], 3100.0);
    // the guard's room is in queue bytes too: 93000 - 70000 - 2 x 7500 = 8000 of queue, 4000 of quota
    params.guard = 1;
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 90_000.0;
    bank.f("eps")[0] = 10_000.0;
    bank.f("b_max")[0] = 100_000.0;
    bank.f("quotas")[0] = 5000.0;
    bank.f("quotas")[QUOTA_HISTORY - 1] = 2500.0;
    // S = 70000 - 90000 - 10000 + 15000 = -15000: the law asks (5000 + 7500 + 100) / 2 = 6300
    assert_eq!(smvs1(&params, &mut bank, report(0, 70_000.0, 5000.0), 0.0).limit, 4000);
}

#[test]
fn the_forecast_loop_is_at_most_99_steps_as_long_as_the_ring_holds() {
    let mut params = smvs_params();
    params.d = MAX_D; // a loop of 101 steps: the margin looks 99 back, the longest the ring of 100 holds
    let mut bank = Bank::smvs(1);
    bank.f("q0")[0] = 10_000.0;
    bank.f("eps")[0] = 10_000.0;
    bank.i("steps")[0] = 150;
    bank.f("services").fill(10.0);
    bank.f("forecasts")[(151 - 99) % FORECAST_RING] = 0.0; // made 99 steps before step 151
    smvs1(&params, &mut bank, report(0, 0.0, 5000.0), 0.0);
    // served over the 99 steps: this one's 5000 and 98 x 10
    assert_eq!((bank.i("error_count")[0], bank.f("errors")[0]), (1, 5980.0));
}

#[test]
fn rnf_lowers_its_average_rate_when_less_is_served_with_data_waiting() {
    let mut params = rnf_params();
    params.smooth_rate = 1;
    let mut bank = Bank::rnf(1);
    rnf1(&params, &mut bank, report(0, 5000.0, 5000.0), 0.0);
    // 100 kB/s served with data waiting: the link is slower, the average follows
    rnf1(&params, &mut bank, report(0, 5000.0, 1000.0), 0.01);
    assert_close!(bank.f("smoothed")[0], 100_000.0 + (-0.2f64).exp() * 400_000.0);
}

#[test]
fn a_change_of_exactly_the_threshold_is_no_change() {
    let params = rnf_params();
    let mut bank = Bank::rnf(1);
    rnf1(&params, &mut bank, report(0, 5000.0, 5000.0), 0.0);
    // 550 kB/s against 500: 10 % exactly, not more: the window stays 45000
    assert_eq!(rnf1(&params, &mut bank, report(0, 5000.0, 5500.0), 0.01).limit, 45_000);
}

#[test]
fn rnfs_forecast_is_the_fed_forward_rate_over_one_rtt_of_periods() {
    let mut params = rnf_params();
    params.tau = 0.025; // 2.5 periods: a span of 3
    let mut bank = Bank::rnf(1);
    bank.flag("measured")[0] = true;
    rnf1(&params, &mut bank, report(0, 5000.0, 5000.0), 0.0);
    rnf1(&params, &mut bank, report(0, 5000.0, 5200.0), 0.01);
    // each step's forecast is the rate in force from its report on: step 1's report feeds forward the first rate,
    // 500 kB/s x 10 ms per period, over the span of 3 periods; step 2's, 4 % off, changes nothing
    assert_eq!(&bank.f("forecasts")[1..3], &[5000.0, 5000.0]);
    assert_eq!(&bank.f("services")[1..3], &[5000.0, 5200.0]);
    // without an RTT, one period
    params.tau = NAN;
    let mut bank = Bank::rnf(1);
    bank.flag("measured")[0] = true;
    rnf1(&params, &mut bank, report(0, 5000.0, 5000.0), 0.0);
    rnf1(&params, &mut bank, report(0, 5000.0, 5200.0), 0.01);
    assert_eq!(bank.f("forecasts")[2], 5000.0);
}

#[test]
fn with_the_boundary_layer_the_law_counts_on_whichever_rate_average_has_foretold_better() {
    for (saturate, counted) in [(1, 875_000.0), (0, 595_000.0)] {
        let mut params = saturated_params();
        params.saturate = saturate;
        params.alpha = 0.9; // b_bar slow, the fast average at weight 1/2
        let mut bank = Bank::smvs(1);
        bank.f("q0")[0] = 10_000.0;
        bank.f("eps")[0] = 10_000.0;
        // 500 kB/s, then a step to 1 MB/s. Step 2: both averages were at 500k, each 500k off: squared errors
        // 0.01 x 2.5e11 = 2.5e9 each; b_bar 550k, fast 750k. Step 3: b_bar 450k off, fast 250k off:
        // 0.99 x 2.5e9 + 0.01 x 2.025e11 = 4.5e9 against 2.475e9 + 0.01 x 6.25e10 = 3.1e9: the fast one has
        // done better; b_bar 595k, fast 875k
        for (step, served) in [5000.0, 10_000.0, 10_000.0].into_iter().enumerate() {
            smvs1(&params, &mut bank, report(0, 20_000.0, served), step as f64 * TS);
            if step == 1 {
                // equally good so far: b_bar, 550k, S = 20000 - 10000 - 2 x 5500 + w(1) + w(0)
                let past = bank.f("quotas")[1] + bank.f("quotas")[0];
                assert_close!(bank.f("s")[0], 10_000.0 - 11_000.0 + past);
            }
        }
        let errors = bank.f("rate_errors").clone();
        assert_close!(errors[0], 4.5e9);
        assert_close!(errors[1], 3.1e9);
        // S = 20000 - 10000 - 2 x (the rate counted on) x Ts + the quotas in flight, w(2) + w(1)
        let past = bank.f("quotas")[2] + bank.f("quotas")[1];
        assert_close!(bank.f("s")[0], 10_000.0 - 2.0 * counted * TS + past);
        // an outage foretells nothing: the errors stand
        let mut down = report(0, 20_000.0, 0.0);
        down.flagged = 1.0;
        smvs1(&params, &mut bank, down, 3.0 * TS);
        assert_eq!(bank.f("rate_errors")[..], errors[..]);
    }
}

#[test]
fn a_starved_period_before_the_channel_is_learnt_probes_up_by_a_doubling_per_loop() {
    let mut params = smvs_params();
    params.channel_rate = 1;
    // no CQI: nothing learnt. The loop: 1 + d from the RTT (none: d = 1) = 2 steps, or the measured one
    for (loop_steps, min_rtt, factor) in [(0, 0.0, 2f64.sqrt()), (4, 0.0, 2f64.powf(0.25)), (0, 0.035, 2f64.cbrt())] {
        let mut bank = Bank::smvs(1);
        bank.f("q0")[0] = 10_000.0;
        bank.f("eps")[0] = 10_000.0;
        bank.i("loop_steps")[0] = loop_steps;
        bank.f("min_rtt")[0] = min_rtt;
        smvs1(&params, &mut bank, report(0, 10_000.0, 5000.0), 0.0);
        // the queue ran empty serving 100 kB/s: the link may carry the last rate times 2^(1 / loop)
        smvs1(&params, &mut bank, report(0, 0.0, 1000.0), 0.01);
        assert_close!(bank.f("b")[0], 500_000.0 * factor);
        // starved again: the probe goes on from there
        smvs1(&params, &mut bank, report(0, 0.0, 1000.0), 0.02);
        assert_close!(bank.f("b")[0], 500_000.0 * factor * factor);
        // more served than the probe (at most a doubling of 500 kB/s by now): the served rate
        smvs1(&params, &mut bank, report(0, 0.0, 20_000.0), 0.03);
        assert_eq!(bank.f("b")[0], 2_000_000.0);
    }
}

#[test]
fn rnf_probes_up_by_a_doubling_per_rtt_in_a_starved_period() {
    let mut params = rnf_params();
    params.channel_rate = 1;
    let mut bank = Bank::rnf(1);
    rnf1(&params, &mut bank, report(0, 5000.0, 5000.0), 0.0);
    // tau 50 ms is 5 periods: 500 kB/s x 2^(1/5), a change: w = b tau + 20000
    let b = 500_000.0 * 2f64.powf(0.2);
    assert_eq!(rnf1(&params, &mut bank, report(0, 0.0, 1000.0), 0.01).limit, (b * 0.05 + 20_000.0).round() as i64);
    // without an RTT, one period: a doubling
    params.tau = NAN;
    let mut bank = Bank::rnf(1);
    rnf1(&params, &mut bank, report(0, 5000.0, 5000.0), 0.0);
    rnf1(&params, &mut bank, report(0, 0.0, 1000.0), 0.01);
    assert_eq!(bank.f("rate")[0], 1_000_000.0);
}
