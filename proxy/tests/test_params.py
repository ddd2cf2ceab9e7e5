"""Parameter rules (43) and Sec. 5.2 on the paper's own examples."""

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
