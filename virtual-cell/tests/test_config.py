"""Cell files: defaults, derived addresses, and errors that name the file and the field."""

import pytest
from rnf_cell.config import load_cell, parse_cell
from rnf_foundation.errors import UserError

CONSTANT = {"generator": "constant", "rate_mbps": 10}


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
    assert message in raised.value.message


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
