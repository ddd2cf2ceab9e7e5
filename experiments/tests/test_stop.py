"""`rnf run` stopped by SIGTERM or SIGINT mid-run: namespaces removed, no process of the run left, the results folder
marked incomplete, and `rnf report` refuses it rather than report a stopped run."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.root
SCENARIOS = Path(__file__).parents[1] / "scenarios"
RNF = Path(sys.executable).parent / "rnf"


def namespaces(prefix: str) -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.startswith(f"{prefix}-")]


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that name `text` (the run's folder: the datapath and traffic clients do)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and proc.name != str(os.getpid()):
            found.append(cmdline)
    return found


def wait_until(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_run_takes_everything_down_and_is_marked_incomplete(tmp_path, signum):
    prefix = "s" + uuid.uuid4().hex[:6]
    port = 5580 + (signum % 10)
    overrides = [
        "duration_s=20",
        "repetitions=1",
        f"cell.namespace_prefix='{prefix}'",
        f"cell.telemetry.endpoint='tcp://127.0.0.1:{port}'",
        "arms=[{name='smvs', kind='proxy', controller={kind='smvs'}}, {name='cubic'}]",
    ]
    output = tmp_path / "results"
    command = [str(RNF), "run", str(SCENARIOS / "proxy-smoke.toml"), "--output", str(output)]
    command += [item for override in overrides for item in ("--set", override)]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Mid-arm: the cell is up and the traffic clients are running (their command lines name the run's folder).
        assert wait_until(
            lambda: any("rnf_experiments.traffic client" in p for p in processes_mentioning(str(output))), 60
        )
        assert len(namespaces(prefix)) >= 4
        time.sleep(1)
        run.send_signal(signum)
        _, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 128 + signum, stderr
    (results,) = output.iterdir()
    assert stderr.splitlines()[-1] == (f"Error: stopped by {signum.name} after 0 of 2 runs; {results} is incomplete"), (
        stderr
    )
    assert "Traceback" not in stderr and "never retrieved" not in stderr
    assert namespaces(prefix) == []
    assert processes_mentioning(str(output)) == []
    (run_folder,) = (results / "runs").iterdir()
    description = json.loads((run_folder / "run.json").read_text())
    assert description["stopped"] == signum.name and "complete" not in description
    stopped = json.loads((results / "metadata.json").read_text())["stopped"]
    assert (stopped["signal"], stopped["runs"], stopped["planned"]) == (signum.name, 0, 2)

    report = subprocess.run([str(RNF), "report", str(results)], capture_output=True, text=True)
    assert report.returncode == 2
    assert report.stderr.splitlines() == [f"Error: {results}: no run completed (0-smvs), nothing to report"]
    assert not (results / "summary.json").exists()
