"""One short real run: a virtual cell, real TCP, an end-to-end arm and a proxy arm, into a results folder."""

import json
import uuid
from pathlib import Path

import pytest
from rnf_experiments import report
from rnf_experiments.lineprotocol import read
from rnf_experiments.runner import run_scenario
from rnf_experiments.scenario import load_scenario

pytestmark = pytest.mark.root
SCENARIOS = Path(__file__).parents[1] / "scenarios"


def test_short_run_writes_a_complete_results_folder(tmp_path):
    prefix = "r" + uuid.uuid4().hex[:6]
    overrides = [
        "duration_s=4",
        "repetitions=1",
        f"cell.namespace_prefix='{prefix}'",
        "cell.telemetry.endpoint='tcp://127.0.0.1:5571'",
        "arms=[{name='cubic'}, {name='smvs', kind='proxy', controller={kind='smvs'}}]",
        "traffic=[{kind='bulk'}, {kind='upload', bytes=300000, start_s=1}, "
        "{kind='web', objects_bytes=[51500, 120000], parallel=2, start_s=0.5}]",
    ]
    scenario, raw = load_scenario(SCENARIOS / "proxy-smoke.toml", overrides)
    results = run_scenario(scenario, raw, overrides, tmp_path)
    summary = report.summarize_results(results)

    metadata = json.loads((results / "metadata.json").read_text())
    assert metadata["overrides"] == overrides and metadata["git_commit"]
    assert set(summary["arms"]) == {"cubic", "smvs"}
    for arm in ("cubic", "smvs"):
        values = summary["arms"][arm]
        assert 0.5 < values["utilization"] <= 1.0
        assert values["goodput_mbps"] > 1 and values["flows"] == 3 and values["flows_complete"] == 3
        assert values["ttsu_s"] > 0  # the upload and the web page: fixed sizes that completed
    # the controller never overflows the queue it is told about (the cell counts the drops)
    assert summary["arms"]["smvs"]["rlc_drops_sdus"] == 0
    assert all((results / "plots" / name).stat().st_size > 0 for name in ("throughput-delay.png", "delay-cdf.png"))
    kinds = {t["kind"]: t for t in summary["runs"][0]["transfers"]}
    assert set(kinds) == {"bulk", "upload", "web"}
    assert kinds["upload"]["bytes"] == 300_000 and kinds["web"]["bytes"] == 171_500
    assert summary["runs"][0]["netstat"]["ue1"]["out_segments"] > 0  # the upload's sender
    measurements = {point.measurement for point in read(results / "runs" / "0-smvs" / "series.lp")}
    assert {"cell", "telemetry", "flow", "controller"} <= measurements
    assert "controller" not in {point.measurement for point in read(results / "runs" / "0-cubic" / "series.lp")}


def test_each_arm_runs_the_cell_with_its_queue_discipline_and_negotiates_ecn_where_it_marks(tmp_path):
    # CUBIC fills the 250 kB queue at 2-20 Mbit/s far beyond CoDel's 5 ms target: with ECN (the default where the
    # arm's discipline marks) CoDel marks and the sender backs off, without it CoDel drops; tail drop does neither.
    # What the cell did is read from the telemetry each run recorded (the `telemetry` measurement, contract 1.1).
    overrides = [
        "duration_s=4",
        "repetitions=1",
        f"cell.namespace_prefix='q{uuid.uuid4().hex[:6]}'",
        "cell.telemetry.endpoint='tcp://127.0.0.1:5572'",
        "arms=[{name='tail'}, {name='codel', queue_discipline={kind='codel'}},"
        " {name='codel-drop', queue_discipline={kind='codel'}, ecn=false}]",
    ]
    scenario, raw = load_scenario(SCENARIOS / "proxy-smoke.toml", overrides)
    results = run_scenario(scenario, raw, overrides, tmp_path)

    totals: dict[str, dict[str, int]] = {}
    for arm in ("tail", "codel", "codel-drop"):
        run = results / "runs" / f"0-{arm}"
        described = json.loads((run / "run.json").read_text())
        points = [p for p in read(run / "series.lp") if p.measurement == "telemetry"]
        fields = ("ce_marked_sdus", "aqm_dropped_sdus", "ece_marked_acks")
        totals[arm] = {name: sum(int(p.fields[name]) for p in points) for name in fields}
        totals[arm]["ecn"] = described["ecn"]
        totals[arm]["discipline"] = (described["queue_discipline"] or {}).get("kind", "")
    assert totals["tail"] == {"ce_marked_sdus": 0, "aqm_dropped_sdus": 0, "ece_marked_acks": 0, "ecn": False,
                              "discipline": ""}  # fmt: skip
    assert (totals["codel"]["ecn"], totals["codel"]["discipline"]) == (True, "codel")
    assert totals["codel"]["ce_marked_sdus"] > 0
    assert (totals["codel-drop"]["ecn"], totals["codel-drop"]["ce_marked_sdus"]) == (False, 0)
    assert totals["codel-drop"]["aqm_dropped_sdus"] > 0
