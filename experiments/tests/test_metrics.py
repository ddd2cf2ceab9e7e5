"""Each metric on a small fixture with a hand-computed answer."""

import math

import pytest
from rnf_experiments import metrics


def test_utilization_is_delivered_over_capacity():
    assert metrics.utilization([100, 50, 0], [100, 100, 50]) == pytest.approx(0.6)
    assert math.isnan(metrics.utilization([0], [0]))


def test_queue_percentiles_and_empty_fraction():
    queue = [0, 0, 10, 20, 30, 40, 50, 60, 70, 80]
    assert metrics.percentile(queue, 50) == pytest.approx(35.0)
    assert metrics.empty_fraction(queue) == pytest.approx(0.2)
    assert math.isnan(metrics.percentile([], 95))


def test_goodput():
    assert metrics.goodput_bps(1_000_000, 0, 2_000_000_000) == pytest.approx(4e6)


def test_jain_fairness_bounds():
    assert metrics.jain_fairness([5, 5, 5, 5]) == pytest.approx(1.0)
    assert metrics.jain_fairness([8, 0, 0, 0]) == pytest.approx(0.25)
    assert metrics.jain_fairness([3, 1]) == pytest.approx(16 / 20)


def test_band_membership_and_fraction_after_reaching():
    # q0 = 100, band 10: 50 and 80 are outside (reaching), then 95 in, 120 out, 105 in, 100 in
    inside = metrics.band_membership([50, 80, 95, 120, 105, 100], [100] * 6, [10] * 6)
    assert inside.tolist() == [False, False, True, False, True, True]
    assert metrics.band_fraction(inside) == pytest.approx(3 / 4)  # counted from the first step inside
    assert math.isnan(metrics.band_fraction([False, False]))


def test_band_membership_is_false_without_a_reference():
    assert metrics.band_membership([100], [math.nan], [10]).tolist() == [False]


def test_settling_time_is_first_entry_into_the_band():
    assert metrics.settling_time_s([10.0, 10.5, 11.25, 12.0], [False, False, True, False], 10.0) == pytest.approx(1.25)
    assert math.isnan(metrics.settling_time_s([1.0], [False], 0.0))


def test_sojourn_is_the_queue_over_the_offered_rate_and_skips_outages():
    # 10 ms periods: 30000 B at 7500 B per period drains in 40 ms; 0 B in 0 ms; an outage period is left out
    sojourn = metrics.sojourn_ms([30_000, 0, 5_000, 12_500], [7_500, 7_500, 0, 25_000], 0.01)
    assert sojourn.tolist() == pytest.approx([40.0, 0.0, 5.0])
