"""RNF (paper 001 eqs. 1-2): feed-forward on rate changes, periodic queue feedback, outage freeze."""

import pytest
from rnf_proxy.control import Mode, RanSample, Tick
from rnf_proxy.rnf import Rnf, RnfConfig

TS = 0.01
CONFIG = RnfConfig(q_ref_bytes=50_000, tau_s=0.04, feedback_period_s=1.0, ts_s=TS)


def report(queue, rate, outage=False):
    return RanSample(queue=queue, served=round(rate * TS), period_s=TS, outage=outage)


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
    frozen = rnf.update(report(50_000, 0), now=2 * TS)  # nothing served while data waited
    assert frozen.limit == 100_000 and rnf.state().outage
    assert rnf.update(report(50_000, 1_250_000), now=3 * TS).limit == 100_000


def test_measured_min_rtt_is_tau_when_not_configured():
    from rnf_proxy.control import AckSample

    rnf = Rnf(RnfConfig(q_ref_bytes=50_000))
    rnf.update(AckSample(acked=0, interval_s=TS, in_flight=0, min_rtt_s=0.02, srtt_s=0.08), now=0.0)
    assert rnf.update(report(50_000, 1_000_000), now=TS).limit == 70_000  # 1e6 * 0.02 + 50000


def test_stale_telemetry_falls_back_to_the_ack_clocked_estimator():
    rnf = Rnf(CONFIG)
    rnf.update(report(50_000, 1_250_000), now=0.0)
    stale = rnf.update(Tick(), now=6 * TS)
    assert stale.mode is Mode.WINDOW and rnf.state().fallback
    assert rnf.update(report(50_000, 1_250_000), now=7 * TS).limit == 100_000  # the window it left
    assert rnf.state().fallback is False
