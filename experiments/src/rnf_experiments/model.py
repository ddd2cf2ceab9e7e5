"""Throughput models of long-lived TCP over a variable-rate link: paper 000 eq. (15), paper 003 eq. (19), Padhye.

Pure functions: a bandwidth profile and path parameters in, predictions out. `rnf model` (cli.py) feeds them the
virtual cell's traces; experiments/results/models.md checks them against measured runs.

Units: packets of `packet_bytes` (the IP packet size the cell counts; 1500 by default), seconds, packets/s.
Goodput is packets/s times the MSS (1448 bytes: a 1500-byte IP packet less IP, TCP and timestamp headers).

Where the papers are vague, these assumptions hold (also listed in experiments/README.md):

1. Profile: the trace is averaged over bins of `sample_s` (default 0.1 s) and each bin is one "cycle" of paper
   000 eqs. (12)-(14) (the paper sampled once a second, Sec. 3.1). Outage TTIs count as zero capacity.
2. tau is the propagation round trip: twice the wired delay plus the backhaul and uplink delays.
3. Condition (5) is tested between consecutive bins, b(t) the earlier rate and b(t + dt) the later; a drop to
   zero capacity counts as a timeout (xi is infinite), a bin that stays at zero does not.
4. The number of loss events N_d of eq. (4), and paper 003's p1, p2, p3, need more than the profile (both papers
   traced them in ns-2). From the profile alone, the loss events are closed by time: the profile's duration D is
   filled with loss cycles, each as long as the denominator of eq. (15) (resp. (19)) says for its kind. Events
   forced by the profile come first (paper 000: the N_to spurious timeouts; paper 003: the multi-packet losses at
   rate decreases), and ordinary single-loss sawtooth cycles fill the rest of D, if any is left.
5. Paper 003's losses at a rate decrease from mu_a to mu_b: over the next round trip the sender keeps the old
   ACK clock, so the queue gains (mu_a - mu_b) * tau packets; starting from B/2 (paper 000's uniform-queue
   assumption), ceil((mu_a - mu_b) * tau - B/2) packets overflow, if positive.
6. Epochs: epoch A (window below the pipe, growth 1 per T) happens only when the window after the loss, w0, is
   below b*T; epoch B then starts at max(w0, b*T), not at b*T as eqs. (8) and 003 (8) write, since with
   B > b*tau the window never visits the range below w0. With B <= b*tau (both papers' setting), this is exactly
   the papers' equations. Epochs of negative length do not occur (paper 003 after eq. (19)).
7. Paper 003 eq. (16) prints n_ss = W03 / T, which is a rate, not a count; n_ss = W03 is used (paper 000
   eq. (11), the slow start of [14] up to ssthresh). Eq. (19)'s p3 term uses t_A3 (the text says t_A2).
8. RTO: paper 000's footnote 1, RTO = 2 rtt, with rtt from eq. (1) at the mean rate and q = B/2; it is Padhye's
   T0 and paper 003's T0 unless given.
9. Padhye: the approximate formula (Padhye et al. 1998, eq. 33) with b = 2 packets per ACK (delayed ACKs), no
   receiver-window limit, the rtt of assumption 8, and the loss-event rate implied by eq. (15): one loss event
   per eq. (15) cycle, p = 1 / (the numerator of eq. (15)).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]

PACKET_BYTES = 1500
MSS_BYTES = 1448
SAMPLE_S = 0.1
ACKED_PER_ACK = 2


@dataclass(frozen=True)
class PathParams:
    """What the models need besides the bandwidth profile."""

    tau_s: float  # propagation round-trip time (paper 000's tau, 003's tau-hat)
    buffer_packets: float  # bottleneck buffer B, packets
    rto_s: float | None = None  # timeout for Padhye's T0 and 003's T0; None: 2 rtt (assumption 8)


@dataclass(frozen=True)
class Profile:
    """A bandwidth profile as the models see it: one rate per bin of `sample_s` (packets/s)."""

    rates_pps: Floats
    sample_s: float

    @property
    def duration_s(self) -> float:
        return len(self.rates_pps) * self.sample_s


def profile_from_bytes(bytes_per_tti: npt.ArrayLike, tti_s: float, sample_s: float, packet_bytes: int) -> Profile:
    """Average a per-TTI capacity (bytes, outages as 0) over bins of `sample_s`; a partial last bin is dropped."""
    capacity = np.asarray(bytes_per_tti, dtype=np.float64)
    per_bin = round(sample_s / tti_s)
    if per_bin < 1:
        raise ValueError(f"sample_s {sample_s} s is shorter than a TTI ({tti_s} s)")
    bins = len(capacity) // per_bin
    if bins < 1:
        raise ValueError(f"a profile of {len(capacity) * tti_s:g} s is shorter than one sample of {sample_s:g} s")
    sums = capacity[: bins * per_bin].reshape(bins, per_bin).sum(axis=1)
    return Profile(sums / packet_bytes / (per_bin * tti_s), per_bin * tti_s)


# Paper 000, Sec. 3.2


def relative_decrease(rates_pps: Floats) -> Floats:
    """xi of paper 000 between consecutive bins: (b(t) - b(t+dt)) / b(t+dt); inf for a drop to 0, 0 at 0 -> 0."""
    before, after = rates_pps[:-1], rates_pps[1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        xi = (before - after) / after
    return np.where((before == 0) & (after == 0), 0.0, xi)


def spurious_timeouts(profile: Profile, path: PathParams) -> int:
    """N_to: bandwidth changes meeting paper 000 condition (5), xi > 1 + 2 tau b(t) / (B + 2)."""
    before = profile.rates_pps[:-1]
    threshold = 1 + 2 * path.tau_s * before / (path.buffer_packets + 2)
    return int(np.count_nonzero(relative_decrease(profile.rates_pps) > threshold))


@dataclass(frozen=True)
class Epoch:
    """A phase of the window's evolution: its length (s) and the packets sent in it."""

    t: float
    n: float


NO_EPOCH = Epoch(0.0, 0.0)


def epoch_a(b: float, rtt_min: float, w0: float) -> Epoch:
    """Paper 000 eqs. (6)-(7) / 003 (6)-(7): the window grows 1 per T from w0 to b*T (pipe not yet full)."""
    t = rtt_min * (b * rtt_min - w0)
    if t <= 0:
        return NO_EPOCH
    return Epoch(t, (w0 * t + t * t / (2 * rtt_min)) / rtt_min)


def epoch_b(b: float, rtt_min: float, w0: float, w_max: float) -> Epoch:
    """Paper 000 eqs. (8)-(9) / 003 (8)-(9): the queue fills, w dw = b dt, from max(w0, b*T) to w_max (assumption 6)."""
    start = max(w0, b * rtt_min)
    t = (w_max * w_max - start * start) / (2 * b)
    return Epoch(t, b * t) if t > 0 else NO_EPOCH


@dataclass(frozen=True)
class Ren2011:
    """Paper 000's model for one profile: eqs. (12)-(14), the epochs (6)-(11), N_to from (5), p1 of (4), eq. (15)."""

    b: float  # eq. (12), packets/s
    rtt_min: float  # eq. (13), s
    w_max: float  # eq. (14), packets
    w0: float
    a: Epoch
    b_epoch: Epoch
    c: Epoch
    n_to: int
    n_d: float
    p1: float
    throughput_pps: float  # eq. (15)

    @property
    def p2(self) -> float:
        return 1 - self.p1


def ren2011(profile: Profile, path: PathParams, n_d: float | None = None) -> Ren2011:
    """Paper 000 eq. (15). `n_d`: the number of loss events if known (the paper traced it); else assumption 4."""
    rates = profile.rates_pps
    b = float(rates.mean())
    if b <= 0:
        raise ValueError("the bandwidth profile has no capacity")
    rtt_min = path.tau_s + 1 / b
    w_max = float(np.sqrt(np.mean((rates * path.tau_s + path.buffer_packets + 1) ** 2)))
    w0 = w_max / 2
    a, b_epoch = epoch_a(b, rtt_min, w0), epoch_b(b, rtt_min, w0, w_max)
    c = Epoch(math.ceil(math.log2(w0 + 1)) * rtt_min, w0)  # eqs. (10)-(11)
    n_to = spurious_timeouts(profile, path)
    if n_d is None:
        fast_cycle, slow_cycle = a.t + b_epoch.t, c.t + a.t + b_epoch.t
        n_d = n_to + max(0.0, (profile.duration_s - n_to * slow_cycle) / fast_cycle)
    p1 = min(1.0, n_to / n_d) if n_d > 0 else 0.0  # eq. (4)
    numerator = p1 * (c.n + a.n) + (1 - p1) * a.n + b_epoch.n
    denominator = p1 * (c.t + a.t) + (1 - p1) * a.t + b_epoch.t
    return Ren2011(b, rtt_min, w_max, w0, a, b_epoch, c, n_to, n_d, p1, numerator / denominator)


# Paper 003, Sec. 4


def decrease_losses(profile: Profile, path: PathParams) -> npt.NDArray[np.int64]:
    """Packets lost at each rate decrease between bins (assumption 5); 0 where none overflows."""
    drop = np.maximum(profile.rates_pps[:-1] - profile.rates_pps[1:], 0.0)
    return np.maximum(np.ceil(drop * path.tau_s - path.buffer_packets / 2), 0).astype(np.int64)


def loss_kinds(multiplicities: npt.ArrayLike) -> tuple[int, int, int]:
    """Loss events with one, two, and three or more packets lost (zeros are not events)."""
    m = np.asarray(multiplicities)
    return int(np.count_nonzero(m == 1)), int(np.count_nonzero(m == 2)), int(np.count_nonzero(m >= 3))


@dataclass(frozen=True)
class ChanRamjee2002:
    """Paper 003's model for one profile: eqs. (5)-(18) and the weighted combination (19)."""

    mu: float  # mu-hat, packets/s
    rtt_min: float  # T-hat, s
    w_f: float  # packets
    t0: float  # s
    t_r: float  # eq. (11), s
    single: Epoch  # A1 + B1: one loss
    double: Epoch  # t_R + A2 + B1: two losses
    triple: Epoch  # t_R + T0 + ss + A3 + B1: three or more losses, timeout
    events: tuple[float, float, float]  # loss events of each kind (single ones may be fractional, assumption 4)
    throughput_pps: float  # eq. (19)

    @property
    def p(self) -> tuple[float, float, float]:
        ones, twos, threes = self.events
        total = ones + twos + threes
        return (1.0, 0.0, 0.0) if total == 0 else (ones / total, twos / total, threes / total)


def rtt_mean(b: float, path: PathParams) -> float:
    """Paper 000 eq. (1) at rate b with the queue at B/2 (its uniform-queue assumption)."""
    return path.tau_s + (path.buffer_packets / 2 + 1) / b


def rto(b: float, path: PathParams) -> float:
    """Paper 000 footnote 1, RTO = 2 rtt, unless the path gives one."""
    return path.rto_s if path.rto_s is not None else 2 * rtt_mean(b, path)


def chan_ramjee2002(
    profile: Profile, path: PathParams, kinds: tuple[float, float, float] | None = None
) -> ChanRamjee2002:
    """Paper 003 eq. (19). `kinds`: loss events with 1, 2, >= 3 losses if known (the paper traced them)."""
    rates = profile.rates_pps
    mu = float(rates.mean())
    if mu <= 0:
        raise ValueError("the bandwidth profile has no capacity")
    rtt_min = path.tau_s + 1 / mu
    w_f = float(np.sqrt(np.mean((rates * path.tau_s + path.buffer_packets + 1) ** 2)))
    t0 = rto(mu, path)
    w01 = float(int(w_f / 2))  # eq. (5)
    w02 = float(int(w01 / 2))  # eq. (10)
    w03 = float(int(w02 / 2))  # eq. (14)
    t_r = rtt_min + path.buffer_packets / mu  # eq. (11)
    a1, a2, a3 = (epoch_a(mu, rtt_min, w) for w in (w01, w02, w03))  # eqs. (6)-(7), (12)-(13), (17)-(18)
    b1, b2, b3 = (epoch_b(mu, rtt_min, w, w_f) for w in (w01, w02, w03))  # eqs. (8)-(9), assumption 6
    t_ss = rtt_min * math.log2(w03) if w03 > 1 else 0.0  # eq. (15)
    single = Epoch(a1.t + b1.t, a1.n + b1.n)
    double = Epoch(t_r + a2.t + b2.t, a2.n + b2.n)
    triple = Epoch(t_r + t0 + t_ss + a3.t + b3.t, w03 + a3.n + b3.n)  # n_ss = W03 (assumption 7)
    if kinds is None:
        ones, twos, threes = loss_kinds(decrease_losses(profile, path))
        forced = ones * single.t + twos * double.t + threes * triple.t
        kinds = (ones + max(0.0, (profile.duration_s - forced) / single.t), twos, threes)
    model = ChanRamjee2002(mu, rtt_min, w_f, t0, t_r, single, double, triple, kinds, math.nan)
    p1, p2, p3 = model.p
    throughput = (p1 * single.n + p2 * double.n + p3 * triple.n) / (p1 * single.t + p2 * double.t + p3 * triple.t)
    return dataclasses.replace(model, throughput_pps=throughput)


# Padhye et al., "Modeling TCP Throughput: A Simple Model and its Empirical Validation", SIGCOMM 1998


def padhye(loss_rate: float, rtt_s: float, t0_s: float, acked_per_ack: int = ACKED_PER_ACK) -> float:
    """Padhye's approximate model (their eq. 33) without a receiver-window limit, packets/s."""
    if loss_rate <= 0:
        return math.inf
    p, b = loss_rate, acked_per_ack
    return 1 / (rtt_s * math.sqrt(2 * b * p / 3) + t0_s * min(1.0, 3 * math.sqrt(3 * b * p / 8)) * p * (1 + 32 * p * p))


def padhye_for(profile: Profile, path: PathParams, ren: Ren2011) -> tuple[float, float]:
    """Padhye fed from the profile (assumption 9): (loss-event rate, packets/s)."""
    packets_per_event = ren.p1 * (ren.c.n + ren.a.n) + (1 - ren.p1) * ren.a.n + ren.b_epoch.n
    p = 1 / packets_per_event
    return p, padhye(p, rtt_mean(ren.b, path), rto(ren.b, path))


# Loss events measured in a run (the papers traced them from the bottleneck queue)


def loss_events(times_s: npt.ArrayLike, drops: npt.ArrayLike, gap_s: float) -> npt.NDArray[np.int64]:
    """Packets lost per loss event: drops closer than `gap_s` to the previous drop belong to one event.

    `times_s` and `drops` are per report period (e.g. the cell's `dropped_sdus` every 10 ms), in time order.
    """
    t, d = np.asarray(times_s, dtype=np.float64), np.asarray(drops, dtype=np.int64)
    t, d = t[d > 0], d[d > 0]
    if not len(t):
        return np.zeros(0, dtype=np.int64)
    starts = np.concatenate([[True], np.diff(t) > gap_s])
    return np.add.reduceat(d, np.flatnonzero(starts))


def goodput_mbps(throughput_pps: float, mss_bytes: int = MSS_BYTES) -> float:
    return throughput_pps * mss_bytes * 8 / 1e6
