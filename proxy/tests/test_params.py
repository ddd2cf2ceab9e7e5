"""Parameter rules (43) and Sec. 5.2 on the paper's own examples."""

import math

import pytest
from rnf_proxy.params import check, describe
from rnf_proxy.smvs import SmvsParams


def params(**changes):
    base = {"ts": 0.025, "q0": 100.0, "b_max": 200.0, "delta": 35.0, "eps": 20.0, "alpha": 0.85, "gamma": 13.0}
    return SmvsParams(**{**base, **changes, "d": 1, "horizon": 40})


def verdicts(report):
    return {rule.name.split(" (")[0]: rule.holds for rule in report.rules}


def test_section_5_settings_pass_every_rule():
    report = check(params(), b_bar=1_160, t_b=1.0)
    assert report.ok and report.band == 4.0
    assert all(rule.holds for rule in report.rules)


def test_section_5_2_sampling_period_breaks_the_drain_rule_only():
    # Ts = 0.2 > B_max/b_bar = 200/1160 = 0.17: the paper measured 23.76 % utilization
    report = check(params(ts=0.2, delta=4.0), b_bar=1_160)
    assert report.band == pytest.approx(20.0)
    result = verdicts(report)
    assert result["band < min(q0, B_max - q0)"] is True
    assert result["Ts < B_max/b_bar"] is False
    assert not report.ok


def test_band_wider_than_the_margin_and_fast_reaching_law_are_broken():
    assert verdicts(check(params(eps=1000.0)))["band < min(q0, B_max - q0)"] is False
    assert verdicts(check(params(delta=40.0)))["delta*Ts < 1"] is False


def test_missing_inputs_are_not_checked_rather_than_passed():
    report = check(params(b_max=None))
    assert verdicts(report)["band < min(q0, B_max - q0)"] is None
    assert report.ok
    assert any("predicted band" in line for line in describe(report))


def delay_target(target_s, eps=math.nan):
    return SmvsParams(
        ts=0.01,
        q0=math.nan,
        b_max=300_000.0,
        delta=87.5,
        eps=eps,
        alpha=0.85,
        gamma=1.0,
        d=None,
        horizon=100,
        target_s=target_s,
    )


def test_a_delay_target_is_checked_at_the_given_rate_in_bytes():
    # 20 ms of 2.5 MB/s: q0 = 50000 B; the default eps keeps the band at half of min(q0, B_max - q0) = 25000 B
    report = check(delay_target(0.02), b_bar=2_500_000)
    assert report.q0 == pytest.approx(50_000) and report.band == pytest.approx(25_000)
    assert report.ok
    # by default, before the forecast margin is known, the reference is the loop delay: 30 ms of 2.5 MB/s
    assert check(delay_target(0.0), b_bar=2_500_000, loop_s=0.03).q0 == pytest.approx(75_000)
    # the drain rule in the same units: Ts = 0.01 s against B_max/b_bar = 300000 / 2.5e6 = 0.12 s
    assert verdicts(report)["Ts < B_max/b_bar"] is True


def test_a_fixed_eps_can_break_rule_43_at_a_low_rate():
    # eps*Ts/(1 - delta*Ts) = 1e6 x 0.01 / 0.125 = 80000 B against 20 ms of 1 MB/s = 20000 B
    report = check(delay_target(0.02, eps=1_000_000), b_bar=1_000_000)
    assert verdicts(report)["band < min(q0, B_max - q0)"] is False
