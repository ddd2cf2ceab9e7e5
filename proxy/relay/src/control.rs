//! The RAN-feedback controllers' laws, one telemetry burst at a time: SMVS (paper 000 eq. 36) and RNF
//! (paper 001 eqs. 1-2), written once here and stepped over the columns of the proxy's banks
//! (`rnf_proxy.feedback.RowBank`: one row per UE, numpy arrays that Python owns and reads for the recorder).
//!
//! Native so that one UE's step costs microseconds from cold caches (telemetry-to-decision latency) and
//! 1000 UEs stay far inside a 10 ms period; the equations, units and the reasons behind each rule are in
//! `rnf_proxy/smvs.py` and `rnf_proxy/rnf.py`, where the Python tests check them against hand computations.
//! Reports are stepped in order, so a UE reported twice in one burst is stepped twice.

/// One UE's telemetry period: the bank row, then bytes, seconds, 1.0 for a flagged outage, the bytes dropped
/// at the tail of the queue, the queue limit the eNB reports (bytes, 0 when none), the period's mean
/// wideband CQI (NaN when none was reported), what the proxy released toward the UE since its last report
/// (payload bytes, NaN when not known: the proxy's count, not the eNB's), and the bytes the UE's channel
/// offered in the TTIs its queue held nothing (contract 1.3's `dl_idle_capacity_bytes`; NaN where the eNB does
/// not count them).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Report {
    pub row: f64,
    pub queue: f64,
    pub served: f64,
    pub period: f64,
    pub flagged: f64,
    pub dropped: f64,
    pub limit: f64,
    pub cqi: f64,
    pub released: f64,
    pub idle: f64,
}

/// The decision of one step: `limit` bytes (-1: no parameters yet), the step number, the step's length
/// (seconds, quota mode), a pacing rate (bytes/s, 0 for none) and a cap on what the UE's sockets may hold,
/// unacknowledged and unsent together (bytes, 0 for none).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Output {
    pub limit: i64,
    pub step: i64,
    pub step_s: f64,
    pub pacing: f64,
    pub cap: f64,
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
    per_efficiency: *mut f64,
    cqi: *mut f64,
    services: *mut f64,           // capacity x FORECAST_RING: b(k) Ts, slot k mod FORECAST_RING
    forecasts: *mut f64,          // capacity x FORECAST_RING: the service per period forecast at step k
    errors: *mut f64,             // capacity x ERROR_HORIZON: what the loop served beyond its forecast, a ring
    error_count: *mut i64,        // errors recorded
    margin: *mut f64,             // the ERROR_QUANTILE of the errors, bytes (NaN before the first)
    measured: *mut bool,          // a period has stayed backlogged: the rates are the link's, the start-up is over
    first_release_step: *mut i64, // the step whose quota first released bytes (-1: none yet)
    first_awaited: *mut f64,      // payload bytes of that release still to reach the queue (NaN: none yet)
    first_loop: *mut i64,         // steps from that release to the report showing it in the queue (0: not yet)
    reserve: *mut f64,            // bytes the default reference holds beyond the margin for what an empty queue lost
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
    lag_cov: *mut f64, // capacity x LAGS: covariance of w(k - lag) with the arrivals a(k), lag = 1..=LAGS
    means: *mut f64,   // capacity x MOMENTS: the means of the changes of w and of a, the last a, the variances
    loop_steps: *mut i64,
    b_fast: *mut f64,
    rate_errors: *mut f64, // capacity x 2: mean squared one-step errors of b_bar and of b_fast
}

#[repr(C)]
pub struct SmvsParams {
    pub ts: f64,
    pub alpha: f64,
    pub gamma: f64,
    pub delta: f64,
    pub d: i64, // configured feedback delay in steps, or -1: from the measured RTT or loop
    pub block: i64,
    pub blocks: i64,
    pub loop_measured: i64, // 1: the quotas in flight are the measured loop delay less one; 0: 2d (paper)
    pub target: f64,        // delay target, s: q0 = target x rate; 0: the forecast margin; NaN: q0 in bytes
    pub band_fraction: f64, // in target mode, eps from the band rule (43) at this fraction; NaN: eps fixed
    pub guard: i64,         // 1: w never takes queue + in flight past B_max less the margin
    pub saturate: i64,      // 1: sgn(S) saturates in a boundary layer (no chatter); 0: sgn (paper)
    pub channel_rate: i64,  // 1: a period whose queue ran empty is served at the link's rate (eNB's count, CQI)
}

#[repr(C)]
pub struct RnfColumns {
    common: CommonColumns,
    rate: *mut f64,
    queue_sum: *mut f64,
    queue_count: *mut f64,
    next_feedback: *mut f64,
    q_ref: *mut f64,
    smoothed: *mut f64,  // the served rate averaged over tau, bytes/s
    in_flight: *mut f64, // bytes sent toward the UE and not acknowledged, the sockets' last sample (NaN: none)
    srtt: *mut f64,      // the largest smoothed RTT of the UE's connections, s, last sample (0: none)
    pipe: *mut f64,      // bytes in flight outside the eNB queue, averaged over tau (NaN: none yet)
    loop_tau: *mut f64,  // the loop's RTT without the queue, pipe / b, s (NaN: not measured yet)
    // the RAN clock (`RnfParams::ran_clock`)
    quotas: *mut f64,  // capacity x QUOTA_HISTORY, slot k mod QUOTA_HISTORY holds the quota of step k
    transit: *mut f64, // bytes released toward the eNB and not yet in its queue (NaN: none yet)
    lag_cov: *mut f64, // capacity x LAGS: as SmvsColumns, for the loop delay
    means: *mut f64,   // capacity x MOMENTS: as SmvsColumns
    loop_steps: *mut i64,
    loop_now: *mut i64, // the loop delay the step used, steps: its release counted L - 1 quotas in transit
    fast: *mut f64,     // the served rate averaged at weight FAST_ALPHA per period, bytes/s
    rate_errors: *mut f64, // capacity x 2: mean squared one-step errors of the average over tau and of the fast one
}

#[repr(C)]
pub struct RnfParams {
    pub q_ref: f64,           // bytes; NaN: from the delay target
    pub target: f64,          // delay target, s: q_ref = target x rate; 0: the forecast margin
    pub tau: f64,             // configured proxy-UE RTT, or NaN: the measured minimum RTT
    pub feedback_period: f64, // s; NaN: 2 tau, at least FEEDBACK_MIN_PERIODS periods
    pub rate_change: f64,
    pub min_window: f64,
    pub smooth_rate: i64,   // 1: b is the served rate averaged over tau; 0: one period's (paper)
    pub guard: i64,         // 1: the window never exceeds B_max less the margin
    pub channel_rate: i64,  // 1: a period whose queue ran empty is served at the link's rate (eNB's count, CQI)
    pub loop_measured: i64, // 1: tau (when not configured) is the measured loop, pipe / b, at least the min RTT
    pub ran_clock: i64,     // 1: the window bounds what the eNB has not served, released per period (quota)
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
/// Lags (steps) over which the loop delay is looked for: 400 ms at Ts = 10 ms.
pub const LAGS: usize = 40;
/// The loop-delay estimator's moments per row: the means of the changes of quotas and of arrivals, the last
/// arrivals, the variances of the two changes, the last step of a pause after a stall (STALL_PERIODS), and the
/// last change of the arrivals (for lag 1, `learn_loop`).
pub const MOMENTS: usize = 7;
/// Memory of the loop-delay estimator: a time constant of 100 steps (1 s at 10 ms).
const LAG_MEMORY: f64 = 0.99;
/// A lag is taken as the loop delay when no lag two or more away comes within this fraction of its covariance
/// (a periodic quota, the sliding mode's chatter, makes aliases one period apart: then nothing is learnt).
const LAG_UNIQUE: f64 = 0.7;
/// The smallest correlation of a lag's changes that is learnt. Unrelated, the changes of quotas and of arrivals
/// are each first differences of noise (lag-1 autocorrelation -1/2), so their correlation over the estimator's
/// memory, N = (1 + LAG_MEMORY) / (1 - LAG_MEMORY) = 199 periods, has a standard deviation of
/// sqrt((1 + 2 x 1/4) / N) = 0.087; this is 5 of them, so that the largest of LAGS unrelated lags stays under it.
/// Settled at a constant rate the quota's changes are the rate's noise and explain little: on the virtual cell
/// (piecewise trace, a 4 s period) a lag of 25 steps came out at 0.19 where the loop is 3, and learnt, released
/// nothing for two periods and emptied the queue; a real change of rate carries the loop at 0.75-0.83.
const LAG_SIGNIFICANT: f64 = 0.45;
/// The peak must also stand this many of the other lags' own standard deviations above their mean (the lag
/// beside it left out): the 0.45 above assumes Gaussian changes, but at a constant rate the changes are a few hundred
/// bytes with rare pulses of several kB, and one pulse of the quotas meeting one of the arrivals 22-34 periods later
/// made a correlation of 0.49-0.56 there (its neighbours -0.35 and -0.28, the other lags' spread 0.16-0.18, the true
/// loop's 0.18-0.22): learnt, a loop of 28 where it is 2 made the guard release nothing for 16 steps. The spread
/// measured over the lags is what noise of any shape makes; 5 of them, as the Gaussian rule.
const LAG_STANDS_OUT: f64 = 5.0;
/// A report stepped more than this many periods after the row's last one waited for the proxy: its process did not
/// run (on 2 cores beside srsenb, srsue and the bridge it stood still for 60-160 ms about once a run, in a full
/// garbage collection, since avoided: proxy.py freezes its heap; a stall of the process may still come), the reports
/// queued up and were then stepped in a burst, their quotas released at once. Steps then no longer map to time,
/// and the burst's quotas meet the arrivals at the lag of the backlog: after a 77 ms stall on srsRAN over ZeroMQ
/// (2026-11-27, `rnf`, loop 1 step) a lag of 7 was learnt; the RAN clock counted 6 quotas on their way, the window
/// grew to 150 kB before anything was released and the queue stood empty for 1 s (98.2 %, BBR 98.7 %). The
/// estimator learns nothing from such a report, its backlog, or the LAGS steps after, while their quotas are within
/// its lags. The virtual cell's reports are stepped 8-14 ms apart, with a gap of more than 20 ms in none or one of
/// 3100 steps per run.
const STALL_PERIODS: f64 = 2.0;
/// Steps of data before the estimator is trusted, counted from the row's first release: its memory's time constant, so
/// that no single event of the start-up carries it. Counted from the row's first report, the steps a UE reported before
/// its first flow used it up: in issue 16's constant-rate test the download starts about 80 steps after the cell, lag
/// 39 came out 80 steps into it where the loop is 2, and the prediction, counting 39 quotas on their way, released
/// nothing for 0.6 s (in band 92 % against 99-100 %). With 20 steps, on a calibrated srsRAN cell whose loop is 1-2
/// steps, the start-up made a lag of 15-20 steps stand out in each of 6 repetitions, for up to 0.4 s; counting that
/// many quotas in flight, the overflow guard released nothing for up to 0.2 s and the forecast margin once held 240 kB
/// for its horizon. Until then the loop is the first release's, or before that is seen, the RTT's
/// (`Common::measured_loop`). Before the first release nothing is learnt at all, however long the UE reports: what
/// arrives then is no quota's (a handshake that waited through a 1 s gap taught it 23-25 steps where the loop is 2-3,
/// and the reserve then held 120-190 kB for the rest of the run: proxy/README.md).
const LAG_WARMUP: i64 = 100;
/// The longest loop the estimator may learn, in round trips of the path: a quota is released over its step (one
/// period), crosses the forward path to the eNB (within the smallest RTT, of which it is a part), and is counted
/// by the report of the period it arrived in (one more); a sender short of congestion window holds what it was
/// given for up to one more round trip. So the loop is at most 2 + ceil(LOOP_RTTS x min RTT / Ts) steps. At a
/// constant rate the changes of quotas and arrivals are rare pulses, and one of each meeting by chance
/// still passed the estimator's statistical tests now and then: lag 22 where the loop is 2 (6 Mbit/s,
/// backhaul and uplink 20 ms, a smallest RTT of 45 ms and so at most 11 steps), which counted 20 quotas on their
/// way and left the queue empty for 0.45 s (`rnf`, 95.7 %, issue 16's constant-rate test, 2026-11-28); every
/// false lag logged before (25, 28 and 39 steps on the virtual cell, 15-20 on srsRAN's start-up) was as far
/// beyond the path.
const LOOP_RTTS: f64 = 2.0;
/// Weight of a new period in the fast rate estimate that converts a delay target to bytes: a 10x rate drop is
/// within 2x after 3 periods (0.1 + 0.9 x 0.5^3 = 0.21).
const FAST_ALPHA: f64 = 0.5;
/// Memory of the rate estimates' squared errors: a time constant of 100 steps (1 s at 10 ms).
const RATE_ERROR_MEMORY: f64 = 0.99;

/// Scores two averages of the served rate by how well each foretold `observed`, this period's rate: the mean of
/// their squared errors over RATE_ERROR_MEMORY, `errors[0]` the slow average's, `errors[1]` the fast one's.
fn score_rate_averages(errors: &mut [f64], observed: f64, slow: f64, fast: f64) {
    errors[0] = RATE_ERROR_MEMORY * errors[0] + (1.0 - RATE_ERROR_MEMORY) * (observed - slow).powi(2);
    errors[1] = RATE_ERROR_MEMORY * errors[1] + (1.0 - RATE_ERROR_MEMORY) * (observed - fast).powi(2);
}

/// The average that has lately foretold the served rate better (`score_rate_averages`): on a rate that steps, the
/// fast one, which follows a step within three periods; on a bursty one, the slow one, which does not chase each
/// burst. The slow one while they tie.
fn better_rate_average(errors: &[f64], slow: f64, fast: f64) -> f64 {
    if errors[1] < errors[0] { fast } else { slow }
}

// PERIOD_FLOOR: the default reference (the forecast margin) is at least one telemetry period's service. The law
// sees the queue once a period and cannot act inside one; the quota or window of a period may reach the queue at
// any moment of it (in the worst case all at its end), so only a queue that holds a period's service at the report
// keeps the MAC backlogged through the next period whatever the arrivals' timing inside it. The margin counts
// forecast errors between reports; this covers what happens within one.

/// The smallest reference, bytes: two full-size packets, so that a rate estimate near 0 (the start, a
/// starved period) still asks for data to wait, and the served rate can show the link's rate again.
pub const MIN_REFERENCE: f64 = 3000.0;
/// The smallest default reference until the first backlogged period, bytes: TCP's initial window, ten
/// 1448-byte segments (RFC 6928). Before the link's rate is measured the laws know no more of it than a TCP
/// sender does, and they start no slower: from two packets a quota of a third of a segment per period went
/// unsent, and on TMobile-LTE-driving's first second (33 Mbit/s) `smvs` served nothing for 200 ms.
pub const INITIAL_WINDOW: f64 = 10.0 * 1448.0;
/// The narrowest band, bytes, whatever the reference: the queue moves by whole SDUs and is sampled once a
/// period, so a packet arriving just before or just after the period's end moves it by up to two full-size
/// packets.
const MIN_BAND: f64 = 3000.0;
/// The overflow guard keeps this much of B_max free: IP and TCP headers the quotas do not count (52 B per
/// 1448 B segment, 3.6 %, rounded up to 4 %) and two 1500-byte packets of rounding.
pub fn guard_margin(b_max: f64) -> f64 {
    0.04 * b_max + 3000.0
}
/// Spectral efficiency (bits per resource element) of each wideband CQI, 3GPP TS 36.213 Table 7.2.3-1 (the
/// 4-bit table of QPSK to 64QAM); CQI 0 is out of range.
const CQI_EFFICIENCY: [f64; 16] = [
    0.0, 0.1523, 0.2344, 0.3770, 0.6016, 0.8770, 1.1758, 1.4766, 1.9141, 2.4063, 2.7305, 3.3223, 3.9023, 4.5234,
    5.1152, 5.5547,
];
/// Steps of service and forecasts kept: a loop delay of up to 99 steps.
pub const FORECAST_RING: usize = 100;
/// Steps over which the forecast errors are kept: 2.56 s at 10 ms, a few of a channel's ups and downs.
pub const ERROR_HORIZON: usize = 256;
/// Forecast errors needed before the margin is the reference: half a second at 10 ms.
const FORECAST_WARMUP: i64 = 50;
/// The margin covers the forecast error 49 times out of 50.
const ERROR_QUANTILE: f64 = 0.98;
/// The largest rank `upper_quantile` looks for: ceil(0.02 x 256) = 6.
const TOP_MAX: usize = 6;
/// The share of the link's capacity the queue may leave unserved by running empty: what the margin's quantile
/// promises in loops, held in bytes (`loss_reserve`).
const LOSS_BUDGET: f64 = 1.0 - ERROR_QUANTILE;
/// Bytes the reserve grows by per byte lost beyond the budget: half, as the boundary layer takes half of the
/// error each step (a loss that recurs alike is covered after two).
const RESERVE_GAIN: f64 = 0.5;
/// Weight of the last estimate of the bytes per second per unit of efficiency (10 backlogged periods): it
/// follows the UE's share of the cell's resource blocks as other UEs come and go.
const PER_EFFICIENCY_MEMORY: f64 = 0.9;

/// The efficiency of a mean CQI, between the table's rows for a fractional mean; NaN for none.
pub fn cqi_efficiency(cqi: f64) -> f64 {
    if cqi.is_nan() || cqi < 0.0 {
        return f64::NAN;
    }
    let top = (CQI_EFFICIENCY.len() - 1) as f64;
    let clamped = cqi.min(top);
    let low = clamped.floor() as usize;
    let high = (low + 1).min(CQI_EFFICIENCY.len() - 1);
    let fraction = clamped - low as f64;
    CQI_EFFICIENCY[low] + fraction * (CQI_EFFICIENCY[high] - CQI_EFFICIENCY[low])
}
/// The RAN clock counts what is in transit toward the eNB by conservation (released, less what the reports show
/// arriving), which is exact whatever the loop delay but accumulates any error of units; each period it leans
/// this much toward the quotas released over the measured loop, which is right on average but not step by step
/// (a loop off by one step would make a dead-beat release unstable). A time constant of 20 periods, far longer
/// than the loop: the anchor steers the level, not the dynamics; a unit error e biases the count by e/0.05
/// periods' service.
const TRANSIT_ANCHOR: f64 = 0.05;
/// Bytes on the eNB's side per byte of TCP payload released: a full-size 1500-byte packet carries 1448 (IP and
/// TCP headers with timestamps, 52 B). The reports count packets (PDCP SDUs), the quotas payload.
const WIRE_PER_PAYLOAD: f64 = 1500.0 / 1448.0;
/// RNF's feedback acts at most this often, in telemetry periods (its own effect must reach the queue first).
const FEEDBACK_MIN_PERIODS: f64 = 4.0;

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
    per_efficiency: &'a mut [f64],
    cqi: &'a mut [f64],
    services: &'a mut [f64],
    forecasts: &'a mut [f64],
    errors: &'a mut [f64],
    error_count: &'a mut [i64],
    margin: &'a mut [f64],
    measured: &'a mut [bool],
    first_release_step: &'a mut [i64],
    first_awaited: &'a mut [f64],
    first_loop: &'a mut [i64],
    reserve: &'a mut [f64],
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
                per_efficiency: slice(columns.per_efficiency, capacity),
                cqi: slice(columns.cqi, capacity),
                services: slice(columns.services, capacity * FORECAST_RING),
                forecasts: slice(columns.forecasts, capacity * FORECAST_RING),
                errors: slice(columns.errors, capacity * ERROR_HORIZON),
                error_count: slice(columns.error_count, capacity),
                margin: slice(columns.margin, capacity),
                measured: slice(columns.measured, capacity),
                first_release_step: slice(columns.first_release_step, capacity),
                first_awaited: slice(columns.first_awaited, capacity),
                first_loop: slice(columns.first_loop, capacity),
                reserve: slice(columns.reserve, capacity),
            }
        }
    }

    /// What every law does first: the report's time, the outage test, the step count, the channel's rate.
    /// Returns (outage, k, b(k), backlogged): whether the queue held data at both ends of the period (and, with
    /// `channel_rate` where the eNB counts them, after all its TTIs), and b(k): the served rate, or with
    /// `channel_rate`, when the period was not backlogged (it may have run dry in between and served what arrived,
    /// less than the link could carry), the rate the link offered: the served rate plus what the TTIs with an empty
    /// queue offered, where the eNB counts it, else the larger of the served rate and the rate the UE's CQI offers.
    /// Without the count only the period's ends are seen: one that began empty and ended with a few packets served
    /// what trickled in (the virtual cell, after two quotas of nothing: 0.65 of the link, which took `rnf`'s
    /// smoothed rate down by a quarter), and one whose queue ran dry in between looks backlogged.
    /// Until the rate per unit of efficiency is known (no period backlogged yet: the start), a starved period
    /// counts as served at 2^(1/loop_steps) times the last step's rate: the rate doubles per loop delay, as in
    /// TCP's slow start, until the queue holds data for a whole period.
    fn begin(
        &mut self,
        row: usize,
        report: &Report,
        now: f64,
        channel_rate: bool,
        loop_steps: i64,
    ) -> (bool, i64, f64, bool) {
        self.last_report[row] = now;
        self.in_fallback[row] = false;
        // flagged by the eNB. A period that served nothing while data waited is not an outage unless flagged: on a
        // bursty link (a recorded drive trace) such gaps are a fraction of all periods, and leaving them out of the
        // rate estimates made b_bar the rate while serving, so the prediction S(k) counted on service the loop
        // would not get and the queue sat a loop's worth of that excess above q0
        let down = report.flagged != 0.0;
        // bytes the empty queue left unused, NaN: not counted; read only with `channel_rate`, so that the papers'
        // laws (on the served rate alone) see what they always saw
        let idle = if channel_rate { report.idle } else { f64::NAN };
        let ran_dry = idle > 0.0; // false for NaN: not counted
        let backlogged = report.queue > 0.0 && self.prev_queue[row] > 0.0 && !ran_dry;
        self.prev_queue[row] = report.queue;
        self.measured[row] |= backlogged && !down;
        self.steps[row] += 1;
        let served = rate(report);
        if !report.cqi.is_nan() {
            self.cqi[row] = report.cqi; // a period without a CQI report keeps the last one
        }
        let efficiency = cqi_efficiency(self.cqi[row]);
        if down {
            return (down, self.steps[row], served, backlogged);
        }
        // bytes/s per bit per resource element: the UE's resource blocks and the overheads, learnt while the
        // queue stayed backlogged all period long, when the served rate is the link's
        let known = self.per_efficiency[row];
        if backlogged && efficiency > 0.0 {
            let sample = served / efficiency;
            self.per_efficiency[row] = if known.is_nan() {
                sample
            } else {
                PER_EFFICIENCY_MEMORY * known + (1.0 - PER_EFFICIENCY_MEMORY) * sample
            };
        }
        let b = if !channel_rate || backlogged {
            served
        } else if !idle.is_nan() && report.period > 0.0 {
            served + idle / report.period
        } else if !known.is_nan() {
            served.max(known * efficiency.max(0.0))
        } else {
            served.max(self.b[row] * 2f64.powf(1.0 / loop_steps.max(1) as f64))
        };
        let warm = self.error_count[row] >= FORECAST_WARMUP;
        if channel_rate && warm && !idle.is_nan() {
            // counted by the eNB TTI by TTI, the loss a queue that ran dry between two reports hides too (on a
            // recorded UMTS trace 2.2-2.9 % of the capacity, where the CQI's estimate, applied to every period,
            // would have counted 3.6 % lost where nothing was: docs/benchmarks.md)
            self.loss_reserve(row, idle, served * report.period + idle, report.limit);
        } else if channel_rate && warm && !known.is_nan() && efficiency > 0.0 {
            // what the queue cost the link, known only where the channel's rate is, and the margin's to cover
            // only once the reference is the margin (warm): before, the start-up's ramp starves the link (a
            // recorded LTE trace at 40 Mbit/s: 4.2-5.2 % of a 30 s run in its first 0.3 s, every arm alike),
            // which no reserve held for the rest of the run would have changed
            let offered = if backlogged { served } else { served.max(known * efficiency) };
            self.loss_reserve(row, (offered - served) * report.period, offered * report.period, report.limit);
        }
        (down, self.steps[row], b, backlogged)
    }

    /// The reserve, bytes the default reference holds beyond the forecast margin: it grows by RESERVE_GAIN of
    /// every byte the link could have carried in a period when the queue ran empty (`lost`: at either end of
    /// the period, the only moments seen) and shrinks by RESERVE_GAIN of LOSS_BUDGET of every byte it could have
    /// carried (`offered`), so that it settles where an empty queue costs the link LOSS_BUDGET of its capacity
    /// (each period's loss counted up to the reference, below). On a link that serves in bursts after gaps the
    /// loops the margin's quantile leaves out carry most of the capacity lost: on recorded UMTS and EV-DO drive
    /// traces the margin alone lost 3-5 % of it. Never below 0, nor above what the guarded queue limit (`limit`,
    /// when reported) leaves for a reference with its band. Counted only once the margin has FORECAST_WARMUP
    /// errors, when the default reference is the margin.
    /// A period's loss counts up to what the reference held, the margin (at least MIN_REFERENCE) and the reserve:
    /// a queue larger by that much would have covered that much of it. So the reserve grows by at most half of the
    /// reference per period, and a loss that recurs period after period still multiplies it by 1.5 each time. A
    /// loss beyond the reference is a spike of the rate that only a reference many times the link's usual loop
    /// would have caught; counted whole, one such spike held the reserve up for many seconds (proxy/README.md,
    /// "The reserve: what an empty queue cost", has the figures).
    fn loss_reserve(&mut self, row: usize, lost: f64, offered: f64, limit: f64) {
        let held = self.margin[row].max(MIN_REFERENCE) + self.reserve[row];
        let mut reserve = self.reserve[row] + RESERVE_GAIN * (lost.min(held) - LOSS_BUDGET * offered);
        if limit > 0.0 {
            reserve = reserve.min((limit - guard_margin(limit)) / 1.5);
        }
        self.reserve[row] = reserve.max(0.0);
    }

    /// The step the loop estimator's warm-up counts from (`learn_loop`): the row's first release, negative while
    /// the proxy has released nothing toward the UE; where the reports do not say what was released and none was
    /// seen, the row's first report.
    fn warm_up_from(&self, row: usize, released: f64) -> i64 {
        let first = self.first_release_step[row];
        if first < 0 && released.is_nan() { 0 } else { first }
    }

    /// The most lags the loop-delay estimator looks at: the longest loop the path allows (LOOP_RTTS), all
    /// LAGS until an RTT is known.
    fn plausible_lags(&self, row: usize, ts: f64) -> usize {
        let min_rtt = self.min_rtt[row];
        if min_rtt > 0.0 && ts > 0.0 { (2 + (LOOP_RTTS * min_rtt / ts - 1e-9).ceil() as usize).min(LAGS) } else { LAGS }
    }

    /// The loop delay in steps: `learnt` by the estimator once it is trusted (0 until then); until then the
    /// first release's (`time_first_release`); until that has arrived, 1 + d from the RTT.
    fn measured_loop(&self, row: usize, learnt: i64, ts: f64) -> i64 {
        if learnt > 0 {
            learnt
        } else if self.first_loop[row] > 0 {
            self.first_loop[row]
        } else {
            1 + derived_d(self.min_rtt[row], ts)
        }
    }

    /// The periods a report waited beyond its own (0 if none): with the steps that queued up behind it, the steps
    /// that do not map to time (STALL_PERIODS). Read before `begin`, which records this report's time.
    fn late_steps(&self, row: usize, now: f64, period: f64) -> i64 {
        let gap = now - self.last_report[row];
        if period > 0.0 && gap > STALL_PERIODS * period { (gap / period).ceil() as i64 } else { 0 }
    }

    /// The loop delay of the first release, the start-up's until the estimator is trusted (`measured_loop`):
    /// the steps from the step whose quota first released bytes (reported with step k's report: step k - 1) to
    /// the report by which its first INITIAL_WINDOW of payload, or all of it if less, has arrived at the queue
    /// (FIFO: bytes released later arrive after it). Only an initial window because TCP sends no more before
    /// the first ACK (RFC 6928); the arrivals count wire bytes, a few percent more than payload.
    fn time_first_release(&mut self, row: usize, k: i64, released: f64, arrived: f64) {
        if self.first_loop[row] > 0 {
            return;
        }
        if self.first_awaited[row].is_nan() {
            if released.is_nan() || released <= 0.0 {
                return;
            }
            self.first_awaited[row] = released.min(INITIAL_WINDOW);
            self.first_release_step[row] = k - 1;
        }
        self.first_awaited[row] -= arrived;
        if self.first_awaited[row] <= 0.0 {
            self.first_loop[row] = (k - self.first_release_step[row]).clamp(1, LAGS as i64);
        }
    }

    /// The forecast margin, bytes: how much more than forecast the link served over one loop delay, the
    /// ERROR_QUANTILE of the last ERROR_HORIZON steps. `service` is this period's b(k) Ts, `forecast` what the law
    /// expects the next `loop_steps` periods to serve, `loop_steps` the loop delay. Outage steps are left out,
    /// and so are the forecasts made before the first backlogged period: until then the rate estimates start
    /// from nothing and the served rate is only what arrived, so their errors measure the start-up, not the
    /// link (on a recorded drive trace they held the margin at the guard's cap for its whole horizon).
    /// The ring keeps each forecast per period and checks it over the loop as it is now: a forecast for the
    /// loop then known, checked over a loop learnt longer since, counted the difference as an error, a whole
    /// period's service per step of difference.
    fn forecast_margin(&mut self, row: usize, k: i64, service: f64, forecast: f64, loop_steps: i64) -> f64 {
        let ring = |step: i64| row * FORECAST_RING + step.rem_euclid(FORECAST_RING as i64) as usize;
        self.services[ring(k)] = service;
        let span = loop_steps.clamp(1, FORECAST_RING as i64 - 1);
        if k > span {
            let per_period = self.forecasts[ring(k - span)];
            if !per_period.is_nan() {
                let served: f64 = (0..span).map(|age| self.services[ring(k - age)]).sum();
                let error = served - per_period * span as f64;
                let count = self.error_count[row];
                let slot = row * ERROR_HORIZON + (count as usize) % ERROR_HORIZON;
                let full = count >= ERROR_HORIZON as i64;
                let evicted = if full { self.errors[slot] } else { f64::NAN };
                self.errors[slot] = error;
                self.error_count[row] = count + 1;
                // the quantile only moves if the new error or the one it replaces is at or above it
                let quantile = self.margin[row];
                if !full || quantile.is_nan() || error >= quantile || evicted >= quantile {
                    let filled = (count + 1).min(ERROR_HORIZON as i64) as usize;
                    let errors = &self.errors[row * ERROR_HORIZON..row * ERROR_HORIZON + filled];
                    self.margin[row] = upper_quantile(errors, ERROR_QUANTILE);
                }
            }
        }
        self.forecasts[ring(k)] = if self.measured[row] { forecast / loop_steps.max(1) as f64 } else { f64::NAN };
        self.margin[row].max(0.0)
    }
}

/// The q-quantile of `values` from above: the ceil((1 - q) n)-th largest, found in one pass (a few values).
fn upper_quantile(values: &[f64], q: f64) -> f64 {
    // 1 - 0.98 is 0.020000000000000018 in binary: without the tolerance, 50 values would take the 2nd largest
    let rank = (((1.0 - q) * values.len() as f64 - 1e-9).ceil() as usize).clamp(1, TOP_MAX);
    let mut top = [f64::NEG_INFINITY; TOP_MAX];
    for &value in values {
        if value > top[rank - 1] {
            let mut at = rank - 1;
            while at > 0 && top[at - 1] < value {
                top[at] = top[at - 1];
                at -= 1;
            }
            top[at] = value;
        }
    }
    top[rank - 1]
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

/// The law's whole gain on S inside the boundary layer: each step takes half of the predicted error away. The
/// loop S(k+1) = (1 - G) S(k) + noise is deadbeat at G = 1, but then unstable if the loop delay is off by a
/// single step; it stays stable for a delay off by one step either way up to G = 2/3, and at G = 1/2 for two
/// steps too late (the release's spread over the step and the kernel's smoothing make the delay fractional).
pub const LAYER_GAIN: f64 = 0.5;

/// sgn(S) in a boundary layer: S / phi within |S| < phi, its sign beyond, with phi such that delta Ts plus the
/// switching term's slope inside the layer is LAYER_GAIN. With sgn itself every small S gets the full switching
/// amplitude, the total gain exceeds 1 and the quota alternates between 0 and twice the rate (chatter). Beyond
/// the layer the reaching law is the paper's. With delta Ts >= LAYER_GAIN the linear term alone has that gain
/// or more, and phi is infinite: no switching term.
fn saturated(s: f64, switching: f64, delta_ts: f64) -> f64 {
    if delta_ts >= LAYER_GAIN {
        return 0.0;
    }
    let phi = switching / (LAYER_GAIN - delta_ts);
    if phi > 0.0 { (s / phi).clamp(-1.0, 1.0) } else { sign(s) }
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
    // SAFETY: the caller passes columns of `capacity` rows (`blocks`, QUOTA_HISTORY, LAGS, MOMENTS and 2 wide for
    // the rings and the estimator).
    let (mut common, q0, eps, b_max, b_bar_column, eta_low, eta_high, eta_count, quotas, d_column) = unsafe {
        (
            Common::new(&columns.common, capacity),
            slice(columns.q0, capacity),
            slice(columns.eps, capacity),
            slice(columns.b_max, capacity),
            slice(columns.b_bar, capacity),
            slice(columns.eta_low, capacity * blocks),
            slice(columns.eta_high, capacity * blocks),
            slice(columns.eta_count, capacity),
            slice(columns.quotas, capacity * QUOTA_HISTORY),
            slice(columns.d, capacity),
        )
    };
    // SAFETY: as above.
    let (lag_cov, means, loop_steps, b_fast, rate_errors) = unsafe {
        (
            slice(columns.lag_cov, capacity * LAGS),
            slice(columns.means, capacity * MOMENTS),
            slice(columns.loop_steps, capacity),
            slice(columns.b_fast, capacity),
            slice(columns.rate_errors, capacity * 2),
        )
    };
    let (ts, alpha, gamma, delta) = (params.ts, params.alpha, params.gamma, params.delta);
    for ((report, &row), output) in reports.iter().zip(&rows).zip(outputs.iter_mut()) {
        let history = &mut quotas[row * QUOTA_HISTORY..(row + 1) * QUOTA_HISTORY];
        if common.in_fallback[row] && !b_bar_column[row].is_nan() {
            history.fill(b_bar_column[row] * ts); // back from the fallback: the steady state, b_bar*Ts per step
        }
        if b_max[row].is_nan() && report.limit > 0.0 {
            b_max[row] = report.limit; // not configured: the limit the eNB reports, for the guard
        }
        let previous_queue = common.prev_queue[row];
        let start_loop = common.measured_loop(row, loop_steps[row], ts);
        let starting = !common.measured[row];
        let late = common.late_steps(row, now, ts);
        let longest = common.plausible_lags(row, ts);
        let (down, k, b, _) = common.begin(row, report, now, params.channel_rate != 0, start_loop);
        record_release(history, k, report.released);
        // what reached the queue during the period, against the quotas released before: the loop delay
        let arrived = (report.queue - previous_queue + report.served + report.dropped).max(0.0);
        common.time_first_release(row, k, report.released, arrived);
        let lag = learn_loop(
            &mut lag_cov[row * LAGS..(row + 1) * LAGS],
            &mut means[row * MOMENTS..(row + 1) * MOMENTS],
            history,
            (k, common.warm_up_from(row, report.released), longest),
            arrived,
            late,
        );
        if let Some(lag) = lag {
            loop_steps[row] = lag;
        }
        let mut old = b_bar_column[row];
        if starting && common.measured[row] && !params.target.is_nan() && !b_fast[row].is_nan() {
            // the start-up is over: eq. (19)'s average began at nothing and lags a link it has never seen by its
            // time constant, 1 / (1 - alpha) periods; it goes on from the fast one, which follows within a few
            old = old.max(b_fast[row]);
        }
        let errors = &mut rate_errors[row * 2..row * 2 + 2];
        if !down && !old.is_nan() && !b_fast[row].is_nan() {
            score_rate_averages(errors, b, old, b_fast[row]);
        }
        let b_bar = if down {
            old
        } else if old.is_nan() {
            b
        } else {
            alpha * old + (1.0 - alpha) * b // eq. (19)
        };
        b_bar_column[row] = b_bar;
        if !down {
            let fast = b_fast[row];
            b_fast[row] = if fast.is_nan() { b } else { FAST_ALPHA * fast + (1.0 - FAST_ALPHA) * b };
        }
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
        // quotas released and not yet in q(k): 2d in the paper (d each way); measured, the loop delay less one
        let (in_flight, d) = if params.d >= 0 {
            (2 * params.d, params.d)
        } else if params.loop_measured != 0 {
            let loop_delay = common.measured_loop(row, loop_steps[row], ts);
            (loop_delay - 1, loop_delay - 1)
        } else {
            let d = derived_d(common.min_rtt[row], ts);
            (2 * d, d)
        };
        d_column[row] = d;
        // the rate the law counts on: b_bar (eq. 19); with the boundary layer, b_bar or the fast average,
        // whichever has foretold the served rate better over the last second
        let b_bar = if params.saturate != 0 && !b_fast[row].is_nan() {
            better_rate_average(errors, b_bar, b_fast[row])
        } else {
            b_bar
        };
        let b_bar0 = if b_bar.is_nan() { 0.0 } else { b_bar };
        // what the loop served beyond what the law counted on (L b_bar Ts), its 98th percentile over 2.56 s
        let margin = if down {
            common.margin[row].max(0.0)
        } else {
            common.forecast_margin(row, k, b * ts, (in_flight + 1) as f64 * b_bar0 * ts, in_flight + 1)
        };
        if !params.target.is_nan() {
            // a delay target: the queue holds target seconds of the rate, whatever the rate; by default (0) the
            // forecast margin, the loop delay's worth of the rate until the margin has FORECAST_WARMUP errors
            let fast = if b_fast[row].is_nan() { 0.0 } else { b_fast[row] };
            let smallest = if common.measured[row] { MIN_REFERENCE } else { INITIAL_WINDOW };
            let mut reference = if params.target > 0.0 {
                params.target * fast.min(b_bar0)
            } else if common.error_count[row] >= FORECAST_WARMUP {
                // at least a period's service (see PERIOD_FLOOR), and the reserve for what an empty queue lost
                margin.max(ts * fast.min(b_bar0)).max(smallest) + common.reserve[row]
            } else {
                (in_flight + 1) as f64 * ts * fast.min(b_bar0)
            }
            .max(smallest);
            if !b_max[row].is_nan() {
                // keep q0 + band under the guarded limit: the band is at most q0/2 (rule 43 at half the margin)
                reference = reference.min((b_max[row] - guard_margin(b_max[row])) / 1.5).max(0.0);
            }
            q0[row] = reference;
            if !params.band_fraction.is_nan() {
                let margin = if b_max[row].is_nan() { reference } else { reference.min(b_max[row] - reference) };
                let band = (params.band_fraction * margin).max(MIN_BAND);
                eps[row] = band * (1.0 - delta * ts) / ts;
            }
        }
        let past: f64 = (1..=in_flight).map(|age| history[(k - age).rem_euclid(QUOTA_HISTORY as i64) as usize]).sum();
        let s = report.queue - q0[row] - in_flight as f64 * b_bar0 * ts + gamma * past; // S(k), eq. (34)
        let switching = eta_2 + eps[row] * ts;
        // with the boundary layer the feed-forward is b_bar Ts alone: eta_1, the midrange of eta over the
        // horizon, is biased for a whole horizon after every change of the rate (below after a fall, when the
        // queue must be ready for the rate to come back; above after a rise), and the layer's linear gain would
        // turn that into an offset of the queue of eta_1 / LAYER_GAIN
        let (sgn, center) =
            if params.saturate != 0 { (saturated(s, switching, delta * ts), 0.0) } else { (sign(s), eta_1) };
        let law = (b_bar0 * ts + center - delta * ts * s - switching * sgn) / gamma; // eq. (36)
        let mut w = if law.is_nan() {
            law // q0 not resolved yet: no decision
        } else if down {
            0.0
        } else {
            law.max(0.0)
        };
        if params.guard != 0 && !w.is_nan() && !b_max[row].is_nan() {
            // what is queued and on its way, with nothing served meanwhile, stays under B_max less the margin
            let room = b_max[row] - guard_margin(b_max[row]) - report.queue - gamma * past;
            w = w.min((room / gamma).max(0.0));
        }
        let released = if w.is_nan() { 0.0 } else { w };
        history[k.rem_euclid(QUOTA_HISTORY as i64) as usize] = released;
        common.w[row] = w;
        common.q[row] = report.queue;
        common.b[row] = if down { 0.0 } else { b };
        common.s[row] = s;
        common.outage[row] = down;
        let limit = if w.is_nan() { -1 } else { released.round_ties_even() as i64 };
        // the guard's hard half, enforced on the sockets: whatever the loop model says, everything sent and not
        // acknowledged (in flight, queued at the eNB or just delivered) plus what is still unsent stays under it
        let cap = if params.guard != 0 && !b_max[row].is_nan() { b_max[row] - guard_margin(b_max[row]) } else { 0.0 };
        *output = Output { limit, step: k, step_s: ts, pacing: 0.0, cap };
    }
    Ok(())
}

/// The loop delay, in steps from a quota's step to the report whose arrivals hold it: the lag of the largest
/// covariance between the changes of past quotas and the change of this period's arrivals, if it stands out
/// (see LAG_UNIQUE). Changes, not levels: settled, the quota follows the rate and moves slowly, so its levels
/// covary with the arrivals at every lag alike; its changes are nearly uncorrelated from step to step (the
/// rate's noise), and their covariance with the arrivals' changes peaks at the lag that carries them.
/// The peak must also be significant (LAG_SIGNIFICANT): its correlation, against the variances of the quota's
/// and the arrivals' changes, is more than unrelated noise makes.
/// At lag 1 the quota's change is set against a(k) - (a(k-1) + a(k-2)) / 2, not a(k) - a(k-1). The law answers each
/// report at once (inside its layer w(k) moves by -1/2 of what the report's arrivals moved S), so w(k-1) - w(k-2) holds
/// -G a(k-1) + G a(k-2): against a(k) - a(k-1) that is +G var(a) at lag 1 wherever the loop is, a correlation of 1/2
/// for white arrivals and 2/3 where arrivals straddle the reports' boundaries (one period high, the next low: the
/// proxy's steps come 5-15 ms apart on a busy host), above LAG_SIGNIFICANT. That is the law's delay, not the plant's,
/// and it was learnt: at a constant rate on the virtual cell, loop 3 steps, lag 1 was the loop in use for 128-527 of
/// the 460-750 steps with data of each of 6 runs (2026-11-28); the law counted no quota on its way, and the queue swung
/// 0-40 kB around a 15 kB reference for seconds (in band 88-98 %, under the test's 95 % in 3 of 4); on the piecewise trace at a
/// 4 s period it was `smvs`'s loop for 80 % of the run. Against the mean of the two periods before, the two answers
/// cancel for white arrivals and leave 0.22 for straddling ones (each figure for a quota that answers nothing else),
/// while a quota that does reach the queue in one step keeps its covariance (var + c1 / 2 of the quota's changes,
/// against var - c1 at the other lags).
/// Nothing is learnt from a report that waited, the steps stepped behind it (`late`) and the LAGS steps after
/// (STALL_PERIODS), nor before LAG_WARMUP steps have passed since the row's first release (`first_release`, the
/// step whose quota first released bytes, negative while none has: `Common::warm_up_from`).
/// The peak is looked for among the `longest` first lags, those the path allows (`Common::plausible_lags`); the
/// rivals and the spread among all LAGS.
/// `history` holds w(k - 1) and before; `k` is this step; `means` holds the running means of the changes, the
/// last period's arrivals, the running variances of the changes, the last step of a pause and the last change of
/// the arrivals (MOMENTS wide).
fn learn_loop(
    cov: &mut [f64],
    means: &mut [f64],
    history: &[f64],
    (k, first_release, longest): (i64, i64, usize),
    arrived: f64,
    late: i64,
) -> Option<i64> {
    if late > 0 {
        means[5] = means[5].max((k + late + LAGS as i64) as f64);
    }
    if k as f64 <= means[5] {
        means[6] = arrived - means[2];
        means[2] = arrived;
        return None;
    }
    let quota = |age: usize| history[(k - age as i64).rem_euclid(QUOTA_HISTORY as i64) as usize];
    let change = |age: usize| quota(age) - quota(age + 1);
    let (mean_w, mean_a, last_arrived) = (means[0], means[1], means[2]);
    let arrived_change = arrived - last_arrived;
    // lag 1's: a(k) - (a(k-1) + a(k-2)) / 2, the change and half the one before
    let straddled = arrived_change - mean_a + 0.5 * (means[6] - mean_a);
    for (index, value) in cov.iter_mut().enumerate() {
        let target = if index == 0 { straddled } else { arrived_change - mean_a };
        *value = LAG_MEMORY * *value + (1.0 - LAG_MEMORY) * (change(index + 1) - mean_w) * target;
    }
    means[6] = arrived_change;
    means[0] = LAG_MEMORY * mean_w + (1.0 - LAG_MEMORY) * change(1);
    means[1] = LAG_MEMORY * mean_a + (1.0 - LAG_MEMORY) * arrived_change;
    means[2] = arrived;
    means[3] = LAG_MEMORY * means[3] + (1.0 - LAG_MEMORY) * (change(1) - mean_w).powi(2);
    means[4] = LAG_MEMORY * means[4] + (1.0 - LAG_MEMORY) * (arrived_change - mean_a).powi(2);
    if first_release < 0 || k - first_release <= LAG_WARMUP {
        return None;
    }
    let (best, &peak) = cov[..longest.clamp(1, LAGS)].iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1))?;
    // the lags two or more away from the peak: the largest (a rival) and their spread
    let (rival, sum, square, count) = cov
        .iter()
        .enumerate()
        .filter(|(index, _)| index.abs_diff(best) >= 2)
        .fold((f64::NEG_INFINITY, 0.0, 0.0, 0.0), |(rival, sum, square, count), (_, &value)| {
            (rival.max(value), sum + value, square + value * value, count + 1.0)
        });
    let significant = peak > LAG_SIGNIFICANT * (means[3] * means[4]).sqrt(); // and so positive
    let mean = sum / count;
    let spread = (square / count - mean * mean).max(0.0).sqrt();
    let stands_out = peak - mean > LAG_STANDS_OUT * spread;
    (significant && stands_out && rival < LAG_UNIQUE * peak).then_some(best as i64 + 1)
}

/// Keeps step `k - 1`'s quota as it was used, where the report says what was released since the last one: a quota
/// the UE's connections had no data for never left, and neither S(k) nor the RAN clock may count it on its way.
fn record_release(history: &mut [f64], k: i64, released: f64) {
    if !released.is_nan() {
        history[(k - 1).rem_euclid(QUOTA_HISTORY as i64) as usize] = released;
    }
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
    let (mut common, rate_column, queue_sum, queue_count, next_feedback, q_ref_column, smoothed) = unsafe {
        (
            Common::new(&columns.common, capacity),
            slice(columns.rate, capacity),
            slice(columns.queue_sum, capacity),
            slice(columns.queue_count, capacity),
            slice(columns.next_feedback, capacity),
            slice(columns.q_ref, capacity),
            slice(columns.smoothed, capacity),
        )
    };
    // SAFETY: as above; the rings are QUOTA_HISTORY, LAGS and MOMENTS wide.
    let (in_flight, srtt, pipe, loop_tau, quotas, transit, lag_cov, means, loop_steps, loop_column) = unsafe {
        (
            slice(columns.in_flight, capacity),
            slice(columns.srtt, capacity),
            slice(columns.pipe, capacity),
            slice(columns.loop_tau, capacity),
            slice(columns.quotas, capacity * QUOTA_HISTORY),
            slice(columns.transit, capacity),
            slice(columns.lag_cov, capacity * LAGS),
            slice(columns.means, capacity * MOMENTS),
            slice(columns.loop_steps, capacity),
            slice(columns.loop_now, capacity),
        )
    };
    // SAFETY: as above; the errors are 2 wide.
    let (fast, rate_errors) = unsafe { (slice(columns.fast, capacity), slice(columns.rate_errors, capacity * 2)) };
    let ran = params.ran_clock != 0;
    for ((report, &row), output) in reports.iter().zip(&rows).zip(outputs.iter_mut()) {
        let history = &mut quotas[row * QUOTA_HISTORY..(row + 1) * QUOTA_HISTORY];
        let previous_queue = common.prev_queue[row];
        let k_next = common.steps[row] + 1;
        record_release(history, k_next, report.released);
        // the RAN clock's loop, in steps: tau's, measured (as SMVS's), or the forward half of the RTT and the report
        let mut loop_now = 1;
        if ran {
            // what reached the queue during the period, against the quotas released before: the loop delay
            let arrived = (report.queue - previous_queue + report.served + report.dropped).max(0.0);
            common.time_first_release(row, k_next, report.released, arrived);
            if let Some(lag) = learn_loop(
                &mut lag_cov[row * LAGS..(row + 1) * LAGS],
                &mut means[row * MOMENTS..(row + 1) * MOMENTS],
                history,
                (k_next, common.warm_up_from(row, report.released), common.plausible_lags(row, report.period)),
                arrived,
                common.late_steps(row, now, report.period),
            ) {
                loop_steps[row] = lag;
            }
            loop_now = if !params.tau.is_nan() && report.period > 0.0 {
                ((params.tau / report.period - 1e-9).ceil() as i64).max(1)
            } else if params.loop_measured != 0 {
                common.measured_loop(row, loop_steps[row], report.period)
            } else {
                1 + derived_d(common.min_rtt[row], report.period)
            };
            loop_column[row] = loop_now;
            let released =
                |age: i64| WIRE_PER_PAYLOAD * history[(k_next - age).rem_euclid(QUOTA_HISTORY as i64) as usize];
            // in transit: the last count, plus the last quota, less what arrived; leaning toward the quotas of the
            // loop (TRANSIT_ANCHOR); never below nothing nor above all released over the longest loop learnt
            let anchor: f64 = (1..loop_now).map(released).sum();
            let counted = if transit[row].is_nan() { anchor } else { transit[row] + released(1) - arrived };
            let most: f64 = (1..=LAGS as i64).map(released).sum();
            transit[row] = ((1.0 - TRANSIT_ANCHOR) * counted + TRANSIT_ANCHOR * anchor).clamp(0.0, most);
        }
        // tau: configured; with the RAN clock, the loop from a release to the report that shows it (the window
        // is then what the eNB has not served, the bytes on their way to it and its queue: b tau + q_ref); or
        // the loop as measured (the RTT without the queue under load: what the window's b tau must cover),
        // never below the smallest RTT; or, until it is measured, the smallest RTT
        let tau = if !params.tau.is_nan() {
            params.tau
        } else if ran {
            loop_now as f64 * report.period
        } else if params.loop_measured != 0 && loop_tau[row] > common.min_rtt[row] {
            loop_tau[row]
        } else {
            common.min_rtt[row]
        };
        let rtt_steps = if tau > 0.0 && report.period > 0.0 { (tau / report.period).ceil() as i64 } else { 1 };
        let (down, k, served, backlogged) = common.begin(row, report, now, params.channel_rate != 0, rtt_steps);
        // b tau is what one RTT carries: with smoothing, the served rate averaged over tau (a period's own
        // rate on a bursty link swings from nothing to several times the mean) or at FAST_ALPHA per period,
        // whichever has foretold the served rate better over the last second (as SMVS's b_bar and fast
        // average: on a link that steps, the average over tau lags each step by tau); a period that begins or
        // ends with an empty queue may have served less than the link could carry, so it may raise an
        // average, never lower it
        let b = if params.smooth_rate == 0 || down {
            served
        } else if smoothed[row].is_nan() {
            smoothed[row] = served;
            fast[row] = served;
            served
        } else {
            let errors = &mut rate_errors[row * 2..row * 2 + 2];
            score_rate_averages(errors, served, smoothed[row], fast[row]);
            let over_tau = if tau > 0.0 { (-report.period / tau).exp() } else { 0.0 };
            for (average, weight) in [(&mut smoothed[row], over_tau), (&mut fast[row], FAST_ALPHA)] {
                if backlogged || served > *average {
                    *average = weight * *average + (1.0 - weight) * served;
                }
            }
            better_rate_average(errors, smoothed[row], fast[row])
        };
        if !ran && params.loop_measured != 0 && !down && !in_flight[row].is_nan() && tau > 0.0 {
            // what is in flight and not in the queue is on the wire, in the MAC or HARQ, or delivered with its
            // ACK still on the way back: by Little's law b times the loop's RTT without the queue
            let outside = (in_flight[row] - report.queue).max(0.0);
            let weight = (-report.period / tau).exp();
            pipe[row] = if pipe[row].is_nan() { outside } else { weight * pipe[row] + (1.0 - weight) * outside };
            if b > 0.0 {
                // within the RTT the sockets see, queue included: a rate estimate that lags a fall cannot
                // stretch it further
                let bound = if srtt[row] > 0.0 { srtt[row] } else { f64::INFINITY };
                loop_tau[row] = (pipe[row] / b).min(bound);
            }
        }
        let (mut window, last_rate) = (common.w[row], rate_column[row]);
        let missing = window.is_nan();
        let known_rate = if last_rate.is_nan() { 0.0 } else { last_rate };
        let changed = last_rate.is_nan() || (b - known_rate).abs() > params.rate_change * known_rate;
        // a period that ends with an empty queue served less than the link could carry: it may raise the
        // rate, never lower it
        let feed_forward = !down && (missing || (changed && (report.queue > 0.0 || b > known_rate)));
        // what one RTT served beyond what the window's in-flight part counted on (the rate of the feed-forward in
        // force from this step on, times tau), its 98th percentile over 2.56 s
        let span = if tau > 0.0 && report.period > 0.0 { (tau / report.period).ceil() as i64 } else { 1 };
        let margin = if down {
            common.margin[row].max(0.0)
        } else {
            let forecast = if feed_forward { b } else { known_rate } * span as f64 * report.period;
            common.forecast_margin(row, k, served * report.period, forecast, span)
        };
        let warm = common.error_count[row] >= FORECAST_WARMUP;
        let smallest = if common.measured[row] { MIN_REFERENCE } else { INITIAL_WINDOW };
        // q_ref in bytes; or a delay target, q_ref = target x the rate of the last feed-forward; by default
        // the forecast margin, until it has FORECAST_WARMUP errors the loop delay's worth of the rate (a
        // forward half of the RTT and the period the report waits for; with the RAN clock, its loop)
        let lead = if ran { tau } else { tau / 2.0 + report.period };
        let reference = |rate: f64| {
            if !params.q_ref.is_nan() {
                params.q_ref
            } else if params.target > 0.0 {
                (params.target * rate).max(smallest)
            } else if warm {
                // at least a period's service (PERIOD_FLOOR), and the reserve for what an empty queue lost
                margin.max(report.period * rate).max(smallest) + common.reserve[row]
            } else {
                (lead * rate).max(smallest)
            }
        };
        if missing && down {
            window = reference(known_rate);
        }
        if feed_forward {
            rate_column[row] = b;
            window = b * tau + reference(b); // eq. (1)
        }
        let q_ref = reference(if rate_column[row].is_nan() { 0.0 } else { rate_column[row] });
        q_ref_column[row] = q_ref;
        // the average (2) corrects by restarts, a whole feedback period later, where the queue says nothing about
        // the window: in an outage nothing is served (the paper's fixed period keeps averaging); and with the RAN
        // clock, before the UE's first release the window limits nothing (its connection is not up), and eq. (2)
        // would wind it up to the guard's cap
        let outage_restart = down && params.feedback_period.is_nan();
        let waiting = ran && common.warm_up_from(row, report.released) < 0;
        if outage_restart || waiting {
            queue_sum[row] = 0.0;
            queue_count[row] = 0.0;
            next_feedback[row] = f64::NAN;
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
                let period = if params.feedback_period.is_nan() {
                    (2.0 * tau).max(FEEDBACK_MIN_PERIODS * report.period)
                } else {
                    params.feedback_period
                };
                next_feedback[row] = now + period;
            }
            window = window.max(params.min_window);
            if params.guard != 0 && report.limit > 0.0 {
                // what is in flight bounds what can reach the queue: B_max less the margin
                window = window.min(report.limit - guard_margin(report.limit)).max(params.min_window);
            }
        }
        common.w[row] = window;
        common.q[row] = report.queue;
        common.b[row] = b;
        common.outage[row] = down;
        *output = if ran {
            // the window less what the eNB holds and what is on its way to it, released over the next period
            let quota = if down { 0.0 } else { ((window - report.queue - transit[row]) / WIRE_PER_PAYLOAD).max(0.0) };
            history[k.rem_euclid(QUOTA_HISTORY as i64) as usize] = quota;
            // the guard's hard half on the sockets, as SMVS's: nothing they hold can take the queue past it
            let cap =
                if params.guard != 0 && report.limit > 0.0 { report.limit - guard_margin(report.limit) } else { 0.0 };
            Output { limit: quota.round_ties_even() as i64, step: k, step_s: report.period, pacing: 0.0, cap }
        } else {
            let pacing = if tau > 0.0 { window / tau } else { 0.0 };
            Output { limit: window.round_ties_even() as i64, step: k, step_s: 0.0, pacing, cap: 0.0 }
        };
    }
    Ok(())
}
