"""`rnf cell` and `rnf trace generate` on bad input: one line naming the input and the reason, exit 2, nothing
written or started."""

import pytest
from rnf_cli.main import main

CELL = """
[telemetry]
endpoint = "{endpoint}"

[[ues]]
trace = {{ generator = "piecewise", min_mbps = 2, max_mbps = 20, period_s = 0.2 }}
"""
ENDPOINTS = [
    ("tcp://127.0.0.1:99999", "port 99999 is above 65535"),
    ("tcp://127.0.0.1:-1", "port '-1' is not a number"),
    ("-1", "is not a ZeroMQ endpoint"),
    ("foo://bar", "is not a ZeroMQ endpoint"),
    ("", "is not a ZeroMQ endpoint"),
    ("garbage", "is not a ZeroMQ endpoint"),
    ("tcp://127.0.0.1", "needs HOST:PORT"),
]


def rnf(capsys, *args: str) -> tuple[int, list[str]]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    return exit_info.value.code, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize(("endpoint", "reason"), ENDPOINTS)
def test_a_bad_telemetry_endpoint_in_a_cell_file_is_refused(capsys, tmp_path, endpoint, reason):
    config = tmp_path / "cell.toml"
    config.write_text(CELL.format(endpoint=endpoint))
    code, lines = rnf(capsys, "cell", str(config), "--record", str(tmp_path / "out"))
    assert code == 2
    assert len(lines) == 1 and f"{config}: telemetry.endpoint: {endpoint!r}" in lines[0] and reason in lines[0]
    assert not (tmp_path / "out").exists()


GOOD = ["--min-mbps", "1", "--max-mbps", "5", "--period", "0.1", "--duration", "1"]


def _with(option: str, value: str) -> list[str]:
    args = list(GOOD)
    if option in args:
        args[args.index(option) + 1] = value
    else:
        args += [option, value]
    return args


@pytest.mark.parametrize(
    ("option", "value", "reason"),
    [
        ("--min-mbps", "nan", "'nan' is not a finite number"),
        ("--max-mbps", "inf", "'inf' is not a finite number"),
        ("--max-mbps", "-inf", "'-inf' is not a finite number"),
        ("--min-mbps", "-1", "-1.0 is not in the range x>=0"),
        ("--period", "nan", "'nan' is not a finite number"),
        ("--duration", "inf", "'inf' is not a finite number"),
        ("--duration", "1e7", "is not in the range 0.001<=x<=3600"),
        ("--seed", "-3", "-3 is not in the range x>=0"),
        ("--min-mbps", "9", "--min-mbps 9 is above --max-mbps 5"),
    ],
)
def test_trace_generate_refuses_bad_numbers(capsys, tmp_path, option, value, reason):
    output = tmp_path / "trace.csv"
    code, lines = rnf(capsys, "trace", "generate", str(output), *_with(option, value))
    assert code == 2
    assert len(lines) == 1 and reason in lines[0] and (option in lines[0] or option == "--min-mbps")
    assert not output.exists()


def test_trace_generate_into_a_missing_folder_names_it(capsys, tmp_path):
    output = tmp_path / "missing" / "trace.csv"
    code, lines = rnf(capsys, "trace", "generate", str(output), *GOOD)
    assert (code, lines) == (2, [f"Error: {output}: No such file or directory"])
    assert list(tmp_path.iterdir()) == []
