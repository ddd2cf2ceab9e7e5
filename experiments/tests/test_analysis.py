"""Reading runs back: which periods count as busy, and how runs are grouped into arms and sweep values."""

import math

import numpy as np
from rnf_experiments import analysis


def test_busy_is_the_union_of_transfers_from_start_to_last_byte():
    flows = [
        {"start_ns": 0, "last_byte_ns": 30},
        {"start_ns": 50, "last_byte_ns": 70},  # a second page after a think time of 20 ns
        {"start_ns": 60, "last_byte_ns": 0},  # never received a byte: not busy on its own
    ]
    times = np.array([0, 10, 30, 40, 50, 60, 70, 80])
    assert analysis.busy(flows, times).tolist() == [False, True, True, False, False, True, True, False]


def test_aggregate_groups_repetitions_by_arm_and_sweep_value():
    runs = [
        {"arm": "smvs", "repetition": 0, "sweep_value": 0.2, "sweep_index": 0, "utilization": 0.9, "ttsu_s": math.nan},
        {"arm": "smvs", "repetition": 1, "sweep_value": 0.2, "sweep_index": 0, "utilization": 1.0, "ttsu_s": 2.0},
        {"arm": "smvs", "repetition": 0, "sweep_value": 2.0, "sweep_index": 1, "utilization": 0.8, "ttsu_s": math.nan},
    ]
    groups = analysis.aggregate(runs)
    assert set(groups) == {"smvs @ 0.2", "smvs @ 2.0"}
    assert groups["smvs @ 0.2"]["utilization"] == 0.95 and groups["smvs @ 0.2"]["ttsu_s"] == 2.0
    assert groups["smvs @ 0.2"]["repetitions"] == 2 and groups["smvs @ 2.0"]["sweep_value"] == 2.0
