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
    # at rank 9 x q / 100 between the sorted values: the 25th at 2.25 (10 + 0.25 x 10), the 50th at 4.5, the 90th
    # at 8.1 (70 + 0.1 x 10)
    assert metrics.percentiles(queue, (25, 50, 90)) == pytest.approx([12.5, 35.0, 71.0])
    assert all(math.isnan(value) for value in metrics.percentiles([], (50, 95)))


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


def test_a_delay_target_asks_for_target_times_the_served_rate():
    # 10 ms periods: 7500 B served is 750 kB/s, so 20 ms of it is 15000 B; 2500 B is 5000 B; nothing served, 0
    assert metrics.delay_reference([7500, 2500, 0], 0.01, 0.02).tolist() == pytest.approx([15_000, 5_000, 0])


def test_the_margin_band_is_half_the_nearer_of_empty_and_full():
    # limit 100 kB: q0 15 kB is nearer empty (band 7.5 kB), q0 80 kB nearer full (band 10 kB); no limit: half q0
    assert metrics.margin_band([15_000, 80_000], 100_000).tolist() == [7_500, 10_000]
    assert metrics.margin_band([15_000], math.nan).tolist() == [7_500]
    # never under two full-size packets: a 4000 B reference is held within 3000 B, not 2000 B
    assert metrics.margin_band([4_000], 100_000).tolist() == [3_000]


def test_edges_a_single_byte_a_zero_length_transfer_and_zero_throughputs():
    # one byte of capacity is a period offered, however little: not an outage, not "no capacity"
    assert metrics.utilization([1], [1]) == 1.0
    assert metrics.sojourn_ms([10], [1], 0.01).tolist() == [100.0]
    # a transfer that ended when it started has no rate; exact arithmetic otherwise (8e6 bit over 2 s)
    assert math.isnan(metrics.goodput_bps(1000, 5, 5))
    assert metrics.goodput_bps(1_000_000, 0, 2_000_000_000) == 4e6
    # nobody got anything: no fairness to speak of; small equal rates are perfectly fair
    assert math.isnan(metrics.jain_fairness([0.0, 0.0]))
    assert metrics.jain_fairness([0.5, 0.5]) == 1.0
