"""The time plots' resource-block panel: each UE's share of the cell summed over a window of periods; each
transfer's rate in steps from its progress reports; the delay's distribution drawn from summary.json's
percentiles."""

import math

import numpy as np
import pytest
from rnf_experiments.plots import delay_cdf, rolling_share, transfer_rate


def test_the_share_sums_grants_and_capacity_over_the_last_periods():
    granted = np.array([250, 0, 100, 225, 0])
    capacity = np.array([250, 250, 250, 225, 0])
    share = rolling_share(granted, capacity, periods=2)
    # (250) / 250; (250 + 0) / 500; (0 + 100) / 500; (100 + 225) / 475; (225 + 0) / 225
    assert share.tolist() == pytest.approx([1.0, 0.5, 0.2, 325 / 475, 1.0])


def test_no_capacity_is_no_share():
    assert math.isnan(rolling_share(np.array([0, 0]), np.array([0, 0]), periods=2)[1])


def test_a_transfers_rate_in_steps_from_its_start_to_its_last_byte():
    # 125 kB by 100 ms, nothing more by 200 ms, the other 125 kB by its last byte at 250 ms
    ms = 1_000_000
    flow = {"start_ns": 0, "last_byte_ns": 250 * ms, "received_bytes": 250_000}
    flow["progress"] = [[100 * ms, 125_000], [200 * ms, 125_000]]
    edges, rates = transfer_rate(flow, 100 * ms)
    assert (edges / ms).tolist() == [0, 100, 200, 250]
    assert rates.tolist() == pytest.approx([10.0, 0.0, 20.0])  # 1e6 bit in 0.1 s; nothing; 1e6 bit in 0.05 s


def test_the_delay_distribution_is_drawn_for_every_run_even_one_without_delays(tmp_path):
    def run(arm, scale):
        return {"arm": arm, "delay_percentiles_ms": [scale * q for q in range(1, 100)]}

    bare = {"arm": "cubic", "delay_percentiles_ms": [math.nan] * 99}  # no packet records: nothing to draw
    path = tmp_path / "delay-cdf.png"
    delay_cdf([run("smvs", 1.0), run("smvs", 1.1), run("bbr", 3.0), bare], path, title="a scenario")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_delay_distribution_of_runs_without_any_delay_is_an_empty_plot(tmp_path):
    path = tmp_path / "delay-cdf.png"
    delay_cdf([{"arm": "cubic", "delay_percentiles_ms": [math.nan] * 99}], path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
