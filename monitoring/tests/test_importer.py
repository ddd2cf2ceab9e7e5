"""A results folder into a real InfluxDB: the series as recorded, the summary as the `summary` measurement."""

import json
import math

import pytest
from rnf_foundation.errors import UserError
from rnf_monitoring.importer import import_results, read_batches, summary_lines, time_ns
from rnf_telemetry.record import FileRecorder

RUN = "20261121-120000-demo"
STARTED = "2026-11-21T12:00:00.250000+00:00"
STARTED_NS = 1_795_262_400_250_000_000


def summary_run(arm: str, repetition: int, utilization: float) -> dict:
    return {
        "arm": arm,
        "repetition": repetition,
        "duration_s": 3.0,
        "utilization": utilization,
        "goodput_mbps": 9.5,
        "queue_p50_bytes": 12000.0,
        "queue_p95_bytes": 80000.0,
        "delay_p50_ms": 40.0,
        "delay_p95_ms": 95.5,
        "rlc_drops_sdus": 0,
        "jain_fairness": math.nan,
        "flows": 1,
        "flows_complete": 1,
        "ues": {"1": {"utilization": utilization}},
    }


@pytest.fixture
def results(tmp_path):
    """A results folder as `rnf run` writes it: two arms of 3000 telemetry points each, and a summary."""
    folder = tmp_path / RUN
    metadata = {"scenario": "demo", "started": STARTED, "scenario_data": {"cell": {"kind": "virtual"}}}
    (folder / "runs").mkdir(parents=True)
    (folder / "metadata.json").write_text(json.dumps(metadata))
    for arm, offset in (("cubic", 0), ("bbr", 10**10)):
        directory = folder / "runs" / f"0-{arm}"
        directory.mkdir()
        tags = {"run": RUN, "scenario": "demo", "arm": arm, "repetition": "0", "cell_kind": "virtual"}
        recorder = FileRecorder(directory / "series.lp", tags)
        for index in range(3000):
            time = STARTED_NS + offset + index * 10_000_000
            recorder.record("telemetry", {"ue": "1"}, {"queue_bytes": index, "outage": False}, time)
        recorder.close()
    summary = {"scenario": "demo", "runs": [summary_run("cubic", 0, 0.91), summary_run("bbr", 0, 0.97)]}
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def test_times_with_an_offset_become_nanoseconds():
    assert time_ns(STARTED) == STARTED_NS
    with pytest.raises(ValueError, match="no UTC offset"):
        time_ns("2026-11-21T12:00:00")


def test_the_summary_becomes_one_point_per_arm_and_repetition_with_fixed_types():
    metadata = {"started": STARTED, "scenario_data": {"cell": {"kind": "virtual"}}}
    lines = summary_lines(RUN, metadata, {"scenario": "demo", "runs": [summary_run("cubic", 2, 0.5)]})
    assert lines == [
        f"summary,arm=cubic,cell_kind=virtual,repetition=2,run={RUN},scenario=demo "
        "duration_s=3.0,utilization=0.5,goodput_mbps=9.5,queue_p50_bytes=12000.0,queue_p95_bytes=80000.0,"
        "delay_p50_ms=40.0,delay_p95_ms=95.5,rlc_drops_sdus=0i,flows=1i,flows_complete=1i "
        f"{STARTED_NS}"
    ]


def test_files_are_read_in_batches_that_account_for_every_byte(results):
    path = results / "runs" / "0-cubic" / "series.lp"
    batches = list(read_batches(path, size=1000))
    assert [len(batch) for batch, _ in batches] == [1000, 1000, 1000]
    assert sum(size for _, size in batches) == path.stat().st_size


def test_a_results_folder_is_imported_with_its_tags_and_summary(influxdb, database, results, count_points):
    client = influxdb.client(database)
    progress = []
    report = import_results(client, results, lambda size, points: progress.append(points))
    assert (report.series_points, report.summary_points, report.rejected) == (6000, 2, 0)
    assert sum(progress) == 6000
    assert count_points(client, "telemetry", "queue_bytes") == 6000
    series = client.query(f'SELECT max("queue_bytes") FROM "telemetry" WHERE "run" = \'{RUN}\' GROUP BY "arm"')
    assert {s["tags"]["arm"]: s["values"][0][1] for s in series[0]["series"]} == {"cubic": 2999, "bbr": 2999}
    summary = client.query('SELECT "utilization", "rlc_drops_sdus" FROM "summary" GROUP BY "arm", "run"')[0]
    assert {s["tags"]["arm"]: s["values"] for s in summary["series"]} == {
        "bbr": [[STARTED_NS, 0.97, 0]],
        "cubic": [[STARTED_NS, 0.91, 0]],
    }


def test_importing_twice_stores_nothing_twice(influxdb, database, results, count_points):
    client = influxdb.client(database)
    import_results(client, results)
    import_results(client, results)
    assert count_points(client, "telemetry", "queue_bytes") == 6000
    assert count_points(client, "summary", "utilization") == 2


def test_a_folder_that_is_not_a_results_folder_is_a_user_error(influxdb, database, tmp_path):
    with pytest.raises(UserError, match="not a results folder"):
        import_results(influxdb.client(database), tmp_path)
