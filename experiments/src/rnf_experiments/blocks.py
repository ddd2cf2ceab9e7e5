"""Blocks: the unit a study is spread over a cluster in (`rnf run --scheduler`, docs/architecture.md).

A block is one sweep point and one repetition with all of its arms, in the rotated order `schedule()` gives, run on
one node one after another: every comparison between arms stays paired on one machine and one stretch of time. Its
id is derived from the scenario (the point's table, the repetition, the arm order), so a resumed study finds the
blocks it already has.

On a node, `run_block` (the task a Dask worker executes) runs the block in a child process, `python -m
rnf_experiments.blocks`, which dies with the worker (PR_SET_PDEATHSIG: SIGTERM, which takes the arm down as a stopped
`rnf run` does, namespaces included). The block's run folders go back to the client in the task's result, so no
filesystem is shared, and only once the whole block completed: a half-written run never reaches the results.
"""

from __future__ import annotations

import asyncio
import ctypes
import hashlib
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import click
from rnf_foundation.errors import UserError

from rnf_experiments.runner import ArmContext, _StopSignals, run_arm, run_folder, schedule
from rnf_experiments.scenario import Scenario, Variant, expand

EVENT_TOPIC = "rnf-blocks"  # the workers' "started" events, for the client's progress
BLOCK_RESOURCE = "block"  # every `rnf worker` offers one: one block at a time, whatever its thread count
WORKDIR_PREFIX = "rnf-worker-"
PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Block:
    """One sweep point x one repetition, its arms in the order they run, and their folders under runs/."""

    id: str
    variant: Variant
    repetition: int
    arms: tuple[str, ...]
    folders: tuple[str, ...]

    def complete(self, results: Path) -> bool:
        """Every run of the block is in `results` with its completion mark."""
        for folder in self.folders:
            try:
                if json.loads((results / "runs" / folder / "run.json").read_text()).get("complete") is not True:
                    return False
            except (OSError, ValueError, AttributeError):
                return False
        return True


def plan(scenario: Scenario, raw: dict[str, Any], source: str) -> list[Block]:
    """The blocks of a scenario, in the order a local run would run their arms."""
    blocks = []
    for variant in expand(scenario, raw, source):
        by_repetition: dict[int, list[str]] = {}
        for repetition, arm in schedule(variant.scenario):
            by_repetition.setdefault(repetition, []).append(arm.name)
        for repetition, names in by_repetition.items():
            identity = {"point": variant.data, "repetition": repetition, "arms": names}
            digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:10]
            arms = {arm.name: arm for arm in variant.scenario.arms}
            folders = tuple(run_folder(scenario, variant, repetition, arms[name]) for name in names)
            blocks.append(
                Block(f"p{variant.index:02d}-r{repetition}-{digest}", variant, repetition, tuple(names), folders)
            )
    return blocks


def _input_files(data: Any) -> list[str]:
    """Every `file = "..."` of a scenario table (traces): the node gets their bytes, not their paths."""
    if isinstance(data, dict):
        found = []
        for key, value in data.items():
            found += [value] if key == "file" and isinstance(value, str) else _input_files(value)
        return found
    if isinstance(data, list):
        return [path for item in data for path in _input_files(item)]
    return []


def _replace_files(data: Any, paths: dict[str, str]) -> Any:
    if isinstance(data, dict):
        return {
            key: paths[value] if key == "file" and isinstance(value, str) else _replace_files(value, paths)
            for key, value in data.items()
        }
    if isinstance(data, list):
        return [_replace_files(item, paths) for item in data]
    return data


def task_spec(block: Block, run_id: str, influx_url: str | None) -> dict[str, Any]:
    """What a node needs to run `block`: the point's scenario table and the bytes of the files it names."""
    inputs = {}
    for path in sorted(set(_input_files(block.variant.data))):
        try:
            inputs[path] = Path(path).read_bytes()
        except OSError as error:
            raise UserError(f"{path}: cannot read it for the cluster's nodes: {error.strerror}") from None
    variant = block.variant
    return {
        "block": block.id,
        "run_id": run_id,
        "influx_url": influx_url,
        "data": variant.data,
        "variant": {"parameter": variant.parameter, "index": variant.index, "value": variant.value},
        "repetition": block.repetition,
        "arms": list(block.arms),
        "folders": list(block.folders),
        "inputs": inputs,
    }


class BlockError(Exception):
    """A block that failed on its node (not a lost worker): one line naming the block, the node and the cause."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def node_settings(block_id: str, worker: str) -> tuple[str, int]:
    """The namespace prefix and telemetry port of a block on a node: two workers on one host never share them (the
    prefix is per block and worker, so a block run again beside its killed first attempt's leftovers is apart too)."""
    prefix = "k" + hashlib.sha256(f"{block_id} {worker}".encode()).hexdigest()[:7]
    return prefix, _free_port()


def workdir_root() -> Path:
    """This worker process's scratch folder; a killed worker's is removed by the next one to start."""
    return Path(tempfile.gettempdir()) / f"{WORKDIR_PREFIX}{os.getpid()}"


def remove_stale_workdirs() -> None:
    for folder in Path(tempfile.gettempdir()).glob(f"{WORKDIR_PREFIX}*"):
        pid = folder.name.removeprefix(WORKDIR_PREFIX)
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


def run_block(spec: dict[str, Any]) -> dict[str, Any]:
    """The Dask task: run the block in a child process on this node, return its run folders as {path: bytes}."""
    from distributed import get_worker  # only on a worker

    worker = get_worker()
    node = {"host": socket.gethostname(), "kernel": platform.release(), "worker": worker.address}
    started = {"block": spec["block"], "run": spec["run_id"], "state": "started", "worker": worker.address}
    worker.log_event(EVENT_TOPIC, started)
    prefix, port = node_settings(spec["block"], worker.address)
    workdir = Path(tempfile.mkdtemp(prefix=f"{spec['block']}-", dir=_ensure(workdir_root())))
    try:
        paths = {}
        for number, (path, content) in enumerate(spec["inputs"].items()):
            local = workdir / "inputs" / f"{number}-{Path(path).name}"
            local.parent.mkdir(exist_ok=True)
            local.write_bytes(content)
            paths[path] = str(local)
        data = _replace_files(spec["data"], paths)
        cell = data.setdefault("cell", {})
        cell["namespace_prefix"] = prefix
        if cell.get("kind", "virtual") == "virtual":
            cell.setdefault("telemetry", {})["endpoint"] = f"tcp://127.0.0.1:{port}"
        node |= {"namespace_prefix": prefix}
        child = {
            key: spec[key] for key in ("block", "run_id", "influx_url", "variant", "repetition", "arms", "folders")
        }
        (workdir / "block.json").write_text(json.dumps(child | {"data": data, "node": node}, default=str))
        with open(workdir / "block.log", "wb") as log:
            code = subprocess.call(
                [sys.executable, "-m", "rnf_experiments.blocks", str(workdir), str(os.getpid())],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        if code != 0:
            kept = shutil.copy(workdir / "block.log", workdir.parent / f"{spec['block']}.log")
            lines = (workdir / "block.log").read_text(errors="replace").strip().splitlines() or [f"exit {code}"]
            where = f"block {spec['block']} on {node['host']} ({worker.address})"
            raise BlockError(f"{where}: {lines[-1]} (log: {kept})")
        files = {
            str(path.relative_to(workdir / "runs")): path.read_bytes()
            for path in sorted((workdir / "runs").rglob("*"))
            if path.is_file()
        }
        return {"block": spec["block"], "node": node, "files": files}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _ensure(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def safe_relative(text: str, folders: tuple[str, ...]) -> PurePosixPath:
    """A path of a block's result, checked to stay inside one of the block's run folders."""
    path = PurePosixPath(text)
    if path.is_absolute() or ".." in path.parts or not path.parts or path.parts[0] not in folders:
        raise ValueError(f"a block's result names {text!r}, outside its run folders")
    return path


def _die_with_parent(parent: int) -> None:
    """SIGTERM when the worker that started this process dies, even by SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before the line above
        sys.exit(128 + signal.SIGTERM)


def _run_child(workdir: Path) -> None:
    spec = json.loads((workdir / "block.json").read_text())
    scenario = Scenario.model_validate(spec["data"])
    point = spec["variant"]
    variant = Variant(point["parameter"], point["index"], point["value"], scenario, spec["data"])
    arms = {arm.name: arm for arm in scenario.arms}
    with _StopSignals() as stop:
        for name, folder in zip(spec["arms"], spec["folders"], strict=True):
            directory = workdir / "runs" / folder
            directory.mkdir(parents=True)
            context = ArmContext(
                scenario, arms[name], spec["repetition"], directory, spec["run_id"], spec["influx_url"], variant
            )
            extra = {"node": spec["node"], "block": spec["block"], "started": datetime.now(UTC).isoformat()}
            (directory / "run.json").write_text(json.dumps(context.describe() | extra, indent=1) + "\n")
            try:
                asyncio.run(stop.run(run_arm(context)))
            except asyncio.CancelledError:
                sys.exit(128 + (stop.signum or signal.SIGTERM))
            if stop.signum is not None:
                sys.exit(128 + stop.signum)
            extra |= {"ended": datetime.now(UTC).isoformat(), "complete": True}
            (directory / "run.json").write_text(json.dumps(context.describe() | extra, indent=1) + "\n")


def main() -> None:
    """`python -m rnf_experiments.blocks WORKDIR PARENT_PID`: one block, started by `run_block`."""
    workdir, parent = Path(sys.argv[1]), int(sys.argv[2])
    _die_with_parent(parent)
    try:
        _run_child(workdir)
    except click.ClickException as error:
        print(error.format_message(), file=sys.stderr)
        sys.exit(error.exit_code)
    except Exception as error:
        traceback.print_exc()
        print(f"a bug in the runner ({type(error).__name__}: {error})", file=sys.stderr)
        sys.exit(70)


if __name__ == "__main__":
    main()
