"""Configuration files: defaults, controller kinds, and errors that name the file and the field."""

import pytest
from rnf_foundation.errors import UserError
from rnf_proxy.config import load
from rnf_proxy.rnf import RnfConfig


def test_defaults_are_transparent_smvs_on_loopback(tmp_path):
    path = tmp_path / "proxy.toml"
    path.write_text("")
    config = load(path)
    assert config.mode == "transparent" and config.controller.kind == "smvs"
    assert config.listen_address == ("127.0.0.1", 15001)
    assert config.telemetry.endpoint == "tcp://127.0.0.1:5555"
    assert config.tick_s == 0.01 and config.owns_window


def test_a_controller_table_selects_the_kind(tmp_path):
    path = tmp_path / "proxy.toml"
    path.write_text('[controller]\nkind = "rnf"\nq_ref_bytes = 40000\n')
    assert load(path).controller == RnfConfig(q_ref_bytes=40_000)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[controller]\nkind = "smvs"\nalpha = 2\n', "proxy.toml: controller.smvs.alpha: Input should be less than 1"),
        ('[controller]\nkind = "rnf"\nq_reff = 1\n', "proxy.toml: controller.rnf.q_reff: Extra inputs"),
        ('mode = "explicit"\n', "explicit mode needs server"),
        ('listen = "localhost"\n', "listen: 'localhost' is not IP:PORT"),
        ("[telemetry]\ncurve_public_key = 'x'\n", "CURVE needs"),
    ],
)
def test_errors_name_the_file_and_the_field(tmp_path, text, message):
    path = tmp_path / "proxy.toml"
    path.write_text(text)
    with pytest.raises(UserError, match=message.replace(".", r"\.").replace("(", r"\(")):
        load(path)


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        load(tmp_path / "absent.toml")
