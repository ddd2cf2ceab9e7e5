"""Clamped aggregate window (paper 004): 1.2 x BDP, estimated without RAN feedback, link-stall hold."""

import pytest
from rnf_proxy.clamp import Clamp, ClampConfig
from rnf_proxy.control import AckSample, Mode, RanSample


def ack(acked, interval=0.05, in_flight=50_000, min_rtt=0.05, srtt=0.05):
    return AckSample(acked=acked, interval_s=interval, in_flight=in_flight, min_rtt_s=min_rtt, srtt_s=srtt)


def test_static_bdp_is_clamped_twenty_percent_above_from_the_first_byte():
    clamp = Clamp(ClampConfig(bdp_bytes=100_000))
    decision = clamp.update(RanSample(queue=0, served=0, period_s=0.01), now=0.0)
    assert decision.mode is Mode.WINDOW and decision.limit == 120_000


def test_estimated_bdp_is_max_delivery_rate_times_min_rtt():
    clamp = Clamp()
    assert clamp.update(ack(0, in_flight=0), now=0.0).limit == round(1.2 * 64_000)
    clamp.update(ack(50_000), now=0.05)  # 1e6 B/s over one RTT
    clamp.update(ack(25_000), now=0.10)  # 0.5e6 B/s: the windowed max keeps 1e6
    decision = clamp.update(ack(25_000), now=0.15)
    assert decision.limit == round(1.2 * 1e6 * 0.05)


def test_rate_samples_cover_at_least_one_rtt():
    clamp = Clamp()
    clamp.update(ack(20_000, interval=0.01), now=0.01)  # 10 ms of a 50 ms RTT: no sample yet
    assert clamp.bdp() == 64_000
    for k in range(2, 6):
        clamp.update(ack(20_000, interval=0.01), now=k * 0.01)
    assert clamp.bdp() == pytest.approx(2e6 * 0.05)


def test_link_stall_holds_the_servers_and_the_first_ack_restores():
    clamp = Clamp(ClampConfig(bdp_bytes=100_000))
    clamp.update(ack(50_000), now=0.0)
    for k in range(1, 4):
        decision = clamp.update(ack(0, interval=0.05), now=k * 0.05)
    assert not decision.hold_wired  # 150 ms < max(0.2 s, 3 x 50 ms)
    decision = clamp.update(ack(0, interval=0.05), now=0.2)
    assert decision.hold_wired and decision.limit == 120_000
    decision = clamp.update(ack(1_000), now=0.25)
    assert not decision.hold_wired and decision.limit == 120_000
