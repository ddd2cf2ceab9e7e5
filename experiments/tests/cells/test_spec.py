"""The srsRAN cell kinds in scenario files: validated at load time, on any machine, errors naming file and field."""

from pathlib import Path

import pytest
from rnf_experiments.cells.spec import SrsranCellSpec, SrsranZmqCellSpec
from rnf_experiments.scenario import load_scenario
from rnf_foundation.errors import UserError

SCENARIOS = Path(__file__).parents[2] / "scenarios"
SRSRAN = SCENARIOS / "srsran-smvs.toml"
ZMQ = SCENARIOS / "srsran-zmq-smvs.toml"


def test_the_srsran_scenario_is_one_ue_on_rlc_am():
    scenario, _ = load_scenario(SRSRAN)
    assert isinstance(scenario.cell, SrsranCellSpec)
    assert scenario.cell.qci == 9 and len(scenario.cell.ues) == 1
    assert {arm.name for arm in scenario.arms} == {"smvs", "cubic"}


def test_a_cell_without_kind_is_virtual():
    scenario, _ = load_scenario(SCENARIOS / "demo.toml", ["cell.kind=virtual"])
    assert scenario.cell.kind == "virtual"


def test_the_bridge_of_a_zmq_cell_carries_the_scenarios_gain_trace_and_noise():
    scenario, _ = load_scenario(ZMQ)
    assert isinstance(scenario.cell, SrsranZmqCellSpec)
    bridge = scenario.cell.bridge_config("ipc:///run/rnf/x-bridge.ipc")
    assert bridge.sample_rate == 3.84e6  # 15 PRB
    assert bridge.enb.noise_dbfs == 16 and bridge.ues[0].noise_dbfs == 42
    assert bridge.ues[0].trace is not None and bridge.ues[0].trace.generator == "piecewise"  # type: ignore[union-attr]
    assert bridge.control == "ipc:///run/rnf/x-bridge.ipc"


@pytest.mark.parametrize(
    ("scenario", "override", "message"),
    [
        (
            SRSRAN,
            "cell.n_prb=100",
            "srsran-smvs.toml (with --set cell.n_prb=100): cell.n_prb: Input should be 6, 15, 25",
        ),
        (SRSRAN, "cell.qci=8", "cell.qci: Input should be 7 or 9"),
        (SRSRAN, "cell.telemetry_period_ms=0", "cell.telemetry_period_ms: Input should be greater than or equal to 1"),
        (SRSRAN, "cell.kind=srsran-5g", "cell: kind must be 'virtual', 'srsran' or 'srsran-zmq'"),
        (SRSRAN, "cell.backhaul=1", "cell.backhaul: Extra inputs are not permitted"),
        (ZMQ, "cell.n_prb=50", "cell.n_prb: Input should be 6, 15 or 25"),
        (ZMQ, "cell.ues.0.noise_dbfs=loud", "cell.ues[0].noise_dbfs: Input should be a valid number"),
        (ZMQ, "cell.ues.0.gain_db=-3", "cell.ues[0]: set gain_db or trace, not both"),
        (ZMQ, "cell.ues.0.trace.min_db=5", "cell.ues[0].trace: min_db is above max_db"),
        (ZMQ, 'cell.ues.0.trace={ file = "missing.csv" }', "cell.ues[0]: trace: "),
        (ZMQ, "cell.ues.0.fading={ model = 'rician', doppler_hz = 5 }", "cell.ues[0].fading: rician fading needs"),
        (ZMQ, "cell.ues=[]", "cell.ues: List should have at least 1 item"),
    ],
)
def test_bad_fields_of_the_srsran_kinds_are_named_with_the_file(scenario, override, message):
    with pytest.raises(UserError) as raised:
        load_scenario(scenario, [override])
    assert message in raised.value.message
    assert str(scenario) in raised.value.message
