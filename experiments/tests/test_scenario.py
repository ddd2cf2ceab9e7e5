"""Scenario files and --set overrides."""

from pathlib import Path

import pytest
from rnf_cli.errors import UserError
from rnf_experiments.runner import schedule
from rnf_experiments.scenario import load_scenario, parse_override

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
