"""SMVS (paper 000 eq. 36) against hand-computed steps."""

import random

import pytest
from rnf_proxy.control import AckSample, Mode, RanSample, Tick
from rnf_proxy.feedback import step_many
from rnf_proxy.smvs import Smvs, SmvsBank, SmvsConfig, SmvsParams, resolve

TS = 0.01
# delta*Ts = 0.5, eps*Ts = 1000 B, band = 1000 / 0.5 = 2000 B; alpha = 0.5 keeps the arithmetic short.
HAND = SmvsConfig(ts_s=TS, q0_bytes=10_000, b_max_bytes=20_000, delta=50, eps=100_000, alpha=0.5, d=1)


def report(queue, served, outage=False, limit=0):
    return RanSample(queue=queue, served=served, period_s=TS, outage=outage, queue_limit=limit)


def test_three_steps_match_the_hand_computation():
    smvs = Smvs(HAND)
    # k=1: b = 0, b_bar = 0, eta = 0; S = 0 - 10000 - 0 + 0 = -10000
    # w = (0 + 0 - 0.5*(-10000) - (0 + 1000)*sgn(-10000)) = 5000 + 1000 = 6000
    first = smvs.update(report(0, 0), now=0.0)
    assert first.mode is Mode.QUOTA and first.limit == 6000 and first.step_s == TS
    assert smvs.state().s == pytest.approx(-10_000)
    # k=2: b = 200000, b_bar = 100000, eta = 1000; eta_l = 0, eta_u = 1000 -> eta_1 = eta_2 = 500
    # S = 4000 - 10000 - 2*1*100000*0.01 + 6000 = -2000
    # w = 1000 + 500 - 0.5*(-2000) - (500 + 1000)*(-1) = 4000
    second = smvs.update(report(4_000, 2_000), now=TS)
    assert smvs.state().b_bar == pytest.approx(100_000)
    assert smvs.state().s == pytest.approx(-2_000)
    assert second.limit == 4000
    # k=3: b = 300000, b_bar = 200000, eta = 1000; S = 9000 - 10000 - 4000 + (6000 + 4000) = 5000
    # w = 2000 + 500 - 0.5*5000 - 1500 = -1500, clipped to 0
    third = smvs.update(report(9_000, 3_000), now=2 * TS)
    state = smvs.state()
    assert state.s == pytest.approx(5_000)
    assert third.limit == 0 and state.w == 0
    assert state.band == pytest.approx(2_000)
    assert state.in_band is True  # |9000 - 10000| < 2000
    assert [first.step, second.step, third.step] == [1, 2, 3]


def test_band_is_computed_from_the_formula_not_copied_from_the_paper():
    paper = SmvsParams(ts=0.025, q0=100, b_max=200, delta=35, eps=20, alpha=0.85, gamma=13, d=1, horizon=40)
    assert paper.band == pytest.approx(4.0)  # the paper prints 40
    section_5_2 = SmvsParams(ts=0.2, q0=100, b_max=200, delta=4, eps=20, alpha=0.85, gamma=13, d=1, horizon=5)
    assert section_5_2.band == pytest.approx(20.0)


def test_defaults_follow_the_paper_rules_from_the_reported_queue_limit():
    assert resolve(SmvsConfig()) is None  # B_max is needed and unknown until telemetry reports it
    params = resolve(SmvsConfig(), reported_b_max=300_000)
    assert params.q0 == 150_000  # B_max / 2
    assert params.delta * params.ts == pytest.approx(0.875)
    assert params.band == pytest.approx(75_000)  # half of min(q0, B_max - q0)
    assert params.horizon == 100  # 1 s of 10 ms steps


def test_queue_limit_from_telemetry_starts_control_with_default_parameters():
    smvs = Smvs(SmvsConfig())
    assert smvs.update(report(0, 0), now=0.0).mode is Mode.WINDOW  # no B_max yet: the fallback
    decision = smvs.update(report(0, 0, limit=300_000), now=TS)
    assert decision.mode is Mode.QUOTA
    assert smvs.state().q0 == 150_000 and smvs.bank.params(smvs.row).b_max == 300_000


def test_outage_freezes_the_average_and_releases_nothing_then_resumes_at_once():
    smvs = Smvs(HAND)
    for k in range(20):
        smvs.update(report(10_000, 2_000), now=k * TS)
    bank, row = smvs.bank, smvs.row
    b_bar, etas = bank.b_bar[row], (bank.eta_low[row].copy(), bank.eta_high[row].copy())
    outage = smvs.update(report(10_000, 0, outage=True), now=20 * TS)
    assert outage.limit == 0 and smvs.state().outage
    assert bank.b_bar[row] == b_bar
    assert (bank.eta_low[row] == etas[0]).all() and (bank.eta_high[row] == etas[1]).all()
    # no flag, but nothing served for a whole period while data waited: an outage too
    silent = smvs.update(report(10_000, 0), now=21 * TS)
    assert silent.limit == 0 and smvs.state().outage and bank.b_bar[row] == b_bar
    resumed = smvs.update(report(10_000, 2_000), now=22 * TS)
    assert not smvs.state().outage
    # the two outage steps released nothing: S = 0 - 2*b_bar*Ts + (0 + 0) = -4000 with b_bar = 200000,
    # so the quota jumps above b_bar*Ts at once
    assert smvs.state().s == pytest.approx(-4_000, abs=1)
    assert resumed.limit > 2_000


def test_idle_link_with_an_empty_queue_is_not_an_outage():
    smvs = Smvs(HAND)
    smvs.update(report(0, 0), now=0.0)
    smvs.update(report(0, 0), now=TS)
    assert not smvs.state().outage


def test_eta_bounds_use_the_horizon_only():
    smvs = Smvs(HAND.model_copy(update={"eta_horizon_s": 2 * TS}))
    bank, row = smvs.bank, smvs.row
    smvs.update(report(0, 0), now=0.0)
    smvs.update(report(0, 5_000), now=TS)  # b_bar = 250000, eta = (500000 - 250000) * Ts = 2500
    assert bank.eta_high[row].max() == pytest.approx(2_500)
    smvs.update(report(0, 2_500), now=2 * TS)  # eta = 0
    smvs.update(report(0, 2_500), now=3 * TS)  # eta = 0: the 2500 has left the two-step horizon
    assert bank.blocks == 2 and bank.eta_high[row].max() == pytest.approx(0)


def test_a_long_horizon_forgets_by_blocks():
    smvs = Smvs(HAND.model_copy(update={"eta_horizon_s": 100 * TS}))  # 100 steps in 10 blocks of 10
    bank, row = smvs.bank, smvs.row
    smvs.update(report(0, 0), now=0.0)
    smvs.update(report(0, 5_000), now=TS)  # a large eta in step 2 (block 0)
    for k in range(2, 100):
        smvs.update(report(0, 2_500), now=k * TS)
    assert bank.eta_high[row].max() > 1_000  # 99 steps later: still within the horizon
    for k in range(100, 110):
        smvs.update(report(0, 2_500), now=k * TS)
    assert bank.eta_high[row].max() < 1_000  # block 0 was reused: forgotten


def test_d_comes_from_half_the_minimum_rtt_when_not_configured():
    smvs = Smvs(HAND.model_copy(update={"d": None}))
    smvs.update(report(0, 0), now=0.0)
    assert smvs.d == 1  # the paper's value until an RTT is known
    smvs.update(AckSample(acked=0, interval_s=TS, in_flight=0, min_rtt_s=0.025, srtt_s=0.03), now=TS)
    smvs.update(report(0, 0), now=2 * TS)
    assert smvs.d == 2  # ceil(0.0125 / 0.01)


def test_stale_telemetry_hands_the_ue_to_the_ack_clocked_fallback_and_back():
    smvs = Smvs(HAND)
    for k in range(10):
        smvs.update(report(10_000, 2_000), now=k * TS)
        smvs.update(AckSample(acked=2_000, interval_s=TS, in_flight=20_000, min_rtt_s=0.04, srtt_s=0.05), now=k * TS)
    assert smvs.update(Tick(), now=9 * TS + 4.9 * TS).mode is Mode.QUOTA  # within 5 periods: fresh
    stale = smvs.update(Tick(), now=9 * TS + 5.5 * TS)
    assert stale.mode is Mode.WINDOW and smvs.state().fallback
    assert stale.limit == pytest.approx(200_000 * 0.04, rel=0.01)  # estimate x minimum RTT
    back = smvs.update(report(10_000, 2_000), now=0.2)
    assert back.mode is Mode.QUOTA and not smvs.state().fallback
    # the w history restarts at b_bar*Ts per step: S = 10000 - 10000 - 2*2000 + 2*2000 = 0
    assert smvs.state().s == pytest.approx(0, abs=1)


def test_a_burst_of_many_ues_steps_exactly_as_each_ue_alone():
    rng = random.Random(7)
    bank = SmvsBank(HAND)
    together = [Smvs(bank=bank) for _ in range(50)]
    alone = [Smvs(HAND) for _ in range(50)]
    for k in range(30):
        samples = [
            report(rng.randrange(0, 20_000), rng.randrange(0, 4_000), outage=rng.random() < 0.05) for _ in range(50)
        ]
        # a UE twice in one burst (a late message) is stepped twice, in order
        burst = [*together, together[3]]
        decisions = step_many(burst, [*samples, samples[3]], now=k * TS)
        expected = [c.update(s, now=k * TS) for c, s in zip(alone, samples, strict=True)]
        expected[3] = alone[3].update(samples[3], now=k * TS)
        assert decisions[:3] + decisions[4:50] == expected[:3] + expected[4:]
        assert decisions[50] == expected[3]
