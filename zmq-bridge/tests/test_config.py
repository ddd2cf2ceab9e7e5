"""The configuration is read in the venv (pydantic), so these tests go through `rnf bridge check`."""

import subprocess
from pathlib import Path

import pytest

GOOD = """
sample_rate = 5.76e6

[enb]
noise_dbfs = -70

[[ues]]
gain_db = -3
noise_dbfs = -70

[[ues]]
name = "far"
trace = { file = "step.csv", loop = false }
fading = { model = "rician", doppler_hz = 5, k_factor = 4 }
"""


def check(rnf: Path, folder: Path, text: str, trace: str | None = "time_s,gain_db\n0,0\n20,-10\n"):
    (folder / "bridge.toml").write_text(text)
    if trace is not None:
        (folder / "step.csv").write_text(trace)
    return subprocess.run([rnf, "bridge", "check", folder / "bridge.toml"], capture_output=True, text=True, timeout=60)


def test_check_prints_the_device_args_of_srsenb_and_of_every_ue(rnf, tmp_path):
    result = check(rnf, tmp_path, GOOD)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "2 UE(s) at 5.76 Msample/s, control socket tcp://127.0.0.1:5560" in lines[0]
    assert lines[1] == (
        '  srsenb: --rf.device_name=zmq --rf.device_args="fail_on_disconnect=true,tx_port=tcp://127.0.0.1:2000,'
        'rx_port=tcp://127.0.0.1:2001,id=enb,base_srate=5760000"'
    )
    assert lines[2].endswith('"tx_port=tcp://127.0.0.1:2101,rx_port=tcp://127.0.0.1:2100,id=ue1,base_srate=5760000"')
    assert lines[3].endswith('"tx_port=tcp://127.0.0.1:2201,rx_port=tcp://127.0.0.1:2200,id=far,base_srate=5760000"')
    assert lines[4] == "Start srsenb and every srsue first (any order), then the bridge."


@pytest.mark.parametrize(
    ("text", "trace", "message"),
    [
        (GOOD.replace("gain_db = -3", "gian_db = -3"), None, "ues[0].gian_db: Extra inputs are not permitted"),
        (GOOD.replace("5.76e6", "5e6"), None, "sample_rate: 5e6 is not a whole multiple of 1.92e6; srsRAN uses 1.92e6"),
        (
            GOOD.replace("gain_db = -3", "gain_db = -3\ntrace = { generator = 'onoff', on_s = 1, off_s = 1 }"),
            None,
            "ues[0]: set gain_db or trace, not both",
        ),
        (GOOD.replace("k_factor = 4", "k_factor = 0"), None, "ues[1].fading: rician fading needs k_factor > 0"),
        (
            GOOD.replace("[enb]", '[enb]\nrx = "tcp://127.0.0.1:2100"'),
            None,
            "two sockets share an endpoint: tcp://127.0.0.1:2100",
        ),
        (
            GOOD.replace("[enb]", '[enb]\ntx = "tcp://127.0.0.1:0"'),
            None,
            "enb.tx: 'tcp://127.0.0.1:0': connecting needs the host and port the other side binds",
        ),
        (GOOD.replace("[enb]", '[enb]\nrx = "udp://x:1"'), None, "enb.rx: 'udp://x:1' is not a ZeroMQ endpoint"),
        (GOOD.replace('{ file = "step.csv", loop = false }', "{ period_s = 2 }"), None, "ues[1].trace: a trace needs"),
        (GOOD.replace("{ file", "{ generator = 'onoff', file"), None, "ues[1].trace.generator: Extra inputs"),
        (GOOD, "time_s,gain_db\n0,0\n20,loud\n", "ues[1].trace: "),
        (GOOD.replace("step.csv", "missing.csv"), None, "missing.csv: no such trace file"),
        ("sample_rate = [", None, "not valid TOML"),
    ],
)
def test_mistakes_are_one_line_naming_the_file_and_the_field(rnf, tmp_path, text, trace, message):
    result = check(rnf, tmp_path, text, trace) if trace else check(rnf, tmp_path, text)
    assert result.returncode == 2
    assert message in result.stderr and str(tmp_path / "bridge.toml") in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("example", ["two-ues.toml", "piecewise.toml"])
def test_the_examples_are_valid(rnf, example):
    result = subprocess.run(
        [rnf, "bridge", "check", Path(__file__).parents[1] / "examples" / example],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
