"""A real InfluxDB for the tests: Debian's influxd (1.6) on loopback, free ports, a temporary data directory."""

import os
import signal
import socket
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from rnf_monitoring.client import InfluxClient, QueryError
from rnf_monitoring.influx import InfluxTarget

START_TIMEOUT_S = 20.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class InfluxServer:
    """One influxd process: started, stopped (SIGSTOP: slow), killed (SIGKILL: down) and started again."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.http_port = free_port()
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.config = directory / "influxdb.conf"
        self.config.write_text(
            f"""reporting-disabled = true
bind-address = "127.0.0.1:{free_port()}"
[meta]
  dir = "{directory / "meta"}"
[data]
  dir = "{directory / "data"}"
  wal-dir = "{directory / "wal"}"
  query-log-enabled = false
[monitor]
  store-enabled = false
[http]
  bind-address = "127.0.0.1:{self.http_port}"
  log-enabled = false
  pprof-enabled = false
[continuous_queries]
  enabled = false
"""
        )
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = (self.directory / "influxd.log").open("ab")
        self.process = subprocess.Popen(
            ["influxd", "run", "-config", str(self.config)], stdout=log, stderr=subprocess.STDOUT
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"influxd exited: {(self.directory / 'influxd.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/ping", timeout=1) as response:
                    if response.status == 204:
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"influxd did not answer on {self.url} within {START_TIMEOUT_S:.0f} s")

    def signal(self, number: int) -> None:
        assert self.process is not None
        os.kill(self.process.pid, number)

    def kill(self) -> None:
        """Down at once, as after a crash: SIGKILL."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def target(self, database: str) -> InfluxTarget:
        return InfluxTarget(self.url, database)

    def client(self, database: str) -> InfluxClient:
        return InfluxClient(self.target(database))


def count(client: InfluxClient, measurement: str, field: str) -> int:
    """Points of a measurement stored so far (0 before the database or the measurement exists)."""
    try:
        series = client.query(f'SELECT count("{field}") FROM "{measurement}"')[0].get("series", [])
    except QueryError as error:
        if "database not found" in str(error):
            return 0
        raise
    return int(series[0]["values"][0][1]) if series else 0


@pytest.fixture(scope="session")
def influxdb(tmp_path_factory):
    """A real InfluxDB for the whole session; each test writes to its own database (`database` fixture)."""
    server = InfluxServer(tmp_path_factory.mktemp("influxdb"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def influxdb_own(tmp_path):
    """An InfluxDB of the test's own, for tests that stop or kill it."""
    server = InfluxServer(tmp_path / "influxdb")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def database():
    return "t_" + uuid.uuid4().hex[:10]


@pytest.fixture
def count_points():
    return count


@pytest.fixture
def unreachable_url():
    """A loopback URL where nothing listens: every request is refused."""
    return f"http://127.0.0.1:{free_port()}"
