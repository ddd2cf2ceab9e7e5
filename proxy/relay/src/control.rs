//! The RAN-feedback controllers' laws, one telemetry burst at a time: SMVS (paper 000 eq. 36) and RNF
//! (paper 001 eqs. 1-2), written once here and stepped over the columns of the proxy's banks
//! (`rnf_proxy.feedback.RowBank`: one row per UE, numpy arrays that Python owns and reads for the recorder).
//!
//! Native so that one UE's step costs microseconds from cold caches (telemetry-to-decision latency) and
//! 1000 UEs stay far inside a 10 ms period; the equations, units and the reasons behind each rule are in
//! `rnf_proxy/smvs.py` and `rnf_proxy/rnf.py`, where the Python tests check them against hand computations.
//! Reports are stepped in order, so a UE reported twice in one burst is stepped twice.

/// One UE's telemetry period: the bank row, then bytes, seconds, and 1.0 for a flagged outage.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Report {
    pub row: f64,
    pub queue: f64,
    pub served: f64,
    pub period: f64,
    pub flagged: f64,
}

/// The decision of one step: `limit` bytes (-1: no parameters yet), the step number, the step's length
/// (seconds, quota mode) and a pacing rate (bytes/s, 0 for none).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Output {
    pub limit: i64,
    pub step: i64,
    pub step_s: f64,
    pub pacing: f64,
}

/// The columns every bank has, in `RowBank.columns` order; `capacity` rows each.
#[repr(C)]
pub struct CommonColumns {
    min_rtt: *mut f64,
    prev_queue: *mut f64,
    steps: *mut i64,
    last_report: *mut f64,
    in_fallback: *mut bool,
    w: *mut f64,
    q: *mut f64,
    b: *mut f64,
    s: *mut f64,
    outage: *mut bool,
}

#[repr(C)]
pub struct SmvsColumns {
    common: CommonColumns,
    q0: *mut f64,
    eps: *mut f64,
    b_max: *mut f64,
    b_bar: *mut f64,
    eta_low: *mut f64,  // capacity x blocks
    eta_high: *mut f64, // capacity x blocks
    eta_count: *mut i64,
    quotas: *mut f64, // capacity x QUOTA_HISTORY, slot k mod QUOTA_HISTORY holds w(k)
    d: *mut i64,
}

#[repr(C)]
pub struct SmvsParams {
    pub ts: f64,
    pub alpha: f64,
    pub gamma: f64,
    pub delta: f64,
    pub d: i64, // configured feedback delay in steps, or -1: from the measured RTT
    pub block: i64,
    pub blocks: i64,
}

#[repr(C)]
pub struct RnfColumns {
    common: CommonColumns,
    rate: *mut f64,
    queue_sum: *mut f64,
    queue_count: *mut f64,
    next_feedback: *mut f64,
}

#[repr(C)]
pub struct RnfParams {
    pub q_ref: f64,
    pub tau: f64, // configured proxy-UE RTT, or NaN: the measured minimum RTT
    pub feedback_period: f64,
    pub rate_change: f64,
    pub min_window: f64,
}

/// Why a step was refused; nothing was stepped then.
#[derive(Debug, PartialEq)]
pub enum Refused {
    /// A report names a row at or beyond the bank's capacity.
    RowOutOfRange,
    /// Parameters no law can step with (no eta blocks, d beyond MAX_D).
    Parameters,
}

pub const MAX_D: i64 = 50;
pub const QUOTA_HISTORY: usize = 2 * MAX_D as usize;

/// The common columns as slices of `capacity` rows.
struct Common<'a> {
    min_rtt: &'a mut [f64],
    prev_queue: &'a mut [f64],
    steps: &'a mut [i64],
    last_report: &'a mut [f64],
    in_fallback: &'a mut [bool],
    w: &'a mut [f64],
    q: &'a mut [f64],
    b: &'a mut [f64],
    s: &'a mut [f64],
    outage: &'a mut [bool],
}

/// # Safety
/// Every pointer addresses `len` writable elements that nothing else uses during the call.
unsafe fn slice<'a, T>(pointer: *mut T, len: usize) -> &'a mut [T] {
    // SAFETY: as the caller promises.
    unsafe { std::slice::from_raw_parts_mut(pointer, len) }
}

impl Common<'_> {
    /// # Safety
    /// As `slice`, for every column.
    unsafe fn new(columns: &CommonColumns, capacity: usize) -> Self {
        // SAFETY: as the caller promises.
        unsafe {
            Common {
                min_rtt: slice(columns.min_rtt, capacity),
                prev_queue: slice(columns.prev_queue, capacity),
                steps: slice(columns.steps, capacity),
                last_report: slice(columns.last_report, capacity),
                in_fallback: slice(columns.in_fallback, capacity),
                w: slice(columns.w, capacity),
                q: slice(columns.q, capacity),
                b: slice(columns.b, capacity),
                s: slice(columns.s, capacity),
                outage: slice(columns.outage, capacity),
            }
        }
    }

    /// What every law does first: the report's time, the outage test, the step count. Returns (outage, k).
    fn begin(&mut self, row: usize, report: &Report, now: f64) -> (bool, i64) {
        self.last_report[row] = now;
        self.in_fallback[row] = false;
        // flagged, or nothing served for a whole period while data was already waiting
        let down = report.flagged != 0.0 || (report.served == 0.0 && report.queue > 0.0 && self.prev_queue[row] > 0.0);
        self.prev_queue[row] = report.queue;
        self.steps[row] += 1;
        (down, self.steps[row])
    }
}

/// b(k), bytes/s.
fn rate(report: &Report) -> f64 {
    if report.period > 0.0 { report.served / report.period } else { 0.0 }
}

/// numpy's sign: 0 at 0.
fn sign(value: f64) -> f64 {
    if value > 0.0 {
        1.0
    } else if value < 0.0 {
        -1.0
    } else {
        0.0
    }
}

/// Bank rows of a burst, each checked against the capacity; None if any is out of range.
fn rows(reports: &[Report], capacity: usize) -> Option<Vec<usize>> {
    reports
        .iter()
        .map(|report| {
            let row = report.row as usize;
            (report.row >= 0.0 && row < capacity && row as f64 == report.row).then_some(row)
        })
        .collect()
}

/// Paper 000 eq. (36) for each report in turn; `outputs[i]` answers `reports[i]`.
pub fn smvs_step(
    params: &SmvsParams,
    columns: &SmvsColumns,
    capacity: usize,
    reports: &[Report],
    now: f64,
    outputs: &mut [Output],
) -> Result<(), Refused> {
    let (blocks, block) = (params.blocks as usize, params.block);
    if blocks == 0 || block <= 0 || params.d > MAX_D {
        return Err(Refused::Parameters);
    }
    let rows = rows(reports, capacity).ok_or(Refused::RowOutOfRange)?;
    // SAFETY: the caller passes columns of `capacity` rows (`blocks` and QUOTA_HISTORY wide for the rings).
    let (mut common, q0, eps, b_bar_column, eta_low, eta_high, eta_count, quotas, d_column) = unsafe {
        (
            Common::new(&columns.common, capacity),
            slice(columns.q0, capacity),
            slice(columns.eps, capacity),
            slice(columns.b_bar, capacity),
            slice(columns.eta_low, capacity * blocks),
            slice(columns.eta_high, capacity * blocks),
            slice(columns.eta_count, capacity),
            slice(columns.quotas, capacity * QUOTA_HISTORY),
            slice(columns.d, capacity),
        )
    };
    let (ts, alpha, gamma, delta) = (params.ts, params.alpha, params.gamma, params.delta);
    for ((report, &row), output) in reports.iter().zip(&rows).zip(outputs.iter_mut()) {
        let history = &mut quotas[row * QUOTA_HISTORY..(row + 1) * QUOTA_HISTORY];
        if common.in_fallback[row] && !b_bar_column[row].is_nan() {
            history.fill(b_bar_column[row] * ts); // back from the fallback: the steady state, b_bar*Ts per step
        }
        let (down, k) = common.begin(row, report, now);
        let b = rate(report);
        let old = b_bar_column[row];
        let b_bar = if down {
            old
        } else if old.is_nan() {
            b
        } else {
            alpha * old + (1.0 - alpha) * b // eq. (19)
        };
        b_bar_column[row] = b_bar;
        // eta horizon: a ring of blocks of `block` steps, each holding its min and max; a row's first eta
        // fills the whole ring. Outage steps are left out.
        let (low, high) =
            (&mut eta_low[row * blocks..(row + 1) * blocks], &mut eta_high[row * blocks..(row + 1) * blocks]);
        if !down {
            let eta = (b - b_bar) * ts;
            let count = eta_count[row];
            if count == 0 {
                low.fill(eta);
                high.fill(eta);
            } else {
                let at = ((count / block) as usize) % blocks;
                let fresh = count % block == 0; // a block starts: it forgets the steps it held a horizon ago
                low[at] = if fresh { eta } else { low[at].min(eta) };
                high[at] = if fresh { eta } else { high[at].max(eta) };
            }
            eta_count[row] = count + 1;
        }
        let eta_l = low.iter().copied().fold(f64::INFINITY, f64::min);
        let eta_u = high.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (eta_1, eta_2) = ((eta_u + eta_l) / 2.0, (eta_u - eta_l) / 2.0); // eqs. (31)-(32)
        let d = if params.d >= 0 { params.d } else { derived_d(common.min_rtt[row], ts) };
        d_column[row] = d;
        let past: f64 = (1..=2 * d).map(|age| history[(k - age).rem_euclid(QUOTA_HISTORY as i64) as usize]).sum();
        let b_bar0 = if b_bar.is_nan() { 0.0 } else { b_bar };
        let s = report.queue - q0[row] - (2 * d) as f64 * b_bar0 * ts + gamma * past; // S(k), eq. (34)
        let law = (b_bar0 * ts + eta_1 - delta * ts * s - (eta_2 + eps[row] * ts) * sign(s)) / gamma; // eq. (36)
        let w = if law.is_nan() {
            law // q0 not resolved yet: no decision
        } else if down {
            0.0
        } else {
            law.max(0.0)
        };
        let released = if w.is_nan() { 0.0 } else { w };
        history[k.rem_euclid(QUOTA_HISTORY as i64) as usize] = released;
        common.w[row] = w;
        common.q[row] = report.queue;
        common.b[row] = if down { 0.0 } else { b };
        common.s[row] = s;
        common.outage[row] = down;
        let limit = if w.is_nan() { -1 } else { released.round_ties_even() as i64 };
        *output = Output { limit, step: k, step_s: ts, pacing: 0.0 };
    }
    Ok(())
}

/// d = ceil(tau_p/Ts) with tau_p = min RTT / 2, within 1..MAX_D; 1 (the paper's value) until an RTT is known.
fn derived_d(min_rtt: f64, ts: f64) -> i64 {
    if min_rtt > 0.0 { ((min_rtt / 2.0 / ts - 1e-9).ceil() as i64).clamp(1, MAX_D) } else { 1 }
}

/// Paper 001 eqs. (1)-(2) for each report in turn; `outputs[i]` answers `reports[i]`.
pub fn rnf_step(
    params: &RnfParams,
    columns: &RnfColumns,
    capacity: usize,
    reports: &[Report],
    now: f64,
    outputs: &mut [Output],
) -> Result<(), Refused> {
    let rows = rows(reports, capacity).ok_or(Refused::RowOutOfRange)?;
    // SAFETY: the caller passes columns of `capacity` rows.
    let (mut common, rate_column, queue_sum, queue_count, next_feedback) = unsafe {
        (
            Common::new(&columns.common, capacity),
            slice(columns.rate, capacity),
            slice(columns.queue_sum, capacity),
            slice(columns.queue_count, capacity),
            slice(columns.next_feedback, capacity),
        )
    };
    let q_ref = params.q_ref;
    for ((report, &row), output) in reports.iter().zip(&rows).zip(outputs.iter_mut()) {
        let (down, k) = common.begin(row, report, now);
        let tau = if params.tau.is_nan() { common.min_rtt[row] } else { params.tau };
        let b = rate(report);
        let (mut window, last_rate) = (common.w[row], rate_column[row]);
        let missing = window.is_nan();
        if missing && down {
            window = q_ref;
        }
        let known_rate = if last_rate.is_nan() { 0.0 } else { last_rate };
        let changed = last_rate.is_nan() || (b - known_rate).abs() > params.rate_change * known_rate;
        // a period that ends with an empty queue served less than the link could carry: it may raise the
        // rate, never lower it
        if !down && (missing || (changed && (report.queue > 0.0 || b > known_rate))) {
            rate_column[row] = b;
            window = b * tau + q_ref; // eq. (1)
        }
        if !down {
            queue_sum[row] += report.queue;
            queue_count[row] += 1.0;
            let due_at = next_feedback[row];
            if now >= due_at {
                window += q_ref - queue_sum[row] / queue_count[row]; // eq. (2)
                queue_sum[row] = 0.0;
                queue_count[row] = 0.0;
            }
            if now >= due_at || due_at.is_nan() {
                next_feedback[row] = now + params.feedback_period;
            }
            window = window.max(params.min_window);
        }
        common.w[row] = window;
        common.q[row] = report.queue;
        common.b[row] = b;
        common.outage[row] = down;
        let pacing = if tau > 0.0 { window / tau } else { 0.0 };
        *output = Output { limit: window.round_ties_even() as i64, step: k, step_s: 0.0, pacing };
    }
    Ok(())
}
