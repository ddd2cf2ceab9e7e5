"""The monitoring role's InfluxDB setup (roles/monitoring/tasks/influxdb.yml) against a real InfluxDB with
authentication: the admin, the database and the testbed's user are created once, a second run changes nothing, and
the user can write and read its database but nothing more.

The role installs InfluxDB 1.8 from InfluxData's repository (tag `network`), which the chroot convergence skips;
the same InfluxQL and HTTP API are served by Debian's influxd 1.6, which `make` installs, and which this test runs
on loopback with a data folder of its own.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

ANSIBLE_DIR = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ADMIN = ("admin", "admin-secret-1")
USER = ("rnf", "rnf-secret-2")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def influxd(tmp_path: Path) -> Iterator[str]:
    """influxd with authentication on a free loopback port; its URL."""
    port = free_port()
    config = tmp_path / "influxdb.conf"
    config.write_text(
        f"""reporting-disabled = true
bind-address = "127.0.0.1:{free_port()}"
[meta]
  dir = "{tmp_path / "meta"}"
[data]
  dir = "{tmp_path / "data"}"
  wal-dir = "{tmp_path / "wal"}"
[monitor]
  store-enabled = false
[http]
  bind-address = "127.0.0.1:{port}"
  auth-enabled = true
  log-enabled = false
"""
    )
    log = (tmp_path / "influxd.log").open("wb")
    process = subprocess.Popen(["influxd", "run", "-config", str(config)], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            assert process.poll() is None, (tmp_path / "influxd.log").read_text()
            try:
                with urllib.request.urlopen(f"{url}/ping", timeout=1):
                    break
            except OSError:
                assert time.monotonic() < deadline, "influxd did not answer"
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)
        log.close()


def query(url: str, q: str, credentials: tuple[str, str] | None, path: str = "query", **params: str) -> int:
    """An InfluxQL query (or a write, path="write"); the HTTP status, after checking the body has no error."""
    data = q.encode() if path == "write" else urllib.parse.urlencode({"q": q}).encode()
    request = urllib.request.Request(f"{url}/{path}?{urllib.parse.urlencode(params)}", data=data, method="POST")
    if credentials:
        token = base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
            if path == "query":
                assert "error" not in json.loads(body)["results"][0], body
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def run_role_tasks(url: str, directory: Path, name: str) -> str:
    directory.mkdir()
    playbook = directory / "playbook.yml"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Set up InfluxDB as the monitoring role does",
                    "hosts": "localhost",
                    "connection": "local",
                    "gather_facts": False,
                    "vars": {
                        "monitoring_influxdb_url": url,
                        "monitoring_influxdb_admin_user": ADMIN[0],
                        "monitoring_influxdb_admin_password": ADMIN[1],
                        "monitoring_influxdb_user": USER[0],
                        "monitoring_influxdb_password": USER[1],
                        "ansible_python_interpreter": sys.executable,
                    },
                    "tasks": [{"ansible.builtin.include_role": {"name": "monitoring", "tasks_from": "influxdb"}}],
                }
            ]
        )
    )
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg"),
        "ANSIBLE_ROLES_PATH": str(ANSIBLE_DIR / "roles"),
        "ANSIBLE_HOME": str(directory / "ansible-home"),
        "ANSIBLE_NOCOLOR": "1",
    }
    result = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", "localhost,", str(playbook)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{name}:\n{output}"
    return output


def test_influxdb_gets_its_admin_database_and_user_once(influxd: str, tmp_path: Path) -> None:
    assert query(influxd, "SHOW DATABASES", None) == 403  # authentication is on: "create admin user first"

    first = run_role_tasks(influxd, tmp_path / "first", "first run")
    assert re.search(r"changed=2\s+unreachable=0\s+failed=0", first), first  # the admin; the database and its user
    second = run_role_tasks(influxd, tmp_path / "second", "second run")
    assert re.search(r"changed=0\s+unreachable=0\s+failed=0", second), second

    # The testbed's user writes and reads its database; it is no admin.
    assert query(influxd, "cell,ue=1 q=12i", USER, path="write", db="rnf") == 204
    assert query(influxd, 'SELECT "q" FROM "cell"', USER, db="rnf") == 200
    assert query(influxd, 'CREATE DATABASE "other"', USER) == 403
    assert query(influxd, "SHOW USERS", ADMIN) == 200
    assert query(influxd, "SHOW DATABASES", ("rnf", "wrong")) == 401
