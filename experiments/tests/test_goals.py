"""The latency suite's goal check on a hand-made summary."""

import json
import math

from rnf_experiments.goals import main, markdown, verdicts


def arm(utilization, delay, drops=0, band=math.nan):
    return {"utilization": utilization, "delay_p95_ms": delay, "rlc_drops_sdus": drops, "band_fraction": band}


# every point has references of its own; each controller arm but smvs @ 4 misses exactly one goal
SUMMARY = {
    "scenario": "latency-x",
    "arms": {
        "smvs @ 4": arm(0.99, 40.0, band=0.98),  # 40/200 = 0.2 of BBR, 40/400 = 0.1 of CUBIC: met
        "rnf @ 4": arm(0.96, 40.0),  # utilization below 97 %
        "bbr @ 4": arm(0.97, 200.0),
        "cubic @ 4": arm(0.99, 400.0, drops=12),
        "smvs @ 0.4": arm(0.98, 120.0, drops=3),  # 120/300 = 0.4 of BBR, 120/600 = 0.2 of CUBIC, but drops
        "bbr @ 0.4": arm(0.97, 300.0),
        "cubic @ 0.4": arm(0.99, 600.0),
        "smvs @ 1": arm(0.98, 60.0),  # 60/100 = 0.6 of BBR, 60/1000 = 0.06 of CUBIC
        "bbr @ 1": arm(0.97, 100.0),
        "cubic @ 1": arm(0.99, 1000.0),
        "smvs @ 2": arm(0.98, 60.0),  # 60/1000 = 0.06 of BBR, 60/200 = 0.3 of CUBIC
        "bbr @ 2": arm(0.97, 1000.0),
        "cubic @ 2": arm(0.99, 200.0),
    },
}


def test_each_controller_is_compared_with_the_references_of_its_own_point():
    found = {(v.arm, v.point): v for v in verdicts(SUMMARY)}
    assert set(found) == {("smvs", "4"), ("rnf", "4"), ("smvs", "0.4"), ("smvs", "1"), ("smvs", "2")}
    assert found["smvs", "4"].vs_bbr == 0.2 and found["smvs", "4"].vs_cubic == 0.1 and found["smvs", "4"].met
    assert found["smvs", "0.4"].vs_bbr == 0.4 and found["smvs", "0.4"].vs_cubic == 0.2
    assert (found["smvs", "1"].vs_bbr, found["smvs", "1"].vs_cubic) == (0.6, 0.06)
    assert (found["smvs", "2"].vs_bbr, found["smvs", "2"].vs_cubic) == (0.06, 0.3)


def test_each_goal_alone_makes_a_miss():
    found = {(v.arm, v.point): v.met for v in verdicts(SUMMARY)}
    assert found == {
        ("smvs", "4"): True,
        ("rnf", "4"): False,  # 96 % < 97 %
        ("smvs", "0.4"): False,  # 3 RLC drops
        ("smvs", "1"): False,  # 0.6 > 0.5 of BBR's delay
        ("smvs", "2"): False,  # 0.3 > 0.25 of CUBIC's delay
    }


def test_the_table_marks_the_verdicts():
    table = markdown("latency-x", SUMMARY)
    assert "| **smvs @ 4** | 99.0 | 40.0 | 0.20 | 0.10 | 0 | 98.0 | met |" in table
    assert "| **smvs @ 0.4** | 98.0 | 120.0 | 0.40 | 0.20 | 3 | - | missed |" in table
    assert "| cubic @ 4 | 99.0 | 400.0 | | | 12 | - | |" in table


def test_a_folder_without_a_summary_is_named_and_left_out_and_the_others_are_printed(tmp_path, capsys):
    finished, running, broken = tmp_path / "finished", tmp_path / "running", tmp_path / "broken"
    edited = tmp_path / "edited"
    for folder in (finished, running, broken, edited):
        folder.mkdir()
    (finished / "summary.json").write_text(json.dumps(SUMMARY))
    (broken / "summary.json").write_text('{"scenario": ')
    by_hand = json.loads(json.dumps(SUMMARY))
    by_hand["arms"]["smvs @ 4"]["utilization"] = "99 %"
    (edited / "summary.json").write_text(json.dumps(by_hand))
    status = main([str(running), str(finished), str(broken), str(edited)])
    out, err = capsys.readouterr()
    assert status == 1
    assert "| **smvs @ 4** |" in out
    assert err.splitlines() == [
        f"goals: {running / 'summary.json'}: no such file (a run still going, or one that failed): left out",
        f"goals: {broken / 'summary.json'}: not valid JSON: Expecting value: line 1 column 14 (char 13): left out",
        f"goals: {edited / 'summary.json'}: arms.smvs @ 4.utilization: Input should be a valid number: left out",
    ]
    assert main([str(finished)]) == 0
