"""The latency suite's goal check on a hand-made summary."""

import math

from rnf_experiments.goals import markdown, verdicts


def arm(utilization, delay, drops=0, band=math.nan):
    return {"utilization": utilization, "delay_p95_ms": delay, "rlc_drops_sdus": drops, "band_fraction": band}


SUMMARY = {
    "scenario": "latency-x",
    "arms": {
        "smvs @ 4": arm(0.99, 40.0, band=0.98),  # 40/200 = 0.2 of BBR, 40/400 = 0.1 of CUBIC
        "rnf @ 4": arm(0.96, 40.0),  # utilization below 97 %
        "bbr @ 4": arm(0.97, 200.0),
        "cubic @ 4": arm(0.99, 400.0, drops=12),
        "smvs @ 0.4": arm(0.98, 120.0, drops=3),  # 120/200 = 0.6 of BBR, and drops
        "bbr @ 0.4": arm(0.97, 200.0),
        "cubic @ 0.4": arm(0.99, 400.0),
    },
}


def test_each_controller_is_compared_with_the_references_of_its_own_point():
    found = {(v.arm, v.point): v for v in verdicts(SUMMARY)}
    assert set(found) == {("smvs", "4"), ("rnf", "4"), ("smvs", "0.4")}
    assert found["smvs", "4"].vs_bbr == 0.2 and found["smvs", "4"].vs_cubic == 0.1 and found["smvs", "4"].met
    assert not found["rnf", "4"].met  # 96 % < 97 %
    assert found["smvs", "0.4"].vs_bbr == 0.6 and not found["smvs", "0.4"].met


def test_the_table_marks_the_verdicts():
    table = markdown("latency-x", SUMMARY)
    assert "| **smvs @ 4** | 99.0 | 40.0 | 0.20 | 0.10 | 0 | 98.0 | met |" in table
    assert "| **smvs @ 0.4** | 98.0 | 120.0 | 0.60 | 0.30 | 3 | - | missed |" in table
    assert "| cubic @ 4 | 99.0 | 400.0 | | | 12 | - | |" in table
