"""`rnf run --influx`: series reach a real InfluxDB live, and a dying InfluxDB does not stop the run."""

import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.root
DEMO = Path(__file__).parents[2] / "experiments" / "scenarios" / "demo.toml"


def start_run(url: str, output: Path, port: int) -> subprocess.Popen[str]:
    prefix = "m" + uuid.uuid4().hex[:6]
    return subprocess.Popen(
        [sys.executable, "-m", "rnf_cli", "run", str(DEMO), "--set", "duration_s=4", "--set", "arms=[{name='cubic'}]",
         "--set", f"cell.namespace_prefix='{prefix}'", "--set", f"cell.telemetry.endpoint='tcp://127.0.0.1:{port}'",
         "--output", str(output), "--influx", url],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def newest_telemetry_age_s(client) -> float | None:
    try:
        result = client.query('SELECT last("queue_bytes") FROM "telemetry"')[0]
    except Exception:
        return None
    series = result.get("series")
    if not series:
        return None
    return (time.time_ns() - series[0]["values"][0][0]) / 1e9  # the client asks for epoch=ns


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_points_arrive_within_a_second_and_a_killed_influxdb_only_costs_points(influxdb_own, database, tmp_path):
    client = influxdb_own.client(database)
    run = start_run(f"{influxdb_own.url}?db={database}", tmp_path, free_port())
    ages = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(ages) < 5:
        age = newest_telemetry_age_s(client)
        if age is not None:
            ages.append(age)
        time.sleep(0.3)
    assert ages, "no telemetry reached InfluxDB during the run"
    influxdb_own.kill()
    output, _ = run.communicate(timeout=90)
    assert run.returncode == 0, output
    report = [line.strip() for line in output.splitlines() if "InfluxDB, " in line]
    print(f"\nnewest telemetry point in InfluxDB, age at each poll: {', '.join(f'{a:.2f} s' for a in ages)}")
    print("\n".join(report))
    assert min(ages) < 1.0, f"newest point was {min(ages):.2f} s old at best"
    assert "dropped" in output and "InfluxDB, 0-cubic" in output
