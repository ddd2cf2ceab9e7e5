"""`rnf cell` and `rnf trace generate` on bad input: one line naming the input and the reason, exit 2, nothing
written or started."""

from pathlib import Path

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


TRACE_FILES = [
    ("bad.csv", "time_s,rate_mbps\n0,5\n1,\u00b2\n", "bad.csv:3: not a number: '1,\u00b2'"),
    ("bad.csv", "time_s,rate_mbps\n0,5\nnan,3\n", "bad.csv:3: not a finite number: 'nan,3'"),
    ("bad.csv", "time_s,rate_mbps\n0,inf\n1,0\n", "bad.csv:2: not a finite number: '0,inf'"),
    ("bad.csv", "time_s,rate_mbps\n0,5\n4000,0\n", "bad.csv: 4000 s is longer than a trace's 3600 s"),
    ("bad.csv", "time_s,rate_mbps\n0,1e8\n1,0\n", "bad.csv:2: 1e8 is above the trace's maximum, 100000 Mbit/s"),
    ("bad.csv", "tti,bytes\n0,nan\n", "bad.csv:2: not a finite number: '0,nan'"),
    ("bad.csv", "tti,bytes\n0,-inf\n", "bad.csv:2: not a finite number: '0,-inf'"),
    ("bad.csv", "tti,bytes\n0,1e30\n", "bad.csv:2: 1e30 is above the trace's maximum, 4294967294 bytes per TTI"),
    ("bad.trace", "1\n2\n\u00b3\n", "bad.trace:3: expected a whole number of milliseconds, got '\u00b3'"),
    ("bad.trace", "1\n2\n\u0663\n", "bad.trace:3: expected a whole number of milliseconds, got '\u0663'"),
    ("bad.lp", "telemetry,ue=1 sched_new_bytes 1\n", "bad.lp:1: a field without `=`: 'sched_new_bytes'"),
    (
        "bad.lp",
        "telemetry,ue=1 sched_new_bytes=-5i,sched_retx_bytes=0i,period_us=10000i 1\n",
        "bad.lp:1: sched_new_bytes: '-5i' is not a non-negative integer",
    ),
    (
        "bad.lp",
        "telemetry,ue=1 sched_new_bytes=5i,sched_retx_bytes=0i,period_us=10000000000i 1\n",
        "bad.lp:1: the periods add up to more than a trace's 3600 s",
    ),
    (
        "bad.lp",
        "telemetry,ue=1 sched_new_bytes=\u0665i,sched_retx_bytes=0i,period_us=10000i 1\n",
        "bad.lp:1: sched_new_bytes: '\u0665i' is not a non-negative integer",
    ),
]


@pytest.mark.parametrize(("name", "content", "reason"), TRACE_FILES)
def test_trace_show_refuses_a_bad_trace_file_in_one_line(capsys, tmp_path, name, content, reason):
    path = tmp_path / name
    path.write_text(content)
    code, lines = rnf(capsys, "trace", "show", str(path))
    assert (code, lines) == (2, [f"Error: {tmp_path}/{reason}"])


@pytest.mark.parametrize(("name", "content", "reason"), TRACE_FILES)
def test_a_cell_refuses_a_bad_trace_file_before_it_starts(capsys, tmp_path, name, content, reason):
    (tmp_path / name).write_text(content)
    fmt = {".csv": "csv", ".lp": "telemetry"}.get(Path(name).suffix, "mahimahi")
    config = tmp_path / "cell.toml"
    config.write_text(f'[[ues]]\ntrace = {{ file = "{name}", format = "{fmt}" }}\n')
    code, lines = rnf(capsys, "cell", str(config), "--record", str(tmp_path / "out"))
    assert (code, lines) == (2, [f"Error: {config}: ues[0].trace.file: {tmp_path}/{reason}"])
    assert not (tmp_path / "out").exists()


def test_a_cell_refuses_a_start_past_its_trace_file_before_it_starts(capsys, tmp_path):
    (tmp_path / "t.down").write_text("1\n5\n")
    config = tmp_path / "cell.toml"
    config.write_text('[[ues]]\ntrace = { file = "t.down", format = "mahimahi", start_s = 9 }\n')
    code, lines = rnf(capsys, "cell", str(config), "--record", str(tmp_path / "out"))
    reason = f"ues[0].trace.file: {tmp_path}/t.down: start_s = 9 s is at or past the file's end (0.005 s)"
    assert (code, lines) == (2, [f"Error: {config}: {reason}"])
    assert not (tmp_path / "out").exists()


CELL_FIELDS = [
    ('[[ues]]\ntrace = { file = "missing.csv" }\n', "ues[0].trace.file: {tmp}/missing.csv: no such trace file"),
    ("seed = -3\n" + CELL.format(endpoint="tcp://127.0.0.1:5555"), "seed: Input should be greater than or equal to 0"),
    ('[[ues]]\ntrace = { generator = "constant", rate_mbps = 1e8 }\n', "ues[0].trace.rate_mbps: Input should be less"),
    (
        '[[ues]]\ntrace = { generator = "constant", rate_mbps = nan }\n',
        "ues[0].trace.rate_mbps: Input should be a finite",
    ),
    (
        '[[ues]]\ntrace = { generator = "piecewise", min_mbps = 2, max_mbps = 20, period_s = 0.2, duration_s = inf }\n',
        "ues[0].trace.duration_s: Input should be a finite number",
    ),
    (
        '[[ues]]\ntrace = { generator = "onoff", rate_mbps = 5, on_s = 1, off_s = 1e7 }\n',
        "ues[0].trace.off_s: Input should be less than or equal to 3600",
    ),
    (
        '[[ues]]\ntrace = { generator = "constant", rate_mbps = 5 }\nbackhaul_delay_ms = inf\n',
        "ues[0].backhaul_delay_ms: Input should be a finite number",
    ),
    (
        '[[ues]]\ntrace = { generator = "constant", rate_mbps = 5 }\ndelivery_delay_ms = nan\n',
        "ues[0].delivery_delay_ms: Input should be a finite number",
    ),
    (
        '[[ues]]\ntrace = { generator = "constant", rate_mbps = 5 }\ndelivery_delay_ms = -1\n',
        "ues[0].delivery_delay_ms: Input should be greater than or equal to 0",
    ),
    (
        '[[ues]]\ntrace = { generator = "constant", rate_mbps = 5 }\ntrace_start = "first_flow"\n',
        "ues[0].trace_start: Input should be 'cell' or 'first_packet'",
    ),
    (
        '[[ues]]\ntrace = { generator = "constant", rate_mbps = 5 }\noutages = [{ start_s = 1e9, duration_s = 1 }]\n',
        "ues[0].outages[0].start_s: Input should be less than or equal to 3600",
    ),
    (
        '[[ues]]\ntrace = { file = "t.down", format = "mahimahi", start_s = -1 }\n',
        "ues[0].trace.start_s: Input should be greater than or equal to 0",
    ),
    (
        "[wired]\nrate_mbps = -inf\n" + CELL.format(endpoint="tcp://127.0.0.1:5555"),
        "wired.rate_mbps: Input should be a finite number",
    ),
]


@pytest.mark.parametrize(("text", "reason"), CELL_FIELDS)
def test_a_cell_file_with_nonsense_is_one_line_naming_the_field(capsys, tmp_path, text, reason):
    config = tmp_path / "cell.toml"
    config.write_text(text)
    code, lines = rnf(capsys, "cell", str(config), "--record", str(tmp_path / "out"))
    assert code == 2
    assert len(lines) == 1 and f"{config}: {reason.format(tmp=tmp_path)}" in lines[0]
    assert not (tmp_path / "out").exists()
