"""`rnf bridge status` and the bridge's configuration refuse a bad endpoint in one line, exit 2, before any
socket wraps its port. Through the venv's `rnf`, as the other tests here (they run under /usr/bin/python3)."""

import subprocess

import pytest

ENDPOINTS = [
    ("tcp://127.0.0.1:99999", "port 99999 is above 65535"),
    ("tcp://127.0.0.1:-1", "port '-1' is not a number"),
    ("-1", "is not a ZeroMQ endpoint"),
    ("foo://bar", "is not a ZeroMQ endpoint"),
    ("", "is not a ZeroMQ endpoint"),
    ("garbage", "is not a ZeroMQ endpoint"),
    ("tcp://127.0.0.1", "needs HOST:PORT"),
    ("tcp://127.0.0.1:0", "connecting needs the host and port"),
]


def run(rnf, *args: str) -> tuple[int, list[str]]:
    result = subprocess.run([rnf, *args], capture_output=True, text=True, timeout=60)
    return result.returncode, result.stderr.splitlines()


@pytest.mark.parametrize(("endpoint", "reason"), ENDPOINTS)
@pytest.mark.parametrize("command", [["status"], ["set-gain", "ue1", "-3"]])
def test_a_bad_control_endpoint_is_one_line_naming_it(rnf, command, endpoint, reason):
    code, lines = run(rnf, "bridge", *command, f"--control={endpoint}")
    assert code == 2
    assert len(lines) == 1 and f"'--control': {endpoint!r}" in lines[0] and reason in lines[0]


@pytest.mark.parametrize(("endpoint", "reason"), ENDPOINTS[:7])
def test_a_bad_endpoint_in_a_bridge_file_is_one_line_naming_the_field(rnf, tmp_path, endpoint, reason):
    config = tmp_path / "bridge.toml"
    config.write_text(f'sample_rate = 5.76e6\n\n[enb]\nrx = "{endpoint}"\n\n[[ues]]\nname = "ue1"\n')
    code, lines = run(rnf, "bridge", "check", str(config))
    assert code == 2
    assert len(lines) == 1 and f"{config}: enb.rx: {endpoint!r}" in lines[0] and reason in lines[0]


BRIDGE_FIELDS = [
    ("seed = -3\n", "seed: Input should be greater than or equal to 0"),
    ("seed = 4294967296\n", "seed: Input should be less than or equal to"),
    ("peer_timeout_s = inf\n", "peer_timeout_s: Input should be a finite number"),
    ("[enb]\nnoise_dbfs = nan\n", "enb.noise_dbfs: Input should be a finite number"),
    (
        "[[ues]]\ntrace = { generator = 'onoff', on_s = 1, off_s = 1, off_db = nan }\n",
        "ues[0].trace.off_db: nan is not a gain",
    ),
    (
        "[[ues]]\ntrace = { generator = 'piecewise', min_db = -3, max_db = 0, period_s = 1, seed = -1 }\n",
        "ues[0].trace.seed: Input should be greater than or equal to 0",
    ),
    (
        "[[ues]]\nfading = { model = 'rayleigh', doppler_hz = nan }\n",
        "ues[0].fading.doppler_hz: Input should be a finite",
    ),
]


@pytest.mark.parametrize(("text", "reason"), BRIDGE_FIELDS)
def test_a_bridge_file_with_nonsense_is_one_line_naming_the_field(rnf, tmp_path, text, reason):
    config = tmp_path / "bridge.toml"
    ues = "" if "[[ues]]" in text else "\n[[ues]]\nname = 'ue1'\n"
    config.write_text(f"sample_rate = 5.76e6\n{text}{ues}")
    code, lines = run(rnf, "bridge", "check", str(config))
    assert code == 2
    assert len(lines) == 1 and f"{config}: {reason}" in lines[0], lines
