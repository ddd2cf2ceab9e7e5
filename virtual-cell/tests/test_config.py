"""Cell files: defaults, derived addresses, and errors that name the file and the field."""

import pytest
from rnf_cell.config import load_cell, parse_cell
from rnf_cell.datapath import datapath_config
from rnf_cell.topology import Names
from rnf_foundation.errors import UserError

CONSTANT = {"generator": "constant", "rate_mbps": 10}


def assert_one_line_naming(error: UserError, message: str) -> None:
    """The refusal is one line, and it says `message` (the file, the field and why)."""
    assert message in error.message and "\n" not in error.message, error.message


def test_defaults_follow_srsran_addressing():
    config = parse_cell({"ues": [{"trace": CONSTANT}, {"trace": CONSTANT}]}, "cell.toml")
    assert [str(ip) for ip in config.ue_ips()] == ["172.16.0.2", "172.16.0.3"]
    assert config.rntis() == [0x46, 0x47]
    assert config.telemetry.endpoint == "tcp://127.0.0.1:5555"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"ues": [{"trace": CONSTANT, "queue_limt_bytes": 5}]}, "cell.toml: ues[0].queue_limt_bytes: Extra inputs"),
        ({"ues": [{"trace": {"generator": "sine"}}]}, "cell.toml: ues[0].trace: a trace needs"),
        (
            {"ues": [{"trace": {"generator": "piecewise", "min_mbps": 5, "max_mbps": 1, "period_s": 1}}]},
            "cell.toml: ues[0].trace: min_mbps is above max_mbps",
        ),
        ({"ues": []}, "cell.toml: ues: List should have at least 1 item"),
        ({"ues": [{"trace": CONSTANT, "queue_limit_bytes": 0}]}, "the RLC queue needs a limit"),
        (
            {"ues": [{"trace": CONSTANT, "ip": "172.16.0.9"}, {"trace": CONSTANT, "ip": "172.16.0.9"}]},
            "two UEs share an IP address",
        ),
        ({"scheduler": "fifo", "ues": [{"trace": CONSTANT}]}, "cell.toml: scheduler: Input should be"),
    ],
)
def test_bad_cell_files_name_the_field(data, message):
    with pytest.raises(UserError) as raised:
        parse_cell(data, "cell.toml")
    assert_one_line_naming(raised.value, message)


def test_trace_paths_are_relative_to_the_cell_file(tmp_path):
    (tmp_path / "cell.toml").write_text('[[ues]]\ntrace = { file = "traces/a.down", format = "mahimahi" }\n')
    config = load_cell(tmp_path / "cell.toml")
    assert config.ues[0].trace.file == tmp_path / "traces" / "a.down"


def test_unreadable_cell_files(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        load_cell(tmp_path / "absent.toml")
    (tmp_path / "bad.toml").write_text("ues = [")
    with pytest.raises(UserError, match=r"bad\.toml: not valid TOML"):
        load_cell(tmp_path / "bad.toml")


def test_a_queue_discipline_defaults_to_tail_drop_and_reaches_the_datapath_in_microseconds(tmp_path):
    ues = [
        {"trace": CONSTANT},
        {"trace": CONSTANT, "queue_discipline": {"kind": "codel"}},
        {"trace": CONSTANT, "queue_discipline": {"kind": "codel", "target_ms": 2.5, "interval_ms": 50}},
        {"trace": CONSTANT, "queue_discipline": {"kind": "mark"}},
        {"trace": CONSTANT, "queue_discipline": {"kind": "mark", "threshold_ms": 0.25, "ack_ece": True}},
        {"trace": CONSTANT, "queue_discipline": {"kind": "tail_drop"}},
    ]
    config = parse_cell({"ues": ues}, "cell.toml")
    traces = [tmp_path / f"ue{i + 1}.cap" for i in range(len(ues))]
    data = datapath_config(config, Names("rnf", len(ues)), traces, [None] * len(ues), None, None)
    assert [ue["queue_discipline"] for ue in data["ues"]] == [
        {"kind": "tail_drop"},
        {"kind": "codel", "target_us": 5000, "interval_us": 100_000},
        {"kind": "codel", "target_us": 2500, "interval_us": 50_000},
        {"kind": "mark", "threshold_us": 15_000, "ack_ece": False},
        {"kind": "mark", "threshold_us": 250, "ack_ece": True},
        {"kind": "tail_drop"},
    ]


@pytest.mark.parametrize(
    ("discipline", "message"),
    [
        ({"kind": "red"}, "cell.toml: ues[0].queue_discipline: a queue discipline needs `kind = tail_drop|codel|mark`"),
        ({"target_ms": 5}, "cell.toml: ues[0].queue_discipline: a queue discipline needs `kind"),
        ({"kind": "codel", "target_ms": 0}, "cell.toml: ues[0].queue_discipline.target_ms: Input should be greater"),
        ({"kind": "codel", "target_ms": -5}, "cell.toml: ues[0].queue_discipline.target_ms: Input should be greater"),
        ({"kind": "mark", "threshold_ms": -1}, "cell.toml: ues[0].queue_discipline.threshold_ms: Input should be"),
        ({"kind": "codel", "interval_ms": -1}, "cell.toml: ues[0].queue_discipline.interval_ms: Input should be"),
        ({"kind": "codel", "target_ms": 100}, "cell.toml: ues[0].queue_discipline: target_ms must be below"),
        ({"kind": "codel", "target_ms": float("nan")}, "cell.toml: ues[0].queue_discipline.target_ms: Input should be"),
        ({"kind": "codel", "threshold_ms": 5}, "cell.toml: ues[0].queue_discipline.threshold_ms: Extra inputs"),
        ({"kind": "mark", "threshold_ms": 60_001}, "cell.toml: ues[0].queue_discipline.threshold_ms: Input should be"),
        ({"kind": "mark", "ack_ece": "maybe"}, "cell.toml: ues[0].queue_discipline.ack_ece: Input should be a valid"),
        ({"kind": "tail_drop", "target_ms": 5}, "cell.toml: ues[0].queue_discipline.target_ms: Extra inputs"),
    ],
)
def test_bad_queue_disciplines_name_the_field(discipline, message):
    with pytest.raises(UserError) as raised:
        parse_cell({"ues": [{"trace": CONSTANT, "queue_discipline": discipline}]}, "cell.toml")
    assert_one_line_naming(raised.value, message)


def test_an_ack_regulator_reaches_the_datapath_in_microseconds_and_only_where_configured(tmp_path):
    ues = [
        {"trace": CONSTANT},
        {"trace": CONSTANT, "ack_regulator": {}},
        {"trace": CONSTANT, "ack_regulator": {"headroom_bytes": 5000, "max_hold_rtts": 2.5, "initial_rtt_ms": 40}},
    ]
    config = parse_cell({"ues": ues}, "cell.toml")
    traces = [tmp_path / f"ue{i + 1}.cap" for i in range(len(ues))]
    data = datapath_config(config, Names("rnf", len(ues)), traces, [None] * len(ues), None, None)
    assert [ue.get("ack_regulator") for ue in data["ues"]] == [
        None,
        {"max_hold_rtts": 1.0, "initial_rtt_us": 100_000},
        {"max_hold_rtts": 2.5, "initial_rtt_us": 40_000, "headroom_bytes": 5000},
    ]


@pytest.mark.parametrize(
    ("ue", "message"),
    [
        ({"ack_regulator": {"headroom_bytes": 300_000}}, "ues[0]: ack_regulator.headroom_bytes must be below"),
        ({"ack_regulator": {"headroom_bytes": -1}}, "ues[0].ack_regulator.headroom_bytes: Input should be greater"),
        ({"ack_regulator": {"max_hold_rtts": 0}}, "ues[0].ack_regulator.max_hold_rtts: Input should be greater"),
        ({"ack_regulator": {"initial_rtt_ms": float("inf")}}, "ues[0].ack_regulator.initial_rtt_ms: Input should"),
        ({"ack_regulator": {"target_ms": 5}}, "ues[0].ack_regulator.target_ms: Extra inputs"),
        (
            {"ack_regulator": {}, "queue_limit_bytes": 0, "queue_limit_sdus": 100},
            "ues[0]: ack_regulator needs queue_limit_bytes",
        ),
    ],
)
def test_bad_ack_regulators_name_the_field(ue, message):
    with pytest.raises(UserError) as raised:
        parse_cell({"ues": [{"trace": CONSTANT, **ue}]}, "cell.toml")
    assert_one_line_naming(raised.value, message)


@pytest.mark.parametrize(
    ("ue", "message"),
    [
        ({"uplink_grant_chain": 1.0, "uplink_grant_period_ms": 9}, "ues[0].uplink_grant_chain: Input should be less"),
        ({"uplink_grant_chain": -0.1}, "ues[0].uplink_grant_chain: Input should be greater"),
        ({"uplink_grant_period_ms": -1}, "ues[0].uplink_grant_period_ms: Input should be greater"),
        (
            {"uplink_grant_chain": 0.5, "uplink_sr_period_ms": 20},
            "ues[0]: uplink_grant_chain needs uplink_grant_period_ms and uplink_sr_period_ms",
        ),
        (
            {"uplink_grant_chain": 0.5, "uplink_grant_period_ms": 9},
            "ues[0]: uplink_grant_chain needs uplink_grant_period_ms and uplink_sr_period_ms",
        ),
    ],
)
def test_bad_chained_grants_name_the_field(ue, message):
    with pytest.raises(UserError) as raised:
        parse_cell({"ues": [{"trace": CONSTANT, **ue}]}, "cell.toml")
    assert_one_line_naming(raised.value, message)


def test_chained_grants_reach_the_datapath_in_microseconds(tmp_path):
    ue = {"trace": CONSTANT, "uplink_sr_period_ms": 23.06, "uplink_grant_period_ms": 9.23, "uplink_grant_chain": 0.21}
    config = parse_cell({"ues": [ue]}, "cell.toml")
    (written,) = datapath_config(config, Names("rnf", 1), [tmp_path / "ue1.trace"], [None], None, None)["ues"]
    assert (written["uplink_sr_period_us"], written["uplink_grant_period_us"]) == (23_060, 9_230)
    assert written["uplink_grant_chain"] == 0.21


def test_an_uplink_trace_reaches_the_datapath_only_where_configured_and_excludes_scheduling_requests(tmp_path):
    ues = [{"trace": CONSTANT}, {"trace": CONSTANT, "uplink_trace": {"file": "uplink.csv"}}]
    config = parse_cell({"ues": ues}, "cell.toml")
    uplink_files = [None, tmp_path / "u"]
    data = datapath_config(config, Names("rnf", 2), [tmp_path / "a", tmp_path / "b"], uplink_files, None, None)
    assert [ue.get("uplink_trace_file") for ue in data["ues"]] == [None, str(tmp_path / "u")]
    with pytest.raises(UserError) as raised:
        parse_cell({"ues": [{**ues[1], "uplink_sr_period_ms": 20}]}, "cell.toml")
    assert "ues[0]: uplink_trace replays the transmissions: it excludes uplink_sr_period_ms" in raised.value.message
