"""Adaptive EWMA (paper 002 eqs. 1-8) against hand-computed values."""

import pytest
from rnf_proxy.control import AckSample, Mode
from rnf_proxy.ewma import Ewma


def ack(acked, interval=0.01, limited=False, retransmits=0, timeouts=0, min_rtt=0.05):
    return AckSample(
        acked=acked,
        interval_s=interval,
        in_flight=acked,
        min_rtt_s=min_rtt,
        srtt_s=min_rtt,
        retransmits=retransmits,
        timeouts=timeouts,
        window_limited=limited,
        mss=1448,
    )


def test_filter_weight_is_the_ratio_of_sample_and_estimate():
    ewma = Ewma()
    ewma.observe(ack(10_000))  # first sample: 1e6 B/s
    assert ewma.estimate == pytest.approx(1e6)
    ewma.observe(ack(20_000))  # sample 2e6: alpha = 0.5, est = 0.5e6 + 1e6
    assert ewma.estimate == pytest.approx(1.5e6)
    ewma.observe(ack(7_500))  # sample 0.75e6: alpha = 0.5, est = 0.75e6 + 0.375e6
    assert ewma.estimate == pytest.approx(1.125e6)


def test_an_interval_without_acks_lengthens_the_next_sample():
    ewma = Ewma()
    ewma.observe(ack(0))
    ewma.observe(ack(10_000))  # 10000 B over the 20 ms since the previous ACK
    assert ewma.estimate == pytest.approx(5e5)


def test_fast_retransmit_clamps_to_estimate_times_min_rtt_and_timeout_drops_to_one_segment():
    ewma = Ewma()
    ewma.update(ack(10_000, limited=True), now=0.0)  # est 1e6; slow start: w = 10*1448 + 10000
    assert ewma.window == 24_480
    ewma.window = 80_000
    decision = ewma.update(ack(10_000, retransmits=1), now=0.01)
    assert ewma.ssthresh == pytest.approx(1e6 * 0.05)  # eq. (5) in bytes
    assert decision.mode is Mode.WINDOW and decision.limit == 50_000  # eq. (6)
    ewma.update(ack(10_000, timeouts=1), now=0.02)
    assert ewma.window == 1448  # eq. (8): one segment


def test_congestion_avoidance_above_ssthresh_and_no_growth_when_not_window_limited():
    ewma = Ewma()
    ewma.ssthresh = 10_000
    ewma.update(ack(10_000, limited=True), now=0.0)
    assert ewma.window == pytest.approx(14_480 + 1448 * 10_000 / 14_480)  # MSS * acked / cwnd
    before = ewma.window
    ewma.update(ack(10_000, limited=False), now=0.01)
    assert ewma.window == before


def test_resume_starts_from_the_estimated_bdp():
    ewma = Ewma()
    ewma.observe(ack(10_000))
    ewma.resume()
    assert ewma.window == pytest.approx(1e6 * 0.05) and ewma.ssthresh == ewma.window
