"""Scenario files and --set overrides."""

from pathlib import Path

import pytest
from rnf_cli.errors import UserError
from rnf_experiments.runner import schedule
from rnf_experiments.scenario import expand, load_scenario, parse_override

SCENARIOS = Path(__file__).parents[1] / "scenarios"


def test_every_shipped_scenario_is_valid():
    for path in sorted(SCENARIOS.rglob("*.toml")):
        scenario, _ = load_scenario(path)
        assert scenario.arms


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
    with pytest.raises(UserError, match=r"traffic\[0\]\.web\.objects_bytes\[0\]: Input should be greater than 0"):
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
