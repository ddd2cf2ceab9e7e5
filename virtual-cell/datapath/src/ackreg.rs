//! The ACK Regulator of paper 003 (Chan and Ramjee, "TCP/IP performance over 3G wireless links with rate and
//! delay variation", MobiCom 2002): at the base station, per UE, it holds the UE's uplink TCP ACKs and releases
//! them toward the sender so that the data they will clock out neither overflows the UE's downlink (RLC) queue nor
//! lets it run dry, without splitting the connection.
//!
//! What the paper gives: Sec. 4's model, in which a long-lived flow in congestion avoidance over a link of variable
//! rate and delay loses throughput to multiple losses per window (p2, p3 of Eq. 19) caused by bursts of compressed
//! ACKs, and the conclusion that a remedy must turn those into single losses; Sec. 5 names the regulator, placed at
//! the node that holds the per-user queue, and its text stops there. What this module decided, and why:
//!
//! - **The release rule is a forecast of the queue.** An ACK that newly acknowledges `a` bytes lets a sender in
//!   congestion avoidance send about `a` bytes, one in slow start `2a` (RFC 5681 3.1): the regulator budgets
//!   `e = g * a` with `g = 2` until the flow's first congestion signal (a duplicate ACK or a SACK block: slow start
//!   ends at the first loss on a drop-tail queue; or an ECE the regulator set) and `g = 1` after it. Those bytes reach the queue one round trip later
//!   (eNB to sender to eNB, `rtt`). The head ACK is released when `q + f + e` stays at or under `limit - headroom`:
//!   `q` queued now, `f` the budgets of the ACKs released within the last round trip (their data is on its way).
//!   The queue's service over that round trip is not counted on: a forecast that did would keep the queue fuller,
//!   but overflow whenever the rate falls within a round trip by more than the headroom (a 10x step does).
//!   Counting none, the queue and what is on its way to it stay under the limit whatever the rate does, and the
//!   link stays busy as long as the limit exceeds the bytes in flight upstream (the rate times the round trip):
//!   the paper's buffer of one bandwidth-delay product.
//! - **What the senders may still send bounds the forecast too.** Budgets model a sender that sends what each ACK
//!   lets out, when it lets it out. A sender can send more: its application wrote late and the window it left
//!   open goes out at once; a window reduction (ECE, recovery) ends with the window well above the flight, since
//!   the queue drained while it lasted (on Mahimahi's ATT LTE trace, after an outage, data came at 3-4 times the
//!   rate of the ACKs released, with none held, and 22 packets overflowed); or its data is late beyond the
//!   measured round trip and its budget has left `f`. So `f` is at least, summed over flows, the released ACK plus
//!   the sender's window less the end of the furthest data to arrive. The window is what the data shows: the
//!   largest flight since the flow began (a data packet's end less the highest ACK released with the TSval it
//!   echoes, which the sender had not heard past), halved at each congestion signal, once per round trip, and
//!   cut to the initial window after 200 ms without data (RFC 5681 4.1's restart). It must stay under the
//!   sender's window, or the regulator holds ACKs for data that will not come and the queue runs dry: so it is
//!   halved (Reno's decrease, RFC 5681 eq. 4, the deepest of a standard sender; CUBIC's is 0.7), and data sent on
//!   a duplicate ACK or one with SACK blocks is no flight sample: in recovery the sequence numbers past the ACK
//!   hold the holes and the SACKed data as well as the flight. With those samples, Reno over one bandwidth-delay
//!   product of buffer (paper 003's setting, a loss every few round trips) lost 3-7 points of utilization to the
//!   regulator, its queue empty 7-17 % of the time against 4-11 % without it. Should the window seen still be
//!   too large, it holds an ACK only until `max_hold`: past it an ACK is judged by the budgets alone (and a
//!   forced ACK sets ECE and halves the window seen with the sender's).
//! - **The round trip is measured, not configured**, passively, the way pping (Nichols) does it: the first release
//!   of each TSval the UE's ACKs carry (RFC 7323) is remembered per flow, and the first data packet echoing it in
//!   TSecr to reach the queue closes a sample; the estimate is the smallest sample of the last 10 s. Until the first
//!   sample (or for flows without timestamps) `initial_rtt` stands in.
//! - **A held ACK waits at most `max_hold`** (one round trip by default). Held ACKs do not stop a loss-based
//!   sender's window from growing: without a congestion signal the window, and the ACKs held with it, would grow
//!   without bound (the unbounded round trip the paper holds against withholding ACKs, its ref. [18]). An ACK that
//!   has waited `max_hold` leaves whatever the forecast says of the headroom; if its flow is ECN-capable (its data
//!   carries ECT, RFC 3168) the regulator sets ECE on it, at most once per round trip, and the sender reduces its
//!   window without a loss; otherwise the data it clocks out may overflow the queue: gently, at the pace the ACKs
//!   leave, the single loss the paper's model prefers to the bursts of losses compressed ACKs cause.
//! - **An ECN-capable flow's forced ACK still fits under the limit.** After a fall of the rate the ACKs that
//!   arrive within the next round trips were sent by the UE at the old rate; forced out a round trip later, even
//!   with ECE they clock out 0.7 of their budget (CUBIC's decrease, RFC 8312, spread by proportional rate
//!   reduction, RFC 6937), which can be more than the headroom and the queue's service at the new rate take (20 to
//!   2 Mbit/s into 150 kB: 5-17 packets dropped in 6 of 28 runs). So past `max_hold` such an ACK leaves as soon as
//!   the queue, what is on its way and its own budget fit under the limit itself: the headroom is spent, never
//!   overrun. Its ECE cuts the window without a loss; the wait it adds is what the old rate's ACKs clock out over
//!   the new rate (about 0.1 s for that step, under the 0.2 s of Linux's shortest retransmission timeout). A flow
//!   without ECN has no signal but the loss, and keeps the paper's rule.
//! - **Every pure ACK waits its turn, duplicates too.** ACKs leave in the order they came (cumulative ACKs
//!   reordered would read as duplicates). A duplicate ACK or one with SACK blocks ends the flow's slow start and is
//!   budgeted one segment (what it lets out in recovery, RFC 6675); passing it ahead would acknowledge, at once,
//!   everything held before it, the burst the regulator exists to prevent. Anything else (data, SYN, FIN, RST, not
//!   TCP) passes at once, after the held ACKs of its flow.
//!
//! Time is the cell's TTI index (1 ms per TTI at the default `tti_us`).

use std::collections::{HashMap, VecDeque};

use crate::ecn::{Flow, TCP_ACK, TCP_RST, ipv4_header_len, tcp_offset};

/// The round-trip estimate keeps the smallest sample of this many TTIs.
const RTT_WINDOW_TTIS: u64 = 10_000;
/// TSvals remembered per flow for RTT samples; older ones are forgotten.
const TSVALS_REMEMBERED: usize = 256;
/// What a duplicate ACK lets a sender in recovery send: one segment, bytes.
const SEGMENT_BUDGET: u64 = 1448;
/// What a congestion signal leaves at least of a sender's window: Reno's half (RFC 5681 eq. 4), the deepest
/// decrease of a standard sender (CUBIC's is 0.7, RFC 8312 4.5), so that the window seen stays under the sender's.
const WINDOW_DECREASE: (u64, u64) = (1, 2);
/// A sender idle this long restarts from its initial window (RFC 5681 4.1: idle longer than the retransmission
/// timeout, at least 200 ms in Linux), TTIs.
const IDLE_RESTART_TTIS: u64 = 200;
/// The initial window of ten segments (RFC 6928), bytes.
const RESTART_WINDOW: u64 = 10 * 1448;

const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_ECE_CWR: u8 = 0xc0;
const OPTION_END: u8 = 0;
const OPTION_NOP: u8 = 1;
const OPTION_SACK: u8 = 5;
const OPTION_TIMESTAMP: u8 = 8;

/// The regulator's parameters, resolved (config.rs documents the defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// The RLC queue's limit the forecast must stay under, bytes.
    pub limit_bytes: u64,
    /// Kept free below the limit for the forecast's errors (a rate that falls within a round trip), bytes.
    pub headroom_bytes: u64,
    /// The longest an ACK is held, in round trips.
    pub max_hold_rtts: f64,
    /// The round trip until one is measured, TTIs.
    pub initial_rtt_ttis: u64,
}

/// The fields of a TCP segment the regulator reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub flags: u8,
    pub seq: u32,
    pub ack: u32,
    pub payload_len: usize,
    /// (TSval, TSecr) of the timestamp option.
    pub timestamps: Option<(u32, u32)>,
    pub sack: bool,
}

/// Parses an IPv4 TCP segment; None for anything else.
pub fn segment(packet: &[u8]) -> Option<Segment> {
    let tcp = tcp_offset(packet)?;
    let ip_len = ipv4_header_len(packet)?;
    let total = usize::from(u16::from_be_bytes([packet[2], packet[3]])).min(packet.len());
    let data_offset = usize::from(packet[tcp + 12] >> 4) * 4;
    if data_offset < 20 || tcp + data_offset > total {
        return None;
    }
    let word = |at: usize| u32::from_be_bytes([packet[at], packet[at + 1], packet[at + 2], packet[at + 3]]);
    let mut found = Segment {
        flags: packet[tcp + 13],
        seq: word(tcp + 4),
        ack: word(tcp + 8),
        payload_len: total - ip_len - data_offset,
        timestamps: None,
        sack: false,
    };
    let options = &packet[tcp + 20..tcp + data_offset];
    let mut i = 0;
    while i < options.len() {
        match options[i] {
            OPTION_END => break,
            OPTION_NOP => i += 1,
            kind => {
                let Some(&len) = options.get(i + 1) else { break };
                let len = usize::from(len);
                if len < 2 || i + len > options.len() {
                    break;
                }
                if kind == OPTION_TIMESTAMP && len == 10 {
                    let at = tcp + 20 + i;
                    found.timestamps = Some((word(at + 2), word(at + 6)));
                } else if kind == OPTION_SACK {
                    found.sack = true;
                }
                i += len;
            }
        }
    }
    Some(found)
}

/// A pure ACK: ACK set, no payload, no SYN, FIN, RST or URG (PSH, ECE and CWR do not matter).
fn pure_ack(segment: &Segment) -> bool {
    segment.flags & !(TCP_PSH | TCP_ECE_CWR) == TCP_ACK && segment.payload_len == 0
}

/// Whether sequence number `a` comes after `b`, modulo 2^32 (RFC 793 3.3).
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

#[derive(Debug, Default)]
struct FlowState {
    /// The highest ACK number released (None before the first).
    released_ack: Option<u32>,
    /// The highest ACK number that arrived.
    arrived_ack: Option<u32>,
    /// Before the flow's first duplicate ACK or SACK block.
    slow_start: bool,
    /// The flow's data carries ECT: ECE reaches its sender as a congestion signal.
    ecn: bool,
    /// When the regulator last set ECE on one of the flow's ACKs.
    last_ece_tti: Option<u64>,
    /// (TTI of its first release, what was released with it) per TSval, oldest first.
    tsvals: VecDeque<(u64, Release)>,
    /// The TSval the flow's data echoes now and what was released with it: the sender had not heard of any later
    /// ACK when it sent that data.
    echo: Option<Release>,
    /// The end (sequence number plus length) of the furthest data of the flow to reach the base station.
    sent_end: Option<u32>,
    /// The sender's congestion window as the data shows it, a lower bound of it: the largest flight seen since the
    /// flow began, cut to `WINDOW_DECREASE` of itself at each congestion signal, bytes.
    window: u64,
    /// When the window was last cut (once per round trip, as the sender cuts once per window of data).
    last_cut_tti: Option<u64>,
    /// When the flow's last data reached the base station.
    last_data_tti: u64,
    /// A FIN or RST was seen: nothing more is on its way.
    closed: bool,
}

impl FlowState {
    /// What the flow's sender may still send on the ACKs released so far, bytes: the released ACK plus its
    /// window, less what has reached the base station. It counts a window the sender has not filled (an
    /// application that wrote late, a window left open when a reduction ended) and data late on its way, which
    /// budgets counted for one measured round trip do not.
    fn unarrived(&self, tti: u64) -> u64 {
        let (Some(ack), Some(end), false) = (self.released_ack, self.sent_end, self.closed) else { return 0 };
        let window =
            if tti > self.last_data_tti + IDLE_RESTART_TTIS { self.window.min(RESTART_WINDOW) } else { self.window };
        let sent_past_ack = i64::from(end.wrapping_sub(ack) as i32);
        (window as i64 - sent_past_ack).max(0) as u64
    }

    /// A congestion signal reached the sender (a duplicate ACK, a SACK block, an ECE): its window is cut, once
    /// per round trip.
    fn congestion_signal(&mut self, tti: u64, rtt: u64) {
        self.slow_start = false;
        if self.last_cut_tti.is_none_or(|last| tti >= last + rtt) {
            self.window = self.window * WINDOW_DECREASE.0 / WINDOW_DECREASE.1;
            self.last_cut_tti = Some(tti);
        }
    }
}

/// The ACKs released with one TSval.
#[derive(Debug, Clone, Copy)]
struct Release {
    tsval: u32,
    /// The highest ACK number among them.
    ack: u32,
    /// One of them was a duplicate or carried SACK blocks: their sender was in recovery, where the sequence
    /// numbers past the ACK (holes, SACKed data) are no longer its flight.
    recovery: bool,
}

#[derive(Debug)]
struct Held {
    packet: Vec<u8>,
    flow: Flow,
    ack: u32,
    duplicate: bool,
    tsval: Option<u32>,
    since_tti: u64,
}

/// What the regulator did, for the cell's report counters.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// ACKs held for at least one TTI, counted at release.
    pub held_acks: u64,
    /// The TTIs they waited, in all.
    pub held_ttis: u64,
    /// ACKs released because they had waited `max_hold`.
    pub forced_acks: u64,
    /// Of those, the ACKs given ECE.
    pub ece_acks: u64,
}

/// One UE's ACK Regulator.
#[derive(Debug)]
pub struct AckRegulator {
    params: Params,
    flows: HashMap<Flow, FlowState>,
    held: VecDeque<Held>,
    /// (TTI, budget) of the ACKs released within the last round trip.
    in_flight: VecDeque<(u64, u64)>,
    in_flight_bytes: u64,
    /// The smallest RTT sample and the TTI it was taken.
    rtt: Option<(u64, u64)>,
    /// The queue at the end of the last TTI, for ACKs that arrive between TTIs.
    queue_bytes: u64,
    tti: u64,
    counts: Counts,
}

impl AckRegulator {
    pub fn new(params: Params) -> AckRegulator {
        AckRegulator {
            params,
            flows: HashMap::new(),
            held: VecDeque::new(),
            in_flight: VecDeque::new(),
            in_flight_bytes: 0,
            rtt: None,
            queue_bytes: 0,
            tti: 0,
            counts: Counts::default(),
        }
    }

    /// The round trip from a released ACK to the data it clocks out reaching the queue, TTIs (at least 1).
    pub fn rtt_ttis(&self) -> u64 {
        self.rtt.map_or(self.params.initial_rtt_ttis, |(rtt, _)| rtt).max(1)
    }

    /// ACKs held now.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Counts since the last call.
    pub fn take_counts(&mut self) -> Counts {
        std::mem::take(&mut self.counts)
    }

    /// An uplink packet reaches the base station: given back to pass now, or held (None).
    pub fn offer(&mut self, packet: Vec<u8>, out: &mut Vec<Vec<u8>>) {
        let Some((flow, segment)) = crate::ecn::acknowledging_flow(&packet).zip(segment(&packet)) else {
            out.push(packet);
            return;
        };
        let (tti, rtt) = (self.tti, self.rtt_ttis());
        let state = self.flows.entry(flow).or_insert_with(|| FlowState { slow_start: true, ..FlowState::default() });
        if !pure_ack(&segment) {
            self.release_flow(flow, out);
            out.push(packet);
            return;
        }
        let duplicate = state.arrived_ack.is_some_and(|last| !after(segment.ack, last)) || segment.sack;
        if duplicate {
            state.congestion_signal(tti, rtt);
        } else {
            state.arrived_ack = Some(segment.ack);
        }
        let tsval = segment.timestamps.map(|(tsval, _)| tsval);
        self.held.push_back(Held { packet, flow, ack: segment.ack, duplicate, tsval, since_tti: self.tti });
        if self.held.len() == 1 {
            self.release_due(out);
        }
    }

    /// A downlink packet reached the base station, before the queue took or dropped it: its TSecr may close an
    /// RTT sample, and with the ACK it echoes it shows the sender's flight.
    pub fn arrived(&mut self, packet: &[u8]) {
        let Some(flow) = crate::ecn::downlink_flow(packet) else { return };
        let Some(state) = self.flows.get_mut(&flow) else { return };
        let Some(data) = segment(packet) else { return };
        state.ecn |= crate::ecn::ecn_capable(packet);
        state.closed |= data.flags & (TCP_FIN | TCP_RST) != 0;
        state.last_data_tti = self.tti;
        let end = data.seq.wrapping_add(data.payload_len as u32);
        if data.payload_len > 0 && state.sent_end.is_none_or(|furthest| after(end, furthest)) {
            state.sent_end = Some(end);
        }
        let Some((_, tsecr)) = data.timestamps else { return };
        while let Some(&(released, release)) = state.tsvals.front() {
            if after(release.tsval, tsecr) {
                break;
            }
            state.tsvals.pop_front();
            if release.tsval == tsecr {
                state.echo = Some(release);
                let sample = self.tti.saturating_sub(released).max(1);
                let stale = self.rtt.is_none_or(|(_, taken)| self.tti >= taken + RTT_WINDOW_TTIS);
                if stale || self.rtt.is_some_and(|(rtt, _)| sample <= rtt) {
                    self.rtt = Some((sample, self.tti));
                }
                break;
            }
        }
        if let Some(echo) = state.echo
            && echo.tsval == tsecr
            && !echo.recovery
            && data.payload_len > 0
        {
            // The sender had heard of no ACK past `ack`: all from `ack` to this data's end was in flight.
            let flight = end.wrapping_sub(echo.ack) as i32;
            if flight > 0 {
                state.window = state.window.max(flight as u64);
            }
        }
    }

    /// A TTI ended with `queue_bytes` in the UE's queue: the ACKs the forecast allows, and those held `max_hold`,
    /// are appended to `out`.
    pub fn end_tti(&mut self, tti: u64, queue_bytes: u64, out: &mut Vec<Vec<u8>>) {
        self.tti = tti + 1;
        self.queue_bytes = queue_bytes;
        let rtt = self.rtt_ttis();
        while let Some(&(released, budget)) = self.in_flight.front() {
            if released + rtt > self.tti {
                break;
            }
            self.in_flight.pop_front();
            self.in_flight_bytes -= budget;
        }
        self.release_due(out);
    }

    /// Releases held ACKs from the head while the forecast allows, or while the head has waited `max_hold`.
    fn release_due(&mut self, out: &mut Vec<Vec<u8>>) {
        let rtt = self.rtt_ttis();
        let max_hold = (self.params.max_hold_rtts * rtt as f64).ceil() as u64;
        let ceiling = self.params.limit_bytes.saturating_sub(self.params.headroom_bytes);
        while let Some(head) = self.held.front() {
            let budget = self.budget(head);
            let budgeted = self.queue_bytes + self.in_flight_bytes + budget;
            let forecast = budgeted.max(self.queue_bytes + self.unarrived() + budget);
            let forced = self.tti >= head.since_tti + max_hold;
            if forecast > ceiling && !forced {
                break;
            }
            // Past its hold, by the budgets alone: a window its sender never fills must not hold an ACK for good.
            if budgeted > self.params.limit_bytes && self.flows.get(&head.flow).is_some_and(|state| state.ecn) {
                break;
            }
            let mut head = self.held.pop_front().expect("the head was just seen");
            if forecast > ceiling {
                self.counts.forced_acks += 1;
                let tti = self.tti;
                let state = self.flows.get_mut(&head.flow).expect("a held ACK's flow is known");
                if state.ecn
                    && state.last_ece_tti.is_none_or(|last| tti >= last + rtt)
                    && crate::ecn::set_ece(&mut head.packet)
                {
                    state.last_ece_tti = Some(tti);
                    state.congestion_signal(tti, rtt); // ECE sets the sender's ssthresh (RFC 3168 6.1.2)
                    self.counts.ece_acks += 1;
                }
            }
            self.release(head, budget, out);
        }
    }

    /// Releases every held ACK of `flow`, ahead of a packet of that flow that passes.
    fn release_flow(&mut self, flow: Flow, out: &mut Vec<Vec<u8>>) {
        if !self.held.iter().any(|held| held.flow == flow) {
            return;
        }
        let (mine, others): (VecDeque<Held>, VecDeque<Held>) =
            std::mem::take(&mut self.held).into_iter().partition(|held| held.flow == flow);
        self.held = others;
        for held in mine {
            let budget = self.budget(&held);
            self.release(held, budget, out);
        }
    }

    /// What the senders may still send on the ACKs released so far, all flows.
    fn unarrived(&self) -> u64 {
        self.flows.values().map(|state| state.unarrived(self.tti)).sum()
    }

    /// The bytes a held ACK is expected to clock out of its flow's sender.
    fn budget(&self, held: &Held) -> u64 {
        if held.duplicate {
            return SEGMENT_BUDGET;
        }
        let Some(state) = self.flows.get(&held.flow) else { return 0 };
        let acked = match state.released_ack {
            Some(last) if after(held.ack, last) => u64::from(held.ack.wrapping_sub(last)),
            Some(_) => 0,
            None => 0, // the first ACK seen of a flow: what it acknowledges is not known
        };
        if state.slow_start { 2 * acked } else { acked }
    }

    fn release(&mut self, held: Held, budget: u64, out: &mut Vec<Vec<u8>>) {
        let waited = self.tti.saturating_sub(held.since_tti);
        if waited > 0 {
            self.counts.held_acks += 1;
            self.counts.held_ttis += waited;
        }
        let release = held.tsval.map(|tsval| Release { tsval, ack: held.ack, recovery: held.duplicate });
        self.pass(held.flow, held.ack, release, budget, self.tti);
        out.push(held.packet);
    }

    /// Books an ACK that leaves: its budget joins what is in flight, its TSval waits for its echo.
    fn pass(&mut self, flow: Flow, ack: u32, release: Option<Release>, budget: u64, tti: u64) {
        if budget > 0 {
            self.in_flight.push_back((tti, budget));
            self.in_flight_bytes += budget;
        }
        let Some(state) = self.flows.get_mut(&flow) else { return };
        if state.released_ack.is_none_or(|last| after(ack, last)) {
            state.released_ack = Some(ack);
        }
        let Some(release) = release else { return };
        let joins = |same: &mut Release| {
            if after(release.ack, same.ack) {
                same.ack = release.ack;
            }
            same.recovery |= release.recovery;
        };
        match state.tsvals.back_mut() {
            Some((_, last)) if last.tsval == release.tsval => joins(last),
            // A TSval already echoed is not a new release (its sample would start late); the sender may have
            // heard of this ACK too.
            _ if state.echo.is_some_and(|echoed| !after(release.tsval, echoed.tsval)) => {
                if let Some(echoed) = &mut state.echo
                    && echoed.tsval == release.tsval
                {
                    joins(echoed);
                }
            }
            Some((_, last)) if !after(release.tsval, last.tsval) => {}
            _ => {
                if state.tsvals.len() == TSVALS_REMEMBERED {
                    state.tsvals.pop_front();
                }
                state.tsvals.push_back((tti, release));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVER: [u8; 4] = [10, 20, 0, 2];
    const UE: [u8; 4] = [172, 16, 0, 2];

    /// A TCP segment built by hand (checksums are not the regulator's business): `flags`, `seq`, `ack`, a
    /// timestamp option (TSval, TSecr) when given, a SACK block when `sack`, `payload` bytes.
    fn tcp(
        from: [u8; 4],
        to: [u8; 4],
        ports: (u16, u16),
        (flags, seq, ack): (u8, u32, u32),
        timestamps: Option<(u32, u32)>,
        sack: bool,
        payload: usize,
    ) -> Vec<u8> {
        let mut options = Vec::new();
        if let Some((tsval, tsecr)) = timestamps {
            options.extend_from_slice(&[1, 1, 8, 10]);
            options.extend_from_slice(&tsval.to_be_bytes());
            options.extend_from_slice(&tsecr.to_be_bytes());
        }
        if sack {
            options.extend_from_slice(&[1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
        }
        let tcp_len = 20 + options.len();
        let total = 20 + tcp_len + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&from);
        p[16..20].copy_from_slice(&to);
        p[20..22].copy_from_slice(&ports.0.to_be_bytes());
        p[22..24].copy_from_slice(&ports.1.to_be_bytes());
        p[24..28].copy_from_slice(&seq.to_be_bytes());
        p[28..32].copy_from_slice(&ack.to_be_bytes());
        p[32] = ((tcp_len / 4) as u8) << 4;
        p[33] = flags;
        p[40..40 + options.len()].copy_from_slice(&options);
        p
    }

    fn ack(ack: u32, tsval: u32) -> Vec<u8> {
        tcp(UE, SERVER, (40000, 5201), (TCP_ACK, 1, ack), Some((tsval, 7)), false, 0)
    }

    fn data(seq: u32, tsecr: u32) -> Vec<u8> {
        tcp(SERVER, UE, (5201, 40000), (TCP_ACK, seq, 1), Some((99, tsecr)), false, 1000)
    }

    fn regulator(limit: u64, headroom: u64) -> AckRegulator {
        AckRegulator::new(Params {
            limit_bytes: limit,
            headroom_bytes: headroom,
            max_hold_rtts: 1.0,
            initial_rtt_ttis: 10,
        })
    }

    fn acks_of(out: &[Vec<u8>]) -> Vec<u32> {
        out.iter().map(|p| segment(p).unwrap().ack).collect()
    }

    #[test]
    fn segments_read_their_acknowledgement_payload_timestamps_and_sack() {
        let s = segment(&tcp(UE, SERVER, (1, 2), (TCP_ACK, 5, 9), Some((3, 4)), true, 0)).unwrap();
        assert_eq!((s.seq, s.ack, s.payload_len, s.timestamps, s.sack), (5, 9, 0, Some((3, 4)), true));
        let d = segment(&tcp(SERVER, UE, (2, 1), (TCP_ACK | TCP_PSH, 5, 9), None, false, 1448)).unwrap();
        assert_eq!((d.payload_len, d.timestamps, d.sack), (1448, None, false));
        assert!(pure_ack(&s) && !pure_ack(&d));
    }

    #[test]
    fn with_room_in_the_queue_acks_pass_at_once() {
        let mut r = regulator(100_000, 10_000);
        let mut out = Vec::new();
        r.offer(ack(1000, 1), &mut out);
        r.offer(ack(3000, 1), &mut out);
        assert_eq!(acks_of(&out), [1000, 3000]);
        assert_eq!(r.held(), 0);
    }

    #[test]
    fn the_forecast_holds_what_would_overflow_and_releases_it_as_the_queue_drains() {
        // limit 100 kB less 10 kB headroom; rtt 10 TTIs (no sample yet); served 0 so far.
        // The first ACK only sets the flow's mark. In slow start each next ACK of 10 kB is budgeted 20 kB.
        let mut r = regulator(100_000, 10_000);
        let mut out = Vec::new();
        r.end_tti(0, 40_000, &mut out); // queue 40 kB
        r.offer(ack(0, 1), &mut out);
        r.offer(ack(10_000, 1), &mut out); // 40 + 0 + 20 = 60 <= 90: passes
        r.offer(ack(20_000, 1), &mut out); // 40 + 20 + 20 = 80 <= 90: passes
        r.offer(ack(30_000, 1), &mut out); // 40 + 40 + 20 = 100 > 90: held
        assert_eq!(acks_of(&out), [0, 10_000, 20_000]);
        assert_eq!(r.held(), 1);
        out.clear();
        // The queue drains to 30 kB: 30 + 40 + 20 = 90 <= 90.
        r.end_tti(1, 30_000, &mut out);
        assert_eq!(acks_of(&out), [30_000]);
        assert_eq!(r.take_counts(), Counts { held_acks: 1, held_ttis: 1, forced_acks: 0, ece_acks: 0 });
    }

    #[test]
    fn after_the_first_duplicate_the_budget_is_what_an_ack_acknowledges() {
        let mut r = regulator(100_000, 10_000);
        let mut out = Vec::new();
        r.end_tti(0, 58_552, &mut out);
        r.offer(ack(0, 1), &mut out);
        r.offer(ack(0, 1), &mut out); // a duplicate: slow start is over; one segment, 1448
        r.offer(ack(15_000, 1), &mut out); // 58552 + 1448 + 15000 = 75000 <= 90000
        r.offer(ack(30_000, 1), &mut out); // 75000 + 15000 = 90000 <= 90000
        r.offer(ack(31_000, 1), &mut out); // 91000 > 90000: held
        assert_eq!(acks_of(&out), [0, 0, 15_000, 30_000]);
        assert_eq!(r.held(), 1);
    }

    #[test]
    fn budgets_leave_the_flight_after_a_round_trip() {
        let mut r = AckRegulator::new(Params { max_hold_rtts: 3.0, ..regulator(100_000, 10_000).params });
        let mut out = Vec::new();
        r.end_tti(0, 58_552, &mut out);
        r.offer(ack(0, 1), &mut out);
        r.offer(ack(0, 1), &mut out); // 1448 in flight
        r.offer(ack(30_000, 1), &mut out); // 58552 + 1448 + 30000 = 90000: released at TTI 1
        r.offer(ack(31_000, 1), &mut out); // + 1000 > 90000: held
        out.clear();
        for tti in 1..10 {
            r.end_tti(tti, 58_552, &mut out); // still in flight until TTI 1 + 10
        }
        assert!(out.is_empty());
        r.end_tti(10, 58_552, &mut out); // TTI 11: the 31448 arrived (into the queue, as reported)
        assert_eq!(acks_of(&out), [31_000]);
        assert_eq!(r.take_counts().forced_acks, 0);
    }

    #[test]
    fn an_ack_held_a_round_trip_is_released_whatever_the_forecast() {
        let mut r = regulator(100_000, 10_000);
        let mut out = Vec::new();
        r.end_tti(0, 95_000, &mut out);
        r.offer(ack(0, 1), &mut out); // budget 0, but 95 kB > 90: held from TTI 1
        for tti in 1..10 {
            r.end_tti(tti, 95_000, &mut out);
        }
        assert!(out.is_empty());
        r.end_tti(10, 95_000, &mut out); // TTI 11 = 1 + 10
        assert_eq!(acks_of(&out), [0]);
        assert_eq!(r.take_counts(), Counts { held_acks: 1, held_ttis: 10, forced_acks: 1, ece_acks: 0 });
    }

    #[test]
    fn a_duplicate_or_a_sack_waits_its_turn_and_ends_slow_start() {
        let mut r = regulator(100_000, 10_000);
        let mut out = Vec::new();
        r.end_tti(0, 95_000, &mut out);
        r.offer(ack(1000, 1), &mut out);
        r.offer(ack(2000, 1), &mut out);
        let sack = tcp(UE, SERVER, (40000, 5201), (TCP_ACK, 1, 2000), Some((2, 7)), true, 0);
        r.offer(sack, &mut out);
        assert_eq!(r.held(), 3);
        r.end_tti(1, 87_600, &mut out); // budgets 0 (the flow's first), 1000 (slow start over), then 1448 > 90000
        assert_eq!(acks_of(&out), [1000, 2000]);
        r.end_tti(2, 87_552, &mut out); // 87552 + 1000 + 1448 = 90000
        assert_eq!(acks_of(&out), [1000, 2000, 2000]);
    }

    /// Limit 100 kB, headroom 10 kB: a flow whose first ACK passed at TTI 0 and whose data (ECT(0) when `ecn`)
    /// echoes no TSval released, so no RTT sample and a round trip of 10 TTIs; the queue full (95 kB) from TTI 2 on.
    fn a_flow_before_a_full_queue(ecn: bool) -> (AckRegulator, Vec<Vec<u8>>) {
        let mut r = regulator(100_000, 10_000);
        let mut out = Vec::new();
        r.end_tti(0, 0, &mut out);
        r.offer(ack(0, 1), &mut out);
        let mut first = data(1, 0);
        if ecn {
            first[1] = 0b10; // ECT(0)
        }
        r.arrived(&first);
        r.end_tti(1, 95_000, &mut out);
        out.clear();
        (r, out)
    }

    #[test]
    fn an_ecn_flows_ack_held_a_round_trip_leaves_with_ece_once_per_round_trip() {
        let (mut r, mut out) = a_flow_before_a_full_queue(true);
        r.offer(ack(1000, 2), &mut out);
        r.offer(ack(2000, 2), &mut out);
        for tti in 2..11 {
            r.end_tti(tti, 95_000, &mut out);
        }
        assert!(out.is_empty());
        r.end_tti(11, 95_000, &mut out); // TTI 12 = 2 + 10: both forced, the first with ECE
        let flags: Vec<u8> = out.iter().map(|p| segment(p).unwrap().flags).collect();
        assert_eq!(flags, [TCP_ACK | 0x40, TCP_ACK]);
        assert_eq!(r.take_counts(), Counts { held_acks: 2, held_ttis: 20, forced_acks: 2, ece_acks: 1 });
    }

    #[test]
    fn an_ecn_flows_forced_ack_waits_until_its_budget_fits_under_the_limit() {
        // Limit 100 kB, headroom 10 kB, round trip 10 TTIs. The flow's data carries ECT. With 95 kB queued an ACK
        // of 3 kB more (slow start: budget 6 kB) would not fit under the ceiling (90 kB) nor the limit: held past its
        // round trip while 95 + 6 > 100, it leaves (with ECE) in the TTI the queue is 94 kB, 94 + 6 = 100.
        let (mut r, mut out) = a_flow_before_a_full_queue(true);
        r.offer(ack(3000, 2), &mut out); // held from TTI 2
        for tti in 2..20 {
            r.end_tti(tti, 95_000, &mut out);
        }
        assert!(out.is_empty(), "released past the limit");
        r.end_tti(20, 94_001, &mut out);
        assert!(out.is_empty(), "released past the limit by a byte");
        r.end_tti(21, 94_000, &mut out);
        let flags: Vec<u8> = out.iter().map(|p| segment(p).unwrap().flags).collect();
        assert_eq!(flags, [TCP_ACK | 0x40]);
        assert_eq!(r.take_counts(), Counts { held_acks: 1, held_ttis: 20, forced_acks: 1, ece_acks: 1 });
    }

    #[test]
    fn without_ecn_a_forced_ack_leaves_after_its_round_trip_whatever_the_limit() {
        // The same ACK of a flow without ECN: forced at TTI 12 = 2 + 10 although 95 + 6 > 100.
        let (mut r, mut out) = a_flow_before_a_full_queue(false);
        r.offer(ack(3000, 2), &mut out);
        for tti in 2..11 {
            r.end_tti(tti, 95_000, &mut out);
        }
        assert!(out.is_empty());
        r.end_tti(11, 95_000, &mut out);
        assert_eq!(acks_of(&out), [3000]);
        assert_eq!(r.take_counts(), Counts { held_acks: 1, held_ttis: 10, forced_acks: 1, ece_acks: 0 });
    }

    #[test]
    fn data_and_fins_pass_after_the_held_acks_of_their_flow_only() {
        let mut r = regulator(100_000, 10_000);
        let mut out = Vec::new();
        r.end_tti(0, 95_000, &mut out);
        let other = tcp(UE, SERVER, (40001, 5201), (TCP_ACK, 1, 500), Some((1, 7)), false, 0);
        r.offer(other, &mut out);
        r.offer(ack(1000, 1), &mut out);
        let fin = tcp(UE, SERVER, (40000, 5201), (TCP_ACK | 0x01, 1, 1000), Some((2, 7)), false, 0);
        r.offer(fin, &mut out);
        let udp = crate::ecn::packets::ipv4(60, 0, 1);
        r.offer(udp.clone(), &mut out);
        assert_eq!(out.len(), 3);
        assert_eq!(segment(&out[0]).unwrap().ack, 1000);
        assert_eq!(segment(&out[1]).unwrap().flags, TCP_ACK | 0x01);
        assert_eq!(out[2], udp);
        assert_eq!(r.held(), 1); // the other flow's ACK still waits
    }

    #[test]
    fn a_window_its_sender_left_unfilled_is_counted_as_on_its_way() {
        // Limit 100 kB, headroom 10 kB: ceiling 90 kB; round trip 10 TTIs.
        let mut r = regulator(100_000, 10_000);
        let mut out = Vec::new();
        r.end_tti(0, 0, &mut out); // now TTI 1
        r.offer(ack(0, 0), &mut out); // the flow's first ACK, budget 0
        r.offer(ack(0, 0), &mut out); // a duplicate: slow start is over; budget 1448
        r.offer(ack(1000, 1), &mut out); // budget 1000; TSval 1 leaves at TTI 1
        for tti in 1..11 {
            r.end_tti(tti, 0, &mut out); // TTI 11: the budgets have left the flight
        }
        r.arrived(&data(50_000, 0)); // sent on the duplicate, in recovery: 51 000 past ACK 0 is not a flight
        for seq in (1000..51_000).step_by(1000) {
            r.arrived(&data(seq, 1)); // sent on ACK 1000: a flight of 50 kB
        }
        assert_eq!(r.flows.values().next().map(|flow| flow.window), Some(50_000));
        assert_eq!(r.rtt_ttis(), 10);
        r.offer(ack(51_000, 2), &mut out); // budget 50 kB, nothing else on its way: 0 + 0 + 50 000 <= 90 000
        assert_eq!(acks_of(&out), [0, 0, 1000, 51_000]);
        for tti in 11..22 {
            r.end_tti(tti, 0, &mut out); // TTI 22: the 50 kB budget has left the flight
        }
        for seq in (51_000..61_000).step_by(1000) {
            r.arrived(&data(seq, 2)); // the application wrote 10 kB of the 50 the window allows
        }
        r.end_tti(22, 45_000, &mut out);
        out.clear();
        // Budget 10 kB. By the budgets 45 + 0 + 10 = 55 kB; but the sender may still send 51 + 50 - 61 = 40 kB:
        // 45 + 40 + 10 = 95 > 90, held.
        r.offer(ack(61_000, 3), &mut out);
        assert!(out.is_empty());
        r.end_tti(23, 35_000, &mut out); // 35 + 40 + 10 = 85 <= 90
        assert_eq!(acks_of(&out), [61_000]);
    }

    #[test]
    fn the_window_seen_is_cut_once_a_round_trip_restarts_after_idle_and_closes_with_its_flow() {
        let mut flow = FlowState {
            released_ack: Some(10_000),
            sent_end: Some(30_000),
            window: 100_000,
            last_data_tti: 50,
            ..FlowState::default()
        };
        assert_eq!(flow.unarrived(60), 80_000); // 10 000 + 100 000 - 30 000
        flow.congestion_signal(60, 10);
        assert_eq!(flow.window, 50_000);
        flow.congestion_signal(69, 10); // within the round trip: no second cut
        assert_eq!(flow.window, 50_000);
        flow.congestion_signal(70, 10);
        assert_eq!(flow.window, 25_000);
        assert_eq!(flow.unarrived(250), 5_000); // 10 000 + 25 000 - 30 000: idle 200 TTIs, not longer
        assert_eq!(flow.unarrived(251), 0); // the initial window, 14 480, is less than the 20 000 past the ACK
        flow.released_ack = Some(25_000);
        assert_eq!(flow.unarrived(251), 9_480); // 25 000 + 14 480 - 30 000
        flow.closed = true;
        assert_eq!(flow.unarrived(60), 0);
        let wrapped = FlowState {
            released_ack: Some(4_294_960_000),
            sent_end: Some(3_000),
            window: 20_000,
            ..FlowState::default()
        };
        assert_eq!(wrapped.unarrived(0), 9_704); // 7 296 before the wrap and 3 000 after it are past the ACK
    }

    #[test]
    fn the_round_trip_is_measured_from_a_tsval_released_to_its_echo_reaching_the_queue() {
        let mut r = regulator(100_000, 10_000);
        let mut out = Vec::new();
        r.end_tti(99, 0, &mut out); // now TTI 100
        r.offer(ack(1000, 500), &mut out); // TSval 500 released at TTI 100
        r.offer(ack(2000, 500), &mut out); // same TSval: not a new release
        r.offer(ack(3000, 501), &mut out);
        for tti in 100..137 {
            r.end_tti(tti, 0, &mut out);
        }
        r.arrived(&data(1, 499)); // an older echo closes nothing
        assert_eq!(r.rtt_ttis(), 10);
        r.arrived(&data(1001, 500)); // TTI 137: 37 TTIs after TSval 500 left
        assert_eq!(r.rtt_ttis(), 37);
        r.end_tti(137, 0, &mut out);
        r.arrived(&data(2001, 501)); // TTI 138: 38 > 37, the minimum stays
        assert_eq!(r.rtt_ttis(), 37);
    }
}
