"""`rnf report` and `rnf model` on bad input: one line naming the file or option, exit 2, nothing rewritten; runs
the runner did not mark complete are left out and named."""

import json
from pathlib import Path

import pytest
from rnf_cli.main import main

TRACE = '{ generator = "piecewise", min_mbps = 2, max_mbps = 20, period_s = 0.2 }'
OLD_SUMMARY = '{"runs": ["the summary of an earlier report"]}\n'
GOOD_FLOW = {"flow": "f", "kind": "bulk", "ue": 1, "start_ns": 5_000_000, "last_byte_ns": 300_000_000}
GOOD_FLOW |= {"received_bytes": 300_000, "requested_bytes": 0, "complete": True, "error": ""}
GOOD_FLOW |= {"progress": [[100_000_000, 90_000], [300_000_000, 300_000]]}


def rnf(capsys, *args: str) -> tuple[int, list[str]]:
    code, err, _ = rnf_output(capsys, *args)
    return code, err.splitlines()


def rnf_output(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    captured = capsys.readouterr()
    return exit_info.value.code, captured.err, captured.out


def results_folder(root: Path, name: str = "results", complete: bool = True) -> Path:
    """A small results folder as the runner leaves it: one run of arm `cubic`, with a summary of an earlier report."""
    folder = root / name
    run = folder / "runs" / "0-cubic"
    (run / "flows").mkdir(parents=True)
    (folder / "metadata.json").write_text(
        json.dumps({"scenario": "demo", "scenario_data": {"arms": [{"name": "cubic"}]}})
    )
    (run / "run.json").write_text(json.dumps({"arm": "cubic", "repetition": 0, "sweep": None} | {"complete": complete}))
    fields = "capacity_bytes=10000i,delivered_bytes=9000i,sched_new_bytes=9000i,sched_retx_bytes=0i"
    (run / "series.lp").write_text(
        "".join(
            f"cell,ue=1 {fields},queue_new_bytes={i}i,queue_retx_bytes=0i,dropped_sdus=0i {i * 10_000_000}\n"
            for i in range(1, 40)
        )
    )
    (run / "flows" / "f.json").write_text(json.dumps(GOOD_FLOW))
    (folder / "summary.json").write_text(OLD_SUMMARY)
    return folder


def _write(relative: str, content: str | bytes | None):
    """A change to the results folder: a file's new content, None to delete it, a directory where a file was."""

    def change(folder: Path) -> None:
        path = folder / relative
        if content is None:
            path.unlink()
        elif content == "DIRECTORY":
            path.unlink()
            path.mkdir()
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)

    return change


def _empty_runs(folder: Path) -> None:
    for path in sorted((folder / "runs").rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()


CORRUPTIONS = [
    (_write("metadata.json", "{"), "metadata.json: not valid JSON"),
    (_write("metadata.json", b"\xff\xfe{}"), "metadata.json: not UTF-8 text"),
    (_write("metadata.json", "DIRECTORY"), "metadata.json: cannot read: Is a directory"),
    (_write("metadata.json", '{"scenario": "demo"}'), "metadata.json: no 'scenario_data'"),
    (_write("metadata.json", '{"scenario": "demo", "scenario_data": {}}'), "metadata.json: scenario_data.arms is not"),
    (_write("metadata.json", "[1]"), "metadata.json: not a JSON object"),
    (_write("runs/0-cubic/run.json", None), "runs/0-cubic/run.json: no such file"),
    (_write("runs/0-cubic/run.json", "{"), "runs/0-cubic/run.json: not valid JSON"),
    (_write("runs/0-cubic/run.json", '{"arm": "cubic"}'), "runs/0-cubic/run.json: no 'repetition'"),
    (
        _write("runs/0-cubic/run.json", '{"arm": "reno", "repetition": 0, "sweep": null}'),
        "runs/0-cubic/run.json: arm 'reno' is not an arm of",
    ),
    (
        _write("runs/0-cubic/run.json", '{"arm": "cubic", "repetition": "x", "sweep": null}'),
        "runs/0-cubic/run.json: repetition is not a number",
    ),
    (_write("runs/0-cubic/flows/f.json", "{}"), "runs/0-cubic/flows/f.json: flow: Field required (and 9 more)"),
    (_write("runs/0-cubic/flows/f.json", "DIRECTORY"), "runs/0-cubic/flows/f.json: cannot read: Is a directory"),
    (
        _write("runs/0-cubic/flows/f.json", json.dumps(GOOD_FLOW | {"start_ns": "5000000"})),
        "runs/0-cubic/flows/f.json: start_ns: Input should be a valid integer",
    ),
    (
        _write("runs/0-cubic/flows/f.json", json.dumps(GOOD_FLOW | {"kind": "ftp"})),
        "runs/0-cubic/flows/f.json: kind: Input should be 'bulk', 'upload' or 'web'",
    ),
    (
        _write("runs/0-cubic/flows/f.json", json.dumps(GOOD_FLOW | {"progress": {"1": 2}})),
        "runs/0-cubic/flows/f.json: progress: Input should be a valid list",
    ),
    (
        _write("runs/0-cubic/flows/f.json", json.dumps(GOOD_FLOW | {"progress": [[2, 10], [1, 20]]})),
        "runs/0-cubic/flows/f.json: progress: report 1, at 1 ns, comes before the one before it (2 ns)",
    ),
    (
        _write("runs/0-cubic/flows/f.json", json.dumps(GOOD_FLOW | {"progress": [[2, "10"]]})),
        "runs/0-cubic/flows/f.json: progress[0][1]: Input should be a valid integer",
    ),
    (
        _write("runs/0-cubic/flows/f.json", json.dumps(GOOD_FLOW | {"progress": [[2]]})),
        "runs/0-cubic/flows/f.json: progress[0]: List should have at least 2 items",
    ),
    (_write("runs/0-cubic/series.lp", None), "runs/0-cubic/series.lp: no such file"),
    (_write("runs/0-cubic/series.lp", b"cell,ue=1 \xff 1\n"), "runs/0-cubic/series.lp: not UTF-8 text"),
    (_write("runs/0-cubic/series.lp", "cell,ue=1 garbage\n"), "runs/0-cubic/series.lp: not valid line protocol"),
    (_write("runs/0-cubic/series.lp", "cell,ue=1 a=1i 1\n"), "runs/0-cubic/series.lp: a cell point has no 'capacity"),
    (_write("runs/0-cubic/netstat.json", "{"), "runs/0-cubic/netstat.json: not valid JSON"),
    (
        _write("runs/0-cubic/netstat.json", '{"server": {"rto": "2"}}'),
        "runs/0-cubic/netstat.json: server.rto: Input should be a valid integer",
    ),
    (
        _write("runs/0-cubic/netstat.json", '{"server": 3}'),
        "runs/0-cubic/netstat.json: server: Input should be a valid",
    ),
    (
        _write("runs/0-cubic/cell-summary.json", '{"tti_lateness_ns": {"max": "5"}}'),
        "runs/0-cubic/cell-summary.json: tti_lateness_ns.max: Input should be a valid integer",
    ),
    (
        _write("runs/0-cubic/cell-summary.json", '{"delay": {"lost": -1}}'),
        "runs/0-cubic/cell-summary.json: delay.lost: Input should be greater than or equal to 0",
    ),
    (_empty_runs, "runs: no runs, nothing to report"),
]


@pytest.mark.parametrize(("corrupt", "reason"), CORRUPTIONS)
def test_report_on_a_corrupt_folder_is_one_line_and_rewrites_nothing(capsys, tmp_path, corrupt, reason):
    good, bad = results_folder(tmp_path, "good"), results_folder(tmp_path, "bad")
    corrupt(bad)
    code, lines = rnf(capsys, "report", str(good), str(bad))
    assert code == 2
    assert len(lines) == 1 and f"{bad}/{reason}" in lines[0]
    for folder in (good, bad):
        assert (folder / "summary.json").read_text() == OLD_SUMMARY
        assert not (folder / "plots").exists()


def test_a_run_without_the_completion_mark_is_left_out_and_named(capsys, tmp_path):
    folder = results_folder(tmp_path)
    rnf(capsys, "report", str(folder))
    complete = json.loads((folder / "summary.json").read_text())
    assert [run["arm"] for run in complete["runs"]] == ["cubic"] and complete["incomplete"] == []
    (folder / "runs" / "1-cubic").mkdir()
    for name in ("run.json", "series.lp"):
        (folder / "runs" / "1-cubic" / name).write_text((folder / "runs" / "0-cubic" / name).read_text())
    description = json.loads((folder / "runs" / "1-cubic" / "run.json").read_text())
    (folder / "runs" / "1-cubic" / "run.json").write_text(
        json.dumps(description | {"repetition": 1, "complete": False})
    )
    code, _, out = rnf_output(capsys, "report", str(folder))
    summary = json.loads((folder / "summary.json").read_text())
    assert code == 0
    assert summary["incomplete"] == ["1-cubic"] and len(summary["runs"]) == 1
    assert summary["arms"]["cubic"]["repetitions"] == 1
    assert "runs/1-cubic: the run did not complete" in out


def test_a_folder_without_a_completed_run_is_refused(capsys, tmp_path):
    folder = results_folder(tmp_path, complete=False)
    code, lines = rnf(capsys, "report", str(folder))
    assert code == 2
    assert lines == [f"Error: {folder}: no run completed (0-cubic), nothing to report"]
    assert (folder / "summary.json").read_text() == OLD_SUMMARY


MEASURED_CORRUPTIONS = [
    (_write("summary.json", None), "summary.json: no such file"),
    (_write("summary.json", "{"), "summary.json: not valid JSON"),
    (_write("summary.json", b"\xff"), "summary.json: not UTF-8 text"),
    (_write("summary.json", "{}"), "summary.json: no 'arms'"),
    (_write("summary.json", '{"arms": {"cubic": {}}}'), "summary.json: arms.cubic.goodput_mbps is not a number"),
    (_write("summary.json", "DIRECTORY"), "summary.json: cannot read: Is a directory"),
    (_write("metadata.json", '{"scenario_data": 1}'), "metadata.json: scenario_data.arms is not"),
    (_write("runs/0-cubic/series.lp", "cell,ue=1 x\n"), "runs/0-cubic/series.lp: not valid line protocol"),
    (_write("runs/0-cubic/series.lp", "cell,ue=1 a=1i 1\n"), "runs/0-cubic/series.lp: a cell point has no valid"),
]


@pytest.mark.parametrize(("corrupt", "reason"), MEASURED_CORRUPTIONS)
def test_model_measured_on_a_corrupt_folder_is_one_line(capsys, tmp_path, corrupt, reason):
    folder = results_folder(tmp_path)
    (folder / "summary.json").write_text(json.dumps({"arms": {"cubic": {"goodput_mbps": 5.0}}}))
    corrupt(folder)
    code, lines = rnf(capsys, "model", TRACE, "--duration", "2", "--measured", str(folder))
    assert code == 2
    assert len(lines) == 1 and f"{folder}/{reason}" in lines[0]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--rtt-ms", "nan"),
        ("--rtt-ms", "inf"),
        ("--rto-ms", "-inf"),
        ("--sample", "nan"),
        ("--duration", "inf"),
        ("--duration", "nan"),
        ("--seed", "-3"),
    ],
)
def test_model_refuses_nan_infinity_and_negative_seeds_by_type(capsys, option, value):
    code, lines = rnf(capsys, "model", TRACE, option, value)
    assert code == 2
    assert len(lines) == 1 and f"'{option}'" in lines[0] and value in lines[0]


SCENARIOS = Path(__file__).parents[1] / "scenarios"
DEMO = SCENARIOS / "demo.toml"
RUN_OVERRIDES = [
    ("seed=-3", "seed: Input should be greater than or equal to 0"),
    ("duration_s=nan", "duration_s: Input should be a finite number"),
    ("duration_s=inf", "duration_s: Input should be a finite number"),
    ("cell.ues.0.trace.duration_s=inf", "cell.ues[0].trace.duration_s: Input should be a finite number"),
    ("cell.ues.0.trace.period_s=nan", "cell.ues[0].trace.period_s: Input should be a finite number"),
    ("cell.ues.0.backhaul_delay_ms=inf", "cell.ues[0].backhaul_delay_ms: Input should be a finite number"),
    ("traffic.0.start_s=nan", "traffic[0].start_s: Input should be a finite number"),
    ("cell.seed=-1", "cell.seed: Input should be greater than or equal to 0"),
    (
        "cell.ues.0.trace={generator='constant', rate_mbps=1e8}",
        "cell.ues[0].trace.rate_mbps: Input should be less than or equal to 100000",
    ),
    (
        "cell.ues.0.outages=[{start_s=1e9, duration_s=1}]",
        "cell.ues[0].outages[0].start_s: Input should be less than or equal to 3600",
    ),
    ("arms.0.controller={kind='smvs', ts_s=inf}", "controller.smvs.ts_s: Input should be a finite number"),
    (
        "cell.ues.0.queue_discipline={kind='codel', target_ms=200, interval_ms=100}",
        "cell.ues[0].queue_discipline: target_ms must be below interval_ms",
    ),
    (
        "cell.ues.0.queue_discipline={kind='mark', threshold_ms=-1}",
        "cell.ues[0].queue_discipline.threshold_ms: Input should be greater than or equal to 0.001",
    ),
    (
        "arms.0.queue_discipline={kind='codel', target_ms=-5}",
        "arms[0].queue_discipline.target_ms: Input should be greater than or equal to 0.001",
    ),
    (
        "arms.0.queue_discipline={kind='codel', target_ms=100, interval_ms=100}",
        "arms[0].queue_discipline: target_ms must be below interval_ms",
    ),
    ("arms.0.queue_discipline={kind='mark', threshold_ms=0}", "arms[0].queue_discipline.threshold_ms: Input should"),
    # `mark` measures the UE's served rate itself: a rate given to it is refused, not ignored
    (
        "arms.0.queue_discipline={kind='mark', rate_mbps=10}",
        "arms[0].queue_discipline.rate_mbps: Extra inputs are not permitted",
    ),
    ("arms.0.queue_discipline={kind='red'}", "arms[0].queue_discipline: a queue discipline needs `kind = "),
    # the demo cell's UEs drop at the tail only: nothing would ever mark
    ("arms.0.ecn=true", "arms[0].ecn: the arm's virtual cell cannot mark (no UE has a queue discipline other"),
    ("arms.0.ecn=3", "arms[0].ecn: Input should be a valid boolean"),
    # DCTCP's receiver must run it too, and the proxy's socket toward the server does not
    (
        "arms=[{name='d', kind='proxy', controller={kind='itcp'}, cc='dctcp'}]",
        "arms[0].cc: 'dctcp' needs its receiver to run it too",
    ),
]


def _no_results(output: Path) -> bool:
    return not output.exists()


@pytest.mark.parametrize(("override", "reason"), RUN_OVERRIDES)
def test_run_refuses_nonsense_in_one_line_before_writing(capsys, tmp_path, override, reason):
    if override.startswith("arms.0.controller"):
        override = "arms=[{name='smvs', kind='proxy', controller={kind='smvs', ts_s=inf}}]"
    output = tmp_path / "out"
    code, lines = rnf(capsys, "run", str(DEMO), "--set", override, "--output", str(output))
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(f"Error: {DEMO} (with --set {override}): ") and reason in lines[0]
    assert _no_results(output)


def _scenario_with_trace(folder: Path, name: str, content: str | None, fmt: str = "csv") -> Path:
    if content is not None:
        (folder / name).write_text(content)
    scenario = folder / "scenario.toml"
    text = DEMO.read_text().replace(
        'trace = { generator = "piecewise", min_mbps = 2, max_mbps = 20, period_s = 0.2, duration_s = 60 }',
        f'trace = {{ file = "{name}", format = "{fmt}" }}',
    )
    assert f'file = "{name}"' in text
    scenario.write_text(text)
    return scenario


@pytest.mark.parametrize(
    ("name", "content", "fmt", "reason"),
    [
        ("missing.csv", None, "csv", "cell.ues[0].trace.file: {tmp}/missing.csv: no such trace file"),
        ("t.csv", "time_s,rate_mbps\n0,5\n1,\u00b2\n", "csv", "cell.ues[0].trace.file: {tmp}/t.csv:3: not a number"),
        ("t.csv", "time_s,rate_mbps\n0,5\nnan,3\n", "csv", "cell.ues[0].trace.file: {tmp}/t.csv:3: not a finite"),
        ("t.lp", "telemetry,ue=1 sched_new_bytes 1\n", "telemetry", "{tmp}/t.lp:1: a field without `=`"),
        ("t.down", "1\n\u0663\n", "mahimahi", "{tmp}/t.down:2: expected a whole number of milliseconds"),
    ],
)
def test_run_reads_every_trace_file_before_writing(capsys, tmp_path, name, content, fmt, reason):
    scenario = _scenario_with_trace(tmp_path, name, content, fmt)
    output = tmp_path / "out"
    code, lines = rnf(capsys, "run", str(scenario), "--output", str(output))
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(f"Error: {scenario}: ") and reason.format(tmp=tmp_path) in lines[0]
    assert _no_results(output)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "cell.ues[0].uplink_trace.file: {tmp}/up.csv: no such trace file"),
        ("time_s,bytes\n0.1,-5\n0.2,\n", "cell.ues[0].uplink_trace.file: {tmp}/up.csv:2: bytes must be a whole"),
    ],
)
def test_run_reads_the_uplink_trace_before_writing(capsys, tmp_path, content, reason):
    scenario = _scenario_with_trace(tmp_path, "t.csv", "time_s,rate_mbps\n0,5\n1,5\n", "csv")
    text = scenario.read_text().replace('format = "csv" }', 'format = "csv" }\nuplink_trace = { file = "up.csv" }', 1)
    scenario.write_text(text)
    if content is not None:
        (tmp_path / "up.csv").write_text(content)
    output = tmp_path / "out"
    code, lines = rnf(capsys, "run", str(scenario), "--output", str(output))
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(f"Error: {scenario}: ") and reason.format(tmp=tmp_path) in lines[0]
    assert _no_results(output)


def test_a_missing_fetched_trace_names_the_script_that_fetches_it(capsys, tmp_path):
    scenario = _scenario_with_trace(tmp_path, "traces/lte.down", None, "mahimahi")
    (tmp_path / "fetch-traces.sh").write_text("#!/bin/sh\n")
    output = tmp_path / "out"
    code, lines = rnf(capsys, "run", str(scenario), "--output", str(output))
    assert (code, lines) == (
        2,
        [
            f"Error: {scenario}: cell.ues[0].trace.file: {tmp_path}/traces/lte.down: no such trace file "
            f"({tmp_path}/fetch-traces.sh fetches the traces)"
        ],
    )
    assert _no_results(output)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--set", "name.x.y=1"], "Error: --set name.x.y: name is a string in {demo}, not a table"),
        (["--set", "duration_s.x=1"], "Error: --set duration_s.x: duration_s is a number in {demo}, not a table"),
        (["--set", "arms.x.cc=bbr"], "Error: --set arms.x.cc: arms.x is not an index of {demo}"),
        (["--set", "arms.\u0661.cc=bbr"], "Error: --set arms.\u0661.cc: arms.\u0661 is not an index of {demo}"),
        (
            ["--set", "sweep={parameter='p', keys=['name.x'], values=[1]}"],
            "Error: sweep key name.x: name is a string in {demo} (with --set sweep={parameter='p', keys=['name.x'], "
            "values=[1]}) (sweep p = 1), not a table",
        ),
        (["--output", "{tmp}/file/out"], "Error: --output {tmp}/file/out: cannot create {tmp}/file/out/"),
    ],
)
def test_run_names_a_bad_key_or_output(capsys, tmp_path, args, line):
    (tmp_path / "file").write_text("a file, not a folder")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "--output" not in args:
        args += ["--output", str(tmp_path / "out")]
    code, lines = rnf(capsys, "run", str(DEMO), *args)
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(line.replace("{demo}", str(DEMO)).replace("{tmp}", str(tmp_path)))
    assert not (tmp_path / "out").exists() and (tmp_path / "file").read_text() == "a file, not a folder"


def test_a_srsran_scenario_without_a_build_is_refused_before_writing(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("SRSRAN_BUILD", raising=False)
    scenario = SCENARIOS / "srsran-smvs.toml"
    code, lines = rnf(capsys, "run", str(scenario), "--output", str(tmp_path / "out"))
    assert (code, lines) == (
        2,
        [
            f"Error: {scenario}: cell.kind: 'srsran' needs a patched srsRAN build: SRSRAN_BUILD is not set "
            "(a srsRAN_4G build with the enb-patches series applied)"
        ],
    )
    assert _no_results(tmp_path / "out")


@pytest.mark.parametrize("scenario", ["srsran-smvs.toml", "srsran-zmq-smvs.toml"])
def test_model_of_a_srsran_scenario_is_one_line(capsys, scenario):
    code, lines = rnf(capsys, "model", "--scenario", str(SCENARIOS / scenario))
    assert code == 2
    assert len(lines) == 1 and "cell.kind: a 'srsran" in lines[0] and "has no capacity trace to model" in lines[0]


def test_model_of_a_scenario_with_a_bad_trace_names_file_and_field(capsys, tmp_path):
    scenario = _scenario_with_trace(tmp_path, "t.csv", "time_s,rate_mbps\n0,5\nnan,3\n")
    code, lines = rnf(capsys, "model", "--scenario", str(scenario))
    line = f"Error: {scenario}: cell.ues[0].trace.file: {tmp_path}/t.csv:3: not a finite number: 'nan,3'"
    assert (code, lines) == (2, [line])


@pytest.mark.parametrize(
    ("option", "value", "reason"),
    [
        ("--duration", "1e7", "10000000.0 is not in the range 0<x<=3600"),
        ("--ue", "2", "--ue 2: the cell has 1 UE(s)"),
        ("--buffer-bytes", "0", "0 is not in the range x>=1"),
    ],
)
def test_model_refuses_out_of_range_options(capsys, option, value, reason):
    code, lines = rnf(capsys, "model", TRACE, option, value)
    assert (code, len(lines)) == (2, 1) and reason in lines[0]


def test_run_reads_the_traces_of_every_sweep_point_before_writing(capsys, tmp_path):
    scenario = _scenario_with_trace(tmp_path, "good.csv", "time_s,rate_mbps\n0,5\n1,0\n")
    (tmp_path / "bad.csv").write_text("time_s,rate_mbps\n0,5\n1,inf\n")
    with scenario.open("a") as handle:
        handle.write(
            '\n[sweep]\nparameter = "trace"\nkeys = ["cell.ues.0.trace.file"]\nvalues = ["good.csv", "bad.csv"]\n'
        )
    output = tmp_path / "out"
    code, lines = rnf(capsys, "run", str(scenario), "--output", str(output))
    assert (code, lines) == (
        2,
        [
            f"Error: {scenario} (sweep trace = '{tmp_path}/bad.csv'): cell.ues[0].trace.file: "
            f"{tmp_path}/bad.csv:3: not a finite number: '1,inf'"
        ],
    )
    assert _no_results(output)


@pytest.mark.parametrize(
    ("override", "reason"),
    [
        (
            "arms.0.queue_discipline={kind='mark'}",
            "arms[0].queue_discipline: the srsran cell has no queue discipline to set",
        ),
        ("arms.0.ecn=true", "arms[0].ecn: the arm's srsran cell cannot mark (srsenb has no queue discipline)"),
        ("arms.0.ack_regulator={}", "arms[0].ack_regulator: the srsran cell has no ACK Regulator"),
        ("arms.0.ack_regulator={max_hold_rtts=0}", "ack_regulator.max_hold_rtts: Input should be greater than 0"),
    ],
)
def test_an_arm_cannot_give_srsenb_a_queue_discipline_or_ecn_marks(capsys, tmp_path, override, reason):
    scenario = SCENARIOS / "srsran-smvs.toml"
    output = tmp_path / "out"
    code, lines = rnf(capsys, "run", str(scenario), "--set", override, "--output", str(output))
    assert code == 2
    assert (
        len(lines) == 1 and lines[0].startswith(f"Error: {scenario} (with --set {override}): ") and reason in lines[0]
    )
    assert _no_results(output)


SUMMARY_FIELDS = [
    ('{"arms": {"cubic": {"utilization": "99 %"}}}', "arms.cubic.utilization: Input should be a valid number"),
    ('{"arms": {"cubic": {"delay_p95_ms": [1]}}}', "arms.cubic.delay_p95_ms: Input should be a valid number"),
    ('{"arms": ["cubic"]}', "arms: Input should be a valid dictionary"),
    ('{"scenario": 5, "arms": {}}', "scenario: Input should be a valid string"),
]


@pytest.mark.parametrize(("text", "reason"), SUMMARY_FIELDS)
@pytest.mark.parametrize("command", ["frontier", "calibrate"])
def test_a_summary_read_back_names_the_field_that_is_wrong(capsys, tmp_path, command, text, reason):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "summary.json").write_text(text)
    if command == "frontier":
        code, lines = rnf(capsys, "frontier", TRACE, "--results", str(folder))
    else:
        code, lines = rnf(capsys, "calibrate", str(folder), "--check", str(folder))
    assert code == 2
    assert lines == [f"Error: {folder}/summary.json: {reason}"]
