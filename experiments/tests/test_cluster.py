"""A study on a real Dask cluster on 127.0.0.1: `dask scheduler` and two `rnf worker` processes, tiny scenarios on the
virtual cell. Blocks run once each, paired and in rotated order on one worker, never two at once on a worker; a
required resource steers them; a worker killed mid-block and a client killed mid-study lose nothing. On TLS, with
certificates from a CA made here, a study runs, and a client without them or with another CA's is turned away."""

import itertools
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from distributed import Client
from rnf_experiments import blocks, report
from rnf_experiments.runner import run_scenario
from rnf_experiments.scenario import load_scenario

pytestmark = pytest.mark.root
RNF = [sys.executable, "-m", "rnf_cli"]
DASK = str(Path(sys.executable).with_name("dask"))
START_S = 60.0
SCENARIO = """
name = "cluster"
duration_s = {duration}
repetitions = {repetitions}
seed = 3

[cell]
kind = "virtual"

[[cell.ues]]
trace = {{ file = "trace.mahi", format = "mahimahi" }}
backhaul_delay_ms = 5
uplink_delay_ms = 5

[[arms]]
name = "cubic"

[[arms]]
name = "bbr"
cc = "bbr"
"""
SWEEP = """
[sweep]
parameter = "delay"
keys = ["cell.ues.0.backhaul_delay_ms"]
values = [5, 15]
"""


@dataclass
class Worker:
    process: subprocess.Popen
    address: str
    tmpdir: Path


@dataclass
class Cluster:
    address: str
    scheduler: subprocess.Popen
    workers: list[Worker]

    def stop(self) -> None:
        for process in [w.process for w in self.workers] + [self.scheduler]:
            if process.poll() is None:
                process.terminate()
        for process in [w.process for w in self.workers] + [self.scheduler]:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := predicate():
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def start_cluster(root: Path, resources: list[str | None], tls: list[str] | None = None) -> Cluster:
    """A `dask scheduler` on 127.0.0.1 and an `rnf worker` per entry of `resources`; with `tls` (the --tls-* options
    of a node's certificates), on tls:// with those certificates, the scheduler's and the workers' alike."""
    root.mkdir(parents=True, exist_ok=True)
    scheduler_file = root / "scheduler.json"
    scheduler = subprocess.Popen(
        [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--no-show",
         "--scheduler-file", str(scheduler_file), *(["--protocol", "tls", *tls] if tls else [])],
        stdout=subprocess.DEVNULL, stderr=(root / "scheduler.log").open("wb"),
    )  # fmt: skip
    cluster = Cluster("", scheduler, [])
    try:
        _wait_for(scheduler_file.exists, START_S, "the scheduler")
        cluster.address = _wait_for(lambda: json.loads(scheduler_file.read_text() or "{}").get("address"), 5, "address")
        for index, offered in enumerate(resources):
            tmpdir = root / f"worker{index}"
            tmpdir.mkdir()
            log = tmpdir / "worker.log"
            args = [*RNF, "worker", "--scheduler", cluster.address, *(["--resources", offered] if offered else [])]
            args += tls or []
            process = subprocess.Popen(
                args, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=os.environ | {"TMPDIR": str(tmpdir)}
            )
            worker = Worker(process, "", tmpdir)
            cluster.workers.append(worker)  # stopped with the cluster, connected or not
            line = _wait_for(lambda log=log, process=process: _connected(process, log), START_S, "a worker")
            worker.address = line.split()[2].rstrip(":")
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _connected(process: subprocess.Popen, log: Path) -> str | None:
    """The log of an `rnf worker` once it says it connected; its exit code and log if it ended before."""
    text = log.read_text()
    if "connected" in text:
        return text
    if process.poll() is not None:
        raise AssertionError(f"rnf worker ended with {process.returncode} before connecting: {text}")
    return None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    started = start_cluster(tmp_path_factory.mktemp("cluster"), [None, "usrp=1"])
    yield started
    started.stop()


def write_scenario(folder: Path, duration: float = 1.5, repetitions: int = 2, sweep: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    # a mahimahi trace: one 1500-byte opportunity per ms, 12 Mbit/s
    (folder / "trace.mahi").write_text("".join(f"{ms}\n" for ms in range(1, 1001)))
    path = folder / "scenario.toml"
    path.write_text(SCENARIO.format(duration=duration, repetitions=repetitions) + (SWEEP if sweep else ""))
    return path


def rnf_run(args: list[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen([*RNF, "run", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def finish(process: subprocess.Popen, timeout: float = 240) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def results_of(output: Path) -> Path:
    (found,) = [p for p in output.iterdir() if p.is_dir()]
    return found


def runs_of(results: Path) -> dict[str, dict]:
    return {d.name: json.loads((d / "run.json").read_text()) for d in sorted((results / "runs").iterdir())}


def block_starts(address: str, run_id: str) -> list[dict]:
    """Every block a worker started for the results folder `run_id`, from the scheduler's event log."""
    with Client(address, set_as_default=False, timeout="10s") as client:
        events = client.get_events(blocks.EVENT_TOPIC)
    return [message for _, message in events if message.get("run") == run_id and message["state"] == "started"]


def times(run: dict) -> tuple[datetime, datetime]:
    return datetime.fromisoformat(run["started"]), datetime.fromisoformat(run["ended"])


def test_blocks_run_once_each_paired_in_rotated_order_and_summarize_as_a_local_run(cluster, tmp_path):
    scenario_file = write_scenario(tmp_path / "scenario")
    process = rnf_run([str(scenario_file), "--scheduler", cluster.address, "--output", str(tmp_path / "out")])
    # a block carries the bytes of the trace it names: once the first started, the client's file can go
    metadata = _wait_for(lambda: list(tmp_path.glob("out/*/metadata.json")), 60, "the results folder")[0]
    _wait_for(lambda: block_starts(cluster.address, metadata.parent.name), 60, "a first block")
    (scenario_file.parent / "trace.mahi").rename(scenario_file.parent / "moved.mahi")
    code, out, err = finish(process)
    assert code == 0, out + err
    results = results_of(tmp_path / "out")
    runs = runs_of(results)
    assert len(runs) == 8 and all(run["complete"] for run in runs.values())
    assert not (results / ".incoming").exists()

    starts = block_starts(cluster.address, results.name)
    by_block: dict[str, list[dict]] = {}
    for run in runs.values():
        by_block.setdefault(run["block"], []).append(run)
    assert sorted(s["block"] for s in starts) == sorted(by_block)  # every block ran exactly once
    addresses = {w.address for w in cluster.workers}
    assert {run["node"]["worker"] for run in runs.values()} == addresses  # both workers took blocks
    spans: dict[str, list[tuple[datetime, datetime]]] = {}
    for members in by_block.values():
        assert len({run["node"]["worker"] for run in members}) == 1  # a block's arms on one worker
        members.sort(key=lambda run: run["started"])
        repetition = members[0]["repetition"]
        expected = ["cubic", "bbr"] if repetition % 2 == 0 else ["bbr", "cubic"]  # schedule()'s rotation
        assert [run["arm"] for run in members] == expected
        assert times(members[0])[1] <= times(members[1])[0]  # one after another
        spans.setdefault(members[0]["node"]["worker"], []).append((times(members[0])[0], times(members[1])[1]))
    for worker_spans in spans.values():
        worker_spans.sort()
        assert all(end <= start for (_, end), (start, _) in itertools.pairwise(worker_spans))
    node = next(iter(runs.values()))["node"]
    assert node["host"] == socket.gethostname() and node["kernel"] == platform.release()

    local_prefix = "c" + uuid.uuid4().hex[:6]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    overrides = [f"cell.namespace_prefix='{local_prefix}'", f"cell.telemetry.endpoint='tcp://127.0.0.1:{port}'"]
    (scenario_file.parent / "moved.mahi").rename(scenario_file.parent / "trace.mahi")
    scenario, raw = load_scenario(scenario_file, overrides)
    local = report.summarize_results(run_scenario(scenario, raw, overrides, tmp_path / "local"))
    distributed = json.loads((results / "summary.json").read_text())
    assert distributed["arms"].keys() == local["arms"].keys() == {"cubic @ 5", "bbr @ 5", "cubic @ 15", "bbr @ 15"}
    assert distributed["sweep"] == local["sweep"] == "delay"
    assert len(distributed["runs"]) == len(local["runs"]) == 8
    assert [a["repetitions"] for a in distributed["arms"].values()] == [
        a["repetitions"] for a in local["arms"].values()
    ]

    by_host = subprocess.run([*RNF, "report", "--by", "host", str(results)], capture_output=True, text=True)
    assert by_host.returncode == 0, by_host.stderr
    row = next(line for line in by_host.stdout.splitlines() if socket.gethostname() in line)
    assert "│       2 │    8 │ cubic @ 5 (2)" in row


def test_a_required_resource_steers_blocks_to_the_worker_that_has_it(cluster, tmp_path):
    scenario_file = write_scenario(tmp_path / "scenario", duration=1, repetitions=1, sweep=False)
    output = tmp_path / "out"
    code, out, err = finish(
        rnf_run([str(scenario_file), "--set", "execution.require.usrp=1", "--scheduler", cluster.address,
                 "--output", str(output)])
    )  # fmt: skip
    assert code == 0, out + err
    runs = runs_of(results_of(output))
    assert len(runs) == 2 and {run["node"]["worker"] for run in runs.values()} == {cluster.workers[1].address}

    started = time.monotonic()
    code, out, err = finish(
        rnf_run([str(scenario_file), "--set", "execution.require.fpga=1", "--scheduler", cluster.address,
                 "--output", str(tmp_path / "none")])
    )  # fmt: skip
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"Error: --scheduler {cluster.address}: no `rnf worker` offers fpga=1 (execution.require)")
    assert time.monotonic() - started < 30
    assert not (tmp_path / "none").exists()  # refused before a results folder


def test_a_client_killed_mid_study_resumes_with_only_the_missing_blocks(cluster, tmp_path):
    scenario_file = write_scenario(tmp_path / "scenario")
    output = tmp_path / "out"
    process = rnf_run([str(scenario_file), "--scheduler", cluster.address, "--output", str(output)])
    scenario, raw = load_scenario(scenario_file)
    planned = blocks.plan(scenario, raw, "test")

    def some_complete() -> list[blocks.Block]:
        found = list(output.glob("*/metadata.json"))
        return found and [b for b in planned if b.complete(found[0].parent)]

    _wait_for(some_complete, 120, "a first block")
    process.kill()
    process.communicate()
    results = results_of(output)
    complete = [b for b in planned if b.complete(results)]
    missing = [b.id for b in planned if not b.complete(results)]
    assert missing, "the client finished before it was killed"
    kept = {f: (results / "runs" / f / "run.json").read_text() for b in complete for f in b.folders}

    code, out, err = finish(rnf_run(["--resume", str(results)]))  # the scheduler recorded in metadata.json
    assert code == 0, out + err
    metadata = json.loads((results / "metadata.json").read_text())
    assert metadata["resumed"][-1]["blocks"] == missing
    assert f"{len(missing)} of 4 blocks to run" in " ".join(out.split())  # rich wraps lines at 80 columns
    assert {f: (results / "runs" / f / "run.json").read_text() for f in kept} == kept  # untouched
    assert all(b.complete(results) for b in planned)
    assert len(json.loads((results / "summary.json").read_text())["runs"]) == 8


def _namespaces() -> set[str]:
    return set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()


def _block_processes(workdir_root: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"rnf_experiments.blocks" in command and any(str(workdir_root).encode() in a for a in command):
                found.append(int(entry.name))
    return found


def test_a_worker_killed_mid_block_loses_nothing(tmp_path):
    local = start_cluster(tmp_path / "cluster", [None, None])
    try:
        scenario_file = write_scenario(tmp_path / "scenario", duration=3, sweep=False)
        output = tmp_path / "out"
        process = rnf_run([str(scenario_file), "--scheduler", local.address, "--output", str(output)])

        def running() -> tuple[Worker, Path] | None:
            for worker in local.workers:
                for run in worker.tmpdir.glob("rnf-worker-*/*/runs/*/run.json"):
                    return worker, run.parents[2]
            return None

        victim, workdir = _wait_for(running, 120, "a block to start")
        block_id = workdir.name.rsplit("-", 1)[0]
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait()
        prefix = blocks.node_settings(block_id, victim.address)[0]
        # the block's process died with its worker (SIGTERM), and took its cell's namespaces down
        _wait_for(lambda: not _block_processes(workdir.parent), 30, "the killed worker's block to stop")
        _wait_for(lambda: not {n for n in _namespaces() if n.startswith(f"{prefix}-")}, 30, "its namespaces to go")
        marks = [json.loads(p.read_text()).get("complete") for p in workdir.glob("runs/*/run.json")]
        assert marks and True not in marks  # stopped in its first arm, not run on as an orphan

        code, out, err = finish(process)
        assert code == 0, out + err
        results = results_of(output)
        runs = runs_of(results)
        assert sorted(runs) == ["0-bbr", "0-cubic", "1-bbr", "1-cubic"]
        assert all(run["complete"] for run in runs.values())
        survivor = next(w for w in local.workers if w is not victim).address
        assert {run["node"]["worker"] for run in runs.values() if run["block"] == block_id} == {survivor}
        starts = block_starts(local.address, results.name)
        assert sorted(s["worker"] for s in starts if s["block"] == block_id) == sorted([victim.address, survivor])
        assert len(json.loads((results / "summary.json").read_text())["runs"]) == 4
    finally:
        local.stop()


def certificates(folder: Path, ca: str, nodes: list[str]) -> dict[str, list[str]]:
    """A CA and a certificate per node made with openssl, as ansible/README.md makes a lab's (and the convergence
    test, role rnf_worker's): each node's `--tls-ca-file, --tls-cert, --tls-key` options."""
    folder.mkdir(parents=True)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=folder)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={ca}",
            "-keyout", "ca.key", "-out", "ca.pem")  # fmt: skip
    for node in nodes:
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={node}", "-keyout", f"{node}.key",
                "-out", f"{node}.csr")  # fmt: skip
        openssl("x509", "-req", "-in", f"{node}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "2", "-out", f"{node}.pem")  # fmt: skip
    return {
        node: ["--tls-ca-file", str(folder / "ca.pem"), "--tls-cert", str(folder / f"{node}.pem"),
               "--tls-key", str(folder / f"{node}.key")]
        for node in nodes
    }  # fmt: skip


def test_a_tls_cluster_runs_a_study_and_turns_away_clients_without_its_certificates(tmp_path):
    lab = certificates(tmp_path / "lab", "rnf lab CA", ["lab-a", "lab-b"])
    other = certificates(tmp_path / "other", "another CA", ["intruder"])["intruder"]
    tls = start_cluster(tmp_path / "cluster", [None], tls=lab["lab-a"])
    try:
        assert tls.address.startswith("tls://127.0.0.1:") and tls.workers[0].address.startswith("tls://127.0.0.1:")
        scenario_file = write_scenario(tmp_path / "scenario", duration=1, repetitions=1, sweep=False)
        one_arm = ["--set", "arms=[{name='cubic'}]"]
        output = tmp_path / "out"
        code, out, err = finish(
            rnf_run([str(scenario_file), *one_arm, "--scheduler", tls.address, *lab["lab-b"], "--output", str(output)])
        )
        assert code == 0, out + err
        results = results_of(output)
        assert list(runs_of(results)) == ["0-cubic"] and runs_of(results)["0-cubic"]["complete"]
        assert runs_of(results)["0-cubic"]["node"]["worker"] == tls.workers[0].address
        summary = json.loads((results / "summary.json").read_text())
        assert list(summary["arms"]) == ["cubic"] and len(summary["runs"]) == 1

        plain = tls.address.replace("tls://", "tcp://")
        turned_away = {
            "no certificates": (plain, [], "cannot reach the scheduler (it reset the connection; a tls:// scheduler"),
            "another CA's, trusting it": (
                tls.address, other, "TLS handshake refused: the scheduler's certificate is not signed by"
            ),
            "another CA's, trusting the lab's": (
                tls.address, [*lab["lab-b"][:2], *other[2:]], "TLS handshake refused by the scheduler"
            ),
        }  # fmt: skip
        for case, (address, options, reason) in turned_away.items():
            started = time.monotonic()
            code, out, err = finish(
                rnf_run([str(scenario_file), *one_arm, "--scheduler", address, *options,
                         "--output", str(tmp_path / "refused")]), timeout=60
            )  # fmt: skip
            assert code == 2 and len(err.splitlines()) == 1, (case, err)
            assert err.startswith(f"Error: --scheduler {address}: {reason}"), (case, err)
            assert time.monotonic() - started < 10, case
            assert not (tmp_path / "refused").exists(), case  # refused before a results folder
        assert list(runs_of(results)) == ["0-cubic"]

        # a worker with another CA's certificate is told why it was refused, not only that its start timed out; a
        # certificate with another's key is named before any connection
        for options, reason in [
            (other, "TLS handshake refused: the scheduler's certificate is not signed by"),
            ([*lab["lab-b"][:4], *other[4:]], "not a PEM certificate and its private key"),
        ]:
            worker = subprocess.run([*RNF, "worker", "--scheduler", tls.address, *options], capture_output=True,
                                    text=True, timeout=60)  # fmt: skip
            assert worker.returncode == 2 and len(worker.stderr.splitlines()) == 1, worker.stderr
            assert reason in worker.stderr, worker.stderr
    finally:
        tls.stop()
