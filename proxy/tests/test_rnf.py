"""RNF (paper 001 eqs. 1-2): feed-forward on rate changes, periodic queue feedback, outage freeze; the paper's
byte reference and the delay target, the rate averaged over tau, the fast feedback and the overflow guard."""

import pytest
from rnf_proxy.control import AckSample, Mode, RanSample, Tick
from rnf_proxy.rnf import Rnf, RnfConfig

TS = 0.01
# the paper's laws: q_ref in bytes, feedback every second, one period's served rate, no guard
CONFIG = RnfConfig(
    q_ref_bytes=50_000,
    tau_s=0.04,
    feedback_period_s=1.0,
    smooth_rate=False,
    overflow_guard=False,
    channel_rate=False,
    clock="acks",
    ts_s=TS,
)


def report(queue, rate, outage=False, limit=0, cqi=float("nan")):
    return RanSample(queue=queue, served=round(rate * TS), period_s=TS, outage=outage, queue_limit=limit, cqi=cqi)


def test_feed_forward_sets_bdp_plus_reference_and_paces_the_start():
    rnf = Rnf(CONFIG)
    decision = rnf.update(report(50_000, 1_250_000), now=0.0)
    # w = b*tau + q_ref = 1.25e6 * 0.04 + 50000
    assert decision.mode is Mode.WINDOW and decision.limit == 100_000
    assert decision.pacing_rate == pytest.approx(100_000 / 0.04)


def test_only_a_real_rate_change_resets_the_window():
    rnf = Rnf(CONFIG)
    rnf.update(report(50_000, 1_250_000), now=0.0)
    assert rnf.update(report(50_000, 1_300_000), now=TS).limit == 100_000  # 4 %: noise
    assert rnf.update(report(50_000, 1_500_000), now=2 * TS).limit == 110_000  # 20 %: 1.5e6*0.04 + 50000
    # an empty queue means the period served less than the link could: no decrease from it
    assert rnf.update(report(0, 500_000), now=3 * TS).limit == 110_000


def test_feedback_adds_the_queue_error_averaged_over_the_period():
    rnf = Rnf(CONFIG)
    rnf.update(report(80_000, 1_250_000), now=0.0)  # w = 100000, queue samples 80000...
    for k in range(1, 100):
        rnf.update(report(80_000, 1_250_000), now=k * 0.01)
    decision = rnf.update(report(80_000, 1_250_000), now=1.0)
    assert decision.limit == 100_000 + 50_000 - 80_000  # eq. (2)


def test_outage_freezes_the_window_and_resumes_with_it():
    rnf = Rnf(CONFIG)
    rnf.update(report(50_000, 1_250_000), now=0.0)
    frozen = rnf.update(report(50_000, 0, outage=True), now=TS)
    assert frozen.limit == 100_000 and rnf.state().outage
    assert rnf.update(report(50_000, 1_250_000), now=2 * TS).limit == 100_000


def test_a_period_that_served_nothing_unflagged_is_the_rate_falling_not_an_outage():
    rnf = Rnf(CONFIG)
    rnf.update(report(50_000, 1_250_000), now=0.0)
    fallen = rnf.update(report(50_000, 0), now=TS)  # nothing served while data waited, no flag
    assert fallen.limit == 50_000 and not rnf.state().outage  # eq. (1) with b = 0: w = q_ref


def test_measured_min_rtt_is_tau_when_not_configured():
    from rnf_proxy.control import AckSample

    rnf = Rnf(RnfConfig(q_ref_bytes=50_000, smooth_rate=False, clock="acks"))
    rnf.update(AckSample(acked=0, interval_s=TS, in_flight=0, min_rtt_s=0.02, srtt_s=0.08), now=0.0)
    assert rnf.update(report(50_000, 1_000_000), now=TS).limit == 70_000  # 1e6 * 0.02 + 50000


def test_stale_telemetry_falls_back_to_the_ack_clocked_estimator():
    rnf = Rnf(CONFIG)
    rnf.update(report(50_000, 1_250_000), now=0.0)
    stale = rnf.update(Tick(), now=6 * TS)
    assert stale.mode is Mode.WINDOW and rnf.state().fallback
    assert rnf.update(report(50_000, 1_250_000), now=7 * TS).limit == 100_000  # the window it left
    assert rnf.state().fallback is False


def test_a_delay_target_sets_q_ref_from_the_rate():
    rnf = Rnf(CONFIG.model_copy(update={"q_ref_bytes": None, "target_ms": 20.0}))
    # q_ref = 0.02 s x 1.25 MB/s = 25000 B; w = 1.25e6 * 0.04 + 25000
    assert rnf.update(report(25_000, 1_250_000), now=0.0).limit == 75_000
    assert rnf.state().q0 == 25_000


def test_the_default_target_is_the_loop_half_the_rtt_and_one_period():
    rnf = Rnf(RnfConfig(tau_s=0.04, smooth_rate=False, ts_s=TS, clock="acks"))
    # target = 0.04 / 2 + 0.01 = 0.03 s: q_ref = 37500 B; w = 50000 + 37500
    assert rnf.update(report(25_000, 1_250_000), now=0.0).limit == 87_500


def test_the_recorder_shows_the_reserve_the_default_reference_holds_and_none_for_a_byte_or_delay_reference():
    # as SMVS's: 60 backlogged periods at 250 kB/s and CQI 7, then an empty queue that served 1000 B of the 2500 B
    # offered: the default reference's reserve grows by half of the 1500 B lost less 2 % of 2500 B, 725 B
    rnfs = [Rnf(RnfConfig(ts_s=TS)), Rnf(RnfConfig(q_ref_bytes=50_000, ts_s=TS)), Rnf(RnfConfig(target_ms=50, ts_s=TS))]
    for rnf in rnfs:
        for k in range(60):
            rnf.update(report(20_000, 250_000, cqi=7), now=k * TS)
        rnf.update(report(0, 100_000, cqi=7), now=60 * TS)
    default, in_bytes, in_time = (rnf.state().fields() for rnf in rnfs)
    assert default["reserve_bytes"] == 725
    assert "reserve_bytes" not in in_bytes and "reserve_bytes" not in in_time


def test_the_rate_is_averaged_over_tau_and_an_empty_queue_cannot_lower_it():
    rnf = Rnf(CONFIG.model_copy(update={"smooth_rate": True}))
    rnf.update(report(50_000, 1_000_000), now=0.0)  # the first period: b = 1e6, w = 40000 + 50000
    # weight exp(-Ts/tau) = exp(-0.25) = 0.7788: b = 0.7788 x 1e6 + 0.2212 x 3e6 = 1.4424e6 (a 44 % change)
    decision = rnf.update(report(50_000, 3_000_000), now=TS)
    assert decision.limit == pytest.approx(1.4424e6 * 0.04 + 50_000, abs=5)
    # a period that ends empty and served little leaves the average alone
    assert rnf.update(report(0, 100_000), now=2 * TS).limit == decision.limit


def test_after_a_step_the_rate_is_the_fast_average_once_it_has_foretold_better():
    rnf = Rnf(CONFIG.model_copy(update={"smooth_rate": True}))
    for k, rate in enumerate([500_000, 500_000, 1_000_000]):
        rnf.update(report(50_000, rate), now=k * TS)
    # the step: each average was 500k off, squared errors 0.01 x 2.5e11 = 2.5e9 each, a tie: the average over
    # tau, 0.7788 x 500k + 0.2212 x 1e6 = 610.6k (the fast one: 750k)
    assert rnf.state().b == pytest.approx(610_600, abs=100)
    rnf.update(report(50_000, 1_000_000), now=3 * TS)
    # 0.99 x 2.5e9 + 0.01 x 389.4k^2 = 3.99e9 against 0.99 x 2.5e9 + 0.01 x 250k^2 = 3.10e9: the fast one,
    # 0.5 x 750k + 0.5 x 1e6
    assert rnf.state().b == 875_000


def test_on_a_bursty_rate_the_rate_is_the_average_over_tau():
    # 1.5 and 0.5 MB/s in turn: the fast average swings between 0.83 and 1.17 MB/s, the one over tau (weight
    # 0.7788) between 0.94 and 1.06 MB/s, nearer each next period's rate than the fast one was
    rnf = Rnf(CONFIG.model_copy(update={"smooth_rate": True}))
    for k in range(201):
        rnf.update(report(50_000, 1_500_000 if k % 2 == 0 else 500_000), now=k * TS)
    # the last period served 1.5 MB/s: the average over tau at 1e6 + 0.5e6 x 0.2212 / 1.7788 (the fast one, 1.17e6)
    assert rnf.state().b == pytest.approx(1e6 + 0.5e6 * 0.2212 / 1.7788, rel=1e-3)


def test_the_default_feedback_acts_every_two_rtts_not_every_second():
    rnf = Rnf(RnfConfig(q_ref_bytes=50_000, tau_s=0.04, smooth_rate=False, ts_s=TS, clock="acks"))
    rnf.update(report(80_000, 1_250_000), now=0.0)  # w = 100000; the next feedback at 2 tau = 0.08 s
    for k in range(1, 8):
        assert rnf.update(report(80_000, 1_250_000), now=k * TS).limit == 100_000
    # the queue averaged 80000 over the 8 periods: w += 50000 - 80000
    assert rnf.update(report(80_000, 1_250_000), now=0.08).limit == 70_000


def test_the_guard_keeps_the_window_under_the_reported_limit():
    rnf = Rnf(CONFIG.model_copy(update={"overflow_guard": True}))
    # w = 2.5e6 * 0.04 + 50000 = 150000; B_max 100000 less 0.04 x 100000 + 3000: 93000
    assert rnf.update(report(50_000, 2_500_000, limit=100_000), now=0.0).limit == 93_000


def test_the_queue_an_outage_held_does_not_correct_the_window_after_it():
    # the default feedback period, 2 tau = 80 ms; the paper's q_ref and rate otherwise
    rnf = Rnf(CONFIG.model_copy(update={"feedback_period_s": None}))
    assert rnf.update(report(50_000, 1_250_000), now=0.0).limit == 100_000  # b tau + q_ref; feedback due at 80 ms
    for k in range(1, 5):
        rnf.update(report(50_000, 1_250_000), now=k * TS)
    rnf.update(report(150_000, 1_250_000), now=5 * TS)  # the link stops: the window's bytes pile up
    rnf.update(report(150_000, 0, outage=True), now=6 * TS)
    rnf.update(report(150_000, 0, outage=True), now=7 * TS)
    # back at 80 ms: the average (2) restarts after the outage and its first correction comes a whole period later;
    # counting the 150000 B from before it would take (5 x 50000 + 150000 + 50000) / 7 - 50000 = 14286 B off
    assert rnf.update(report(50_000, 1_250_000), now=8 * TS).limit == 100_000
    for k in range(9, 17):
        decision = rnf.update(report(50_000, 1_250_000), now=k * TS)
    assert decision.limit == 100_000  # at 160 ms: the average since the outage is q_ref, nothing to correct


def test_tau_is_the_loop_measured_from_what_the_sockets_hold_in_flight():
    # the sockets: 30 ms smallest RTT, 100000 B unacknowledged; the eNB: 20000 B queued at 1 MB/s
    rnf = Rnf(RnfConfig(q_ref_bytes=20_000, feedback_period_s=10.0, smooth_rate=False, ts_s=TS, clock="acks"))
    rnf.update(AckSample(acked=0, interval_s=0.01, in_flight=100_000, min_rtt_s=0.03, srtt_s=0.2), now=0.0)
    # until measured, tau is the smallest RTT: 1e6 x 0.03 + 20000
    assert rnf.update(report(20_000, 1_000_000), now=0.0).limit == 50_000
    # 80000 B in flight outside the queue at 1 MB/s: an 80 ms loop, used at the next feed-forward
    decision = rnf.update(report(60_000, 1_500_000), now=0.01)
    assert decision.limit == 1_500_000 * 0.08 + 20_000
    # the paper's tau ignores what is in flight
    paper = Rnf(
        RnfConfig(
            q_ref_bytes=20_000, feedback_period_s=10.0, smooth_rate=False, loop_delay="rtt", ts_s=TS, clock="acks"
        )
    )
    paper.update(AckSample(acked=0, interval_s=0.01, in_flight=100_000, min_rtt_s=0.03, srtt_s=0.2), now=0.0)
    paper.update(report(20_000, 1_000_000), now=0.0)
    assert paper.update(report(60_000, 1_500_000), now=0.01).limit == 1_500_000 * 0.03 + 20_000


# The RAN clock (the default): the window bounds what the eNB has not served, its queue and what is on its way to
# it, and each report releases the difference for the next period. tau is the loop from a release to the report
# that shows it: 30 ms here, three periods. Quotas are TCP payload, 1448 B of every 1500-byte packet the eNB counts.
RAN = CONFIG.model_copy(update={"clock": "ran", "q_ref_bytes": 20_000, "tau_s": 0.03})
PAYLOAD = 1448 / 1500


def test_the_ran_clock_releases_the_window_less_what_the_enb_holds_and_what_is_on_its_way():
    rnf = Rnf(RAN)
    first = rnf.update(report(0, 1_000_000), now=0.0)
    # w = 1e6 x 0.03 + 20000 = 50000 B, nothing queued or on its way: all of it, as payload
    assert first.mode is Mode.QUOTA and first.step_s == TS
    assert first.limit == round(50_000 * PAYLOAD)
    # 10000 B arrived and were served: 40000 B are still on their way, 5 % toward the loop's two quotas (50000)
    second = rnf.update(report(0, 1_000_000), now=TS)
    assert second.limit == round((50_000 - (0.95 * 40_000 + 0.05 * 50_000)) * PAYLOAD)  # 9500 B of packets
    # 25000 B arrived (15000 queued, 10000 served): 40500 + 9500 - 25000 on their way, 5 % toward 9500 + 50000
    third = rnf.update(report(15_000, 1_000_000), now=2 * TS)
    on_the_way = 0.95 * 25_000 + 0.05 * 59_500
    assert third.limit == round((50_000 - 15_000 - on_the_way) * PAYLOAD)


def test_a_quota_the_connections_had_no_data_for_is_not_counted_on_its_way():
    rnf = Rnf(RAN)
    rnf.update(report(0, 1_000_000), now=0.0)
    # the proxy released nothing of it (the server had sent nothing yet): the whole window again
    idle = RanSample(queue=0, served=0, period_s=TS, released=0)
    assert rnf.update(idle, now=TS).limit == round(50_000 * PAYLOAD)


def test_the_ran_clock_releases_nothing_in_an_outage_and_resumes_with_what_is_still_unserved():
    rnf = Rnf(RAN)
    rnf.update(report(0, 1_000_000), now=0.0)
    # 30000 B arrived and nothing was served: 20000 B still on their way (21500 with the lean toward 50000)
    assert rnf.update(report(30_000, 0, outage=True), now=TS).limit == 0
    # back: 10000 B more arrived; on the way 21500 - 10000, leaning toward the quotas 0 and 50000
    on_the_way = 0.95 * 11_500 + 0.05 * 50_000
    assert rnf.update(report(30_000, 1_000_000), now=2 * TS).limit == round((50_000 - 30_000 - on_the_way) * PAYLOAD)


def test_the_ran_clocks_start_up_loop_is_the_first_releases_not_the_rtts():
    # the RAN clock's tau is its loop in periods; before the forecast margin is warm q_ref is tau x the rate.
    # The RTT says 41 ms, 4 periods; the proxy released 30000 B for step 1 (counted with step 2's report) and
    # step 3's report shows 25000 B arrived (20000 served, 5000 queued): a loop of 2 periods, 20 ms.
    def start(released: float) -> float:
        rnf = Rnf(RnfConfig(clock="ran", smooth_rate=False, ts_s=TS))
        rnf.update(AckSample(acked=0, interval_s=TS, in_flight=0, min_rtt_s=0.041, srtt_s=0.041), now=0.0)
        rnf.update(RanSample(queue=0, served=0, period_s=TS, released=0), now=TS)
        rnf.update(RanSample(queue=0, served=0, period_s=TS, released=released), now=2 * TS)
        rnf.update(RanSample(queue=5_000, served=20_000, period_s=TS, released=0), now=3 * TS)
        return rnf.state()

    timed = start(30_000)
    assert timed.q0 == pytest.approx(0.02 * 2_000_000)  # 2 MB/s served for 20 ms
    assert timed.in_flight_steps == 1  # recorded: one quota of the 2-period loop on its way
    untimed = start(float("nan"))
    assert untimed.q0 == pytest.approx(0.04 * 2_000_000)  # not counted: the RTT's 4 periods
    assert untimed.in_flight_steps == 3
    acks = Rnf(CONFIG)
    acks.update(report(0, 1_000_000), now=0.0)
    assert acks.state().in_flight_steps is None  # the ACK clock counts no quotas


def test_the_ran_clock_keeps_the_window_and_the_sockets_under_the_reported_limit():
    rnf = Rnf(RAN.model_copy(update={"overflow_guard": True}))
    # w = 2.5e6 x 0.03 + 20000 = 95000 > 100000 less 0.04 x 100000 + 3000 = 93000
    decision = rnf.update(report(0, 2_500_000, limit=100_000), now=0.0)
    assert decision.limit == round(93_000 * PAYLOAD) and decision.cap == 93_000


def test_the_window_does_not_grow_while_the_ue_waits_for_its_first_release():
    # A UE's handshake waits 4 s in a gap of its link: its SYN-ACK sits in the queue, nothing is served, and the
    # proxy releases nothing, for the connection is not up. The queue is far under q_ref all along, and eq. (2)
    # used to add the difference at every feedback: the window grew to the guard's cap, 285 kB of a 300 kB queue,
    # by the time the link came back (Mahimahi's TMobile-UMTS-driving from 128.6 s, 2026-11-29). Nothing the window
    # allowed could leave meanwhile, so the queue's shortfall said nothing of it.
    rnf = Rnf(RnfConfig(ts_s=TS))
    windows = []
    for k in range(1, 401):
        waiting = RanSample(queue=60, served=0, period_s=TS, queue_limit=300_000, released=0)
        rnf.update(waiting, now=k * TS)
        windows.append(rnf.state().w)
    assert max(windows) == 14_480  # the start-up's reference, 10 segments, as it was


def test_the_margin_counts_the_errors_of_the_rate_the_window_counts_on_from_the_feed_forward():
    # tau 25 ms: each forecast is checked over 3 periods. 60 periods serve 1000 B each, then 4 serve 4000 B: the
    # rate changes (by 300 %), and from that report on the window counts on 4000 B per period (eq. 1). The loops
    # that began before it served 3000, 6000 and 9000 B beyond the 3000 B counted on; the one that began with it
    # served what it counted on. 60 errors: the 98th percentile is the ceil(0.02 x 60) = 2nd largest, 6000 B.
    # (Checked against the rate before the feed-forward, the loop that began with it erred by 9000 B too, and so
    # did q_ref.)
    rnf = Rnf(RnfConfig(tau_s=0.025, smooth_rate=False, clock="acks", ts_s=TS))
    for k, served in enumerate([1_000] * 60 + [4_000] * 4):
        rnf.update(RanSample(queue=20_000, served=served, period_s=TS), now=k * TS)
    assert rnf.state().q0 == pytest.approx(6_000)
