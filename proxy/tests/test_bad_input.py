"""`rnf proxy` and `rnf params check` on bad input: one line naming the input and the reason, exit 2, nothing
started or written."""

import pytest
from rnf_cli.main import main

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


def rnf(capsys, *args: str) -> tuple[int, list[str]]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    return exit_info.value.code, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize(("endpoint", "reason"), ENDPOINTS)
def test_a_bad_telemetry_endpoint_in_a_proxy_file_is_refused(capsys, tmp_path, endpoint, reason):
    config = tmp_path / "proxy.toml"
    config.write_text(f'[telemetry]\nendpoint = "{endpoint}"\n')
    code, lines = rnf(capsys, "proxy", str(config), "--record", str(tmp_path / "out"))
    assert code == 2
    assert len(lines) == 1 and f"{config}: telemetry.endpoint: {endpoint!r}" in lines[0] and reason in lines[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--ts", "nan"], "'--ts': 'nan' is not a finite number"),
        (["--ts", "inf"], "'--ts': 'inf' is not a finite number"),
        (["--target-ms", "inf"], "'--target-ms': 'inf' is not a finite number"),
        (["--delta", "-inf"], "'--delta': '-inf' is not a finite number"),
        (["--eps", "nan"], "'--eps': 'nan' is not a finite number"),
        (["--rate-mbps", "nan"], "'--rate-mbps': 'nan' is not a finite number"),
        (["--variation-period", "inf"], "'--variation-period': 'inf' is not a finite number"),
        (["--loop-ms", "nan"], "'--loop-ms': 'nan' is not a finite number"),
        (["--ts", "0"], "'--ts': 0.0 is not in the range x>0"),
    ],
)
def test_params_check_refuses_nan_and_infinity_by_type(capsys, args, reason):
    code, lines = rnf(capsys, "params", "check", *args)
    assert code == 2
    assert len(lines) == 1 and reason in lines[0]


def test_proxy_duration_refuses_infinity(capsys, tmp_path):
    code, lines = rnf(capsys, "proxy", "--duration", "inf", "--record", str(tmp_path / "out"))
    assert code == 2
    assert len(lines) == 1 and "'--duration': 'inf' is not a finite number" in lines[0]
    assert not (tmp_path / "out").exists()


PROXY_FIELDS = [
    ('listen = "bad"\n', "listen: 'bad' is not IP:PORT, like 127.0.0.1:15001"),
    ('listen = "127.0.0.1:99999"\n', "listen: '127.0.0.1:99999': port 99999 is above 65535"),
    ('listen = "127.0.0.1:-1"\n', "listen: '127.0.0.1:-1': port '-1' is not a number 0-65535"),
    ('listen = "localhost:80"\n', "listen: 'localhost:80': 'localhost' does not appear to be an IPv4 or IPv6"),
    ('mode = "explicit"\nserver = "10.20.0.2:70000"\n', "server: '10.20.0.2:70000': port 70000 is above 65535"),
    ("pump_interval_s = nan\n", "pump_interval_s: Input should be a finite number"),
    ("peer_timeout_s = inf\n", "peer_timeout_s: Input should be a finite number"),
    ("[kernel]\nrto_max_s = nan\n", "kernel.rto_max_s: Input should be a finite number"),
    ('[controller]\nkind = "smvs"\nts_s = inf\n', "controller.smvs.ts_s: Input should be a finite number"),
    ('[controller]\nkind = "smvs"\ndelta = nan\n', "controller.smvs.delta: Input should be a finite number"),
    ('[controller]\nkind = "rnf"\ntau_s = -inf\n', "controller.rnf.tau_s: Input should be a finite number"),
    (
        '[controller]\nkind = "clamp"\noverprovision = inf\n',
        "controller.clamp.overprovision: Input should be a finite number",
    ),
]


@pytest.mark.parametrize(("text", "reason"), PROXY_FIELDS)
def test_a_proxy_file_with_nonsense_is_one_line_naming_the_field(capsys, tmp_path, text, reason):
    config = tmp_path / "proxy.toml"
    config.write_text(text)
    code, lines = rnf(capsys, "proxy", str(config), "--record", str(tmp_path / "out"))
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(f"Error: {config}: {reason}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("text", "reason"), [case for case in PROXY_FIELDS if "controller" in case[0]][:2])
def test_params_check_of_a_file_with_nonsense_names_the_field(capsys, tmp_path, text, reason):
    config = tmp_path / "proxy.toml"
    config.write_text(text)
    code, lines = rnf(capsys, "params", "check", str(config))
    assert (code, len(lines)) == (2, 1) and lines[0].startswith(f"Error: {config}: {reason}")


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--q0", "400000", "--b-max", "300000"], "q0 = 400000 B is not below B_max = 300000 B"),
        (["--q0", "100000"], "B_max is needed to fill in the default eps for q0 in bytes: give --b-max (or eps)"),
        (["--b-max", "0"], "'--b-max': 0 is not in the range x>=1"),
    ],
)
def test_params_check_names_what_is_missing_or_inconsistent(capsys, args, line):
    code, lines = rnf(capsys, "params", "check", *args)
    assert code == 2 and len(lines) == 1 and line in lines[0]
