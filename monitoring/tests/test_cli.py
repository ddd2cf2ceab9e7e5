"""`rnf record import` and `rnf grafana generate` as a user runs them."""

import json

from click.testing import CliRunner
from rnf_cli.main import cli
from rnf_monitoring import dashboards
from rnf_monitoring.cli import grafana
from rnf_telemetry.record import FileRecorder


def make_results(folder):
    (folder / "runs" / "0-cubic").mkdir(parents=True)
    (folder / "metadata.json").write_text(json.dumps({"scenario": "demo", "started": "2026-11-21T12:00:00+00:00"}))
    recorder = FileRecorder(folder / "runs" / "0-cubic" / "series.lp", {"run": folder.name, "arm": "cubic"})
    for index in range(12):
        recorder.record("flow", {"flow": "ue1-flow1", "ue": "1"}, {"received_bytes": index * 1000}, 10**18 + index)
    recorder.close()


def test_rnf_record_import_loads_a_results_folder(influxdb, database, tmp_path, count_points):
    folder = tmp_path / "20261121-120000-demo"
    make_results(folder)
    result = CliRunner().invoke(
        cli, ["record", "import", str(folder), "--influx", influxdb.url, "--database", database], env={}
    )
    assert result.exit_code == 0, result.output
    assert "20261121-120000-demo: 12 points, 0 summary points" in result.output
    assert count_points(influxdb.client(database), "flow", "received_bytes") == 12


def test_rnf_record_import_names_what_is_wrong_in_one_line(tmp_path, unreachable_url):
    result = CliRunner().invoke(cli, ["record", "import", str(tmp_path), "--influx", unreachable_url], env={})
    assert result.exit_code == 2
    assert result.output.strip() == f"Error: {tmp_path}: not a results folder (no metadata.json)"
    result = CliRunner().invoke(cli, ["record", "import", str(tmp_path), "--influx", "localhost:8086"], env={})
    assert "expected http://HOST:PORT" in result.output


def test_rnf_grafana_generate_writes_the_dashboards_and_rewrites_only_changes(tmp_path):
    result = CliRunner().invoke(grafana, ["generate", "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(dashboards.DASHBOARDS)
    assert "3 changed" in result.output
    result = CliRunner().invoke(grafana, ["generate", "--output", str(tmp_path)])
    assert "0 changed" in result.output
