"""Scenario files and --set overrides."""

import re
from pathlib import Path

import pytest
from rnf_experiments.cells.spec import VirtualCellSpec
from rnf_experiments.runner import schedule
from rnf_experiments.scenario import (
    arm_cell,
    arm_ecn,
    check_inputs,
    expand,
    load_scenario,
    parse_override,
    proxy_config,
    telemetry_period,
)
from rnf_foundation.errors import UserError

SCENARIOS = Path(__file__).parents[1] / "scenarios"
SHIPPED = sorted(SCENARIOS.rglob("*.toml"))


@pytest.mark.parametrize("path", SHIPPED, ids=[str(p.relative_to(SCENARIOS)) for p in SHIPPED])
def test_every_shipped_scenario_is_valid(path):
    """The structure, on any machine; the trace files too, where the repository has them. A trace fetched at run
    time (fetch-traces.sh, not committed) is either there and reads as a trace, or the error says how to fetch it."""
    scenario, raw = load_scenario(path)
    assert scenario.arms
    if not isinstance(scenario.cell, VirtualCellSpec):
        return  # a srsRAN cell needs SRSRAN_BUILD to run (test_bad_input.py)
    try:
        check_inputs(path, scenario, raw, str(path))
    except UserError as error:
        found = re.search(r": (\S+): no such trace file \((\S+fetch-traces\.sh) fetches the traces\)", error.message)
        assert found, error.message
        missing, fetcher = Path(found[1]), Path(found[2])
        assert fetcher.exists() and missing.name in fetcher.read_text()


def test_overrides_reach_nested_values_and_lists():
    scenario, raw = load_scenario(SCENARIOS / "demo.toml", ["duration_s=3", "cell.ues.0.backhaul_delay_ms=25"])
    assert scenario.duration_s == 3 and scenario.cell.ues[0].backhaul_delay_ms == 25
    assert raw["duration_s"] == 3


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("durations=3", "durations: Extra inputs are not permitted"),
        ("cell.ues.5.backhaul_delay_ms=1", "is not an index"),
        ("duration_s", "expected key=value"),
        ("arms.0.cc=vegas", "arms[0].cc: Input should be"),
    ],
)
def test_bad_overrides_are_named(override, message):
    with pytest.raises(UserError) as raised:
        load_scenario(SCENARIOS / "demo.toml", [override])
    assert message in raised.value.message


def test_override_values_are_toml():
    assert parse_override("a.b=[1, 2]") == (["a", "b"], [1, 2])
    assert parse_override("name=bbr") == (["name"], "bbr")


def test_arms_rotate_across_repetitions():
    scenario, _ = load_scenario(SCENARIOS / "demo.toml", ["repetitions=3"])
    order = [(rep, arm.name) for rep, arm in schedule(scenario)]
    assert order == [(0, "cubic"), (0, "bbr"), (1, "bbr"), (1, "cubic"), (2, "cubic"), (2, "bbr")]


def test_traffic_kinds_and_their_errors(tmp_path):
    path = tmp_path / "web.toml"
    path.write_text((SCENARIOS / "demo.toml").read_text().replace(
        '[[traffic]]\nkind = "bulk"',
        '[[traffic]]\nkind = "web"\nobjects_bytes = [51500, 368500]\npages = 3\n\n'
        '[[traffic]]\nkind = "upload"\nbytes = 1000000\nstart_s = 2\nues = [1]',
    ))  # fmt: skip
    scenario, _ = load_scenario(path)
    assert [t.kind for t in scenario.traffic] == ["web", "upload"]
    with pytest.raises(UserError, match=r"traffic\[1\].ues: UE 2 is not one of the cell's 1"):
        load_scenario(path, ["traffic.1.ues=[2]"])
    with pytest.raises(UserError, match=r"traffic\[0\]\.objects_bytes\[0\]: Input should be greater than 0"):
        load_scenario(path, ["traffic.0.objects_bytes=[0]"])


def test_a_sweep_makes_one_valid_scenario_per_value(tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_text(
        (SCENARIOS / "demo.toml").read_text()
        + '\n[sweep]\nparameter = "period_s"\nkeys = ["cell.ues.0.trace.period_s"]\nvalues = [0.04, 2]\n'
    )
    scenario, raw = load_scenario(path)
    variants = expand(scenario, raw, str(path))
    assert [v.scenario.cell.ues[0].trace.period_s for v in variants] == [0.04, 2]
    with pytest.raises(UserError, match=r"sweep period_s = -1"):
        load_scenario(path, ["sweep.values=[-1]"])


@pytest.mark.parametrize(
    "sweep",
    [
        '[sweep]\nparameter = "trace"\nkeys = ["cell.ues.0.trace.file"]\nvalues = ["a.csv", "b.csv"]\n',
        '[sweep]\nparameter = "trace"\npoints = [{ label = "a", set = { "cell.ues.0.trace.file" = "a.csv" } },'
        ' { label = "b", set = { "cell.ues.0.trace.file" = "b.csv" } }]\n',
    ],
    ids=["keys", "points"],
)
def test_a_trace_path_in_a_sweep_resolves_from_the_scenario_as_in_the_file(tmp_path, monkeypatch, sweep):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    for name in ("a.csv", "b.csv", "c.csv"):
        (folder / name).write_text("time_s,rate_mbps\n0,5\n1,0\n")
    path = folder / "sweep.toml"
    path.write_text(
        (SCENARIOS / "demo.toml")
        .read_text()
        .replace(
            'trace = { generator = "piecewise", min_mbps = 2, max_mbps = 20, period_s = 0.2, duration_s = 60 }',
            'trace = { file = "c.csv" }',
        )
        + sweep
    )
    monkeypatch.chdir(tmp_path)  # not the scenario's folder
    scenario, raw = load_scenario(path.relative_to(tmp_path))
    variants = expand(scenario, raw, str(path))
    assert [v.scenario.cell.ues[0].trace.file.resolve() for v in variants] == [folder / "a.csv", folder / "b.csv"]
    check_inputs(path, scenario, raw, str(path))


def test_a_sweep_point_error_names_the_point_not_set(tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_text(
        (SCENARIOS / "demo.toml").read_text()
        + '\n[sweep]\nparameter = "p"\npoints = [{ label = "bad", set = { "cell.ues.7.backhaul_delay_ms" = 1 } }]\n'
    )
    with pytest.raises(UserError) as raised:
        load_scenario(path)
    assert raised.value.message == (
        f"sweep key cell.ues.7.backhaul_delay_ms: cell.ues.7 is not an index of {path} (sweep p = 'bad')"
    )


def test_an_arm_states_the_discipline_of_every_ue_and_ecn_follows_marking_unless_set():
    arms = (
        "arms=[{name='cubic'}, {name='codel', queue_discipline={kind='codel', target_ms=5, interval_ms=100}},"
        " {name='mark', queue_discipline={kind='mark', threshold_ms=15, ack_ece=true}},"
        " {name='codel-noecn', queue_discipline={kind='codel'}, ecn=false}]"
    )
    scenario, _ = load_scenario(
        SCENARIOS / "demo.toml",
        [arms, "cell.ues=[{trace={generator='constant', rate_mbps=5}}, {trace={generator='constant', rate_mbps=5}}]"],
    )
    mark = scenario.arms[2]
    kinds = {arm.name: [ue.queue_discipline.kind for ue in arm_cell(scenario.cell, arm).ues] for arm in scenario.arms}
    assert kinds == {
        "cubic": ["tail_drop", "tail_drop"],
        "codel": ["codel", "codel"],
        "mark": ["mark", "mark"],
        "codel-noecn": ["codel", "codel"],
    }
    assert [arm_ecn(scenario.cell, arm) for arm in scenario.arms] == [False, True, True, False]
    assert arm_cell(scenario.cell, mark).ues[1].queue_discipline.ack_ece is True
    assert [ue.queue_discipline.kind for ue in scenario.cell.ues] == ["tail_drop", "tail_drop"]  # the cell's own
    # an arm's ACK Regulator goes on every UE and, as it sets ECE, ECN follows it
    scenario, _ = load_scenario(SCENARIOS / "demo.toml", ["arms=[{name='ackreg', ack_regulator={max_hold_rtts=2}}]"])
    regulated = arm_cell(scenario.cell, scenario.arms[0])
    assert [ue.ack_regulator.max_hold_rtts for ue in regulated.ues] == [2.0] * len(scenario.cell.ues)
    assert arm_ecn(scenario.cell, scenario.arms[0]) and scenario.cell.ues[0].ack_regulator is None
    # a UE's own discipline in the cell file: an arm that states none keeps it, and negotiates ECN
    scenario, _ = load_scenario(SCENARIOS / "demo.toml", ["cell.ues.0.queue_discipline={kind='codel'}"])
    assert all(arm_ecn(scenario.cell, arm) for arm in scenario.arms if arm.queue_discipline is None)


def test_a_controller_steps_once_per_report_of_its_cell_unless_it_states_the_same_step():
    arms = (
        "arms=[{name='smvs', kind='proxy', controller={kind='smvs'}},"
        " {name='itcp', kind='proxy', controller={kind='itcp'}}]"
    )
    scenario, _ = load_scenario(SCENARIOS / "demo.toml", [arms, "cell.telemetry.period_ms=5"])
    period_s, key = telemetry_period(scenario.cell)
    assert (period_s, key) == (0.005, "cell.telemetry.period_ms")
    smvs, itcp = (proxy_config(arm, None, "tcp://127.0.0.1:5555", period_s) for arm in scenario.arms)
    assert smvs.controller.ts_s == 0.005  # a report every 5 ms: the rate is the bytes of 5 ms over 5 ms
    assert smvs.tick_s == 0.005
    assert not hasattr(itcp.controller, "ts_s")  # itcp has no step to set
    stated = "arms=[{name='smvs', kind='proxy', controller={kind='smvs', ts_s=0.005}}]"
    scenario, _ = load_scenario(SCENARIOS / "demo.toml", [stated, "cell.telemetry.period_ms=5"])
    assert proxy_config(scenario.arms[0], None, "tcp://127.0.0.1:5555", 0.005).controller.ts_s == 0.005
    with pytest.raises(UserError) as raised:
        load_scenario(SCENARIOS / "demo.toml", [stated])  # the cell reports every 10 ms
    assert "arms[0].controller.ts_s: 0.005 s is not the cell's report period, 10 ms (cell.telemetry.period_ms)" in (
        raised.value.message
    )
    srsran = load_scenario(SCENARIOS / "srsran-smvs.toml")[0]
    assert telemetry_period(srsran.cell) == (0.01, "cell.telemetry_period_ms")
