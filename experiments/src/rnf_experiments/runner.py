"""`rnf run`: every arm of a scenario, repetitions interleaved, into a results folder.

```
results/<time>-<scenario>/
  metadata.json                 scenario, overrides, git commit, versions, host, command line
  runs/<repetition>-<arm>/      series.lp (line protocol), packets.bin, flows/*.json, datapath files
  summary.json                  per run and per arm metrics (experiments/README.md)
  plots/*.png
```
"""

from __future__ import annotations

import asyncio
import json
import platform
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata as package_metadata
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rnf_cell.topology import SERVER_IP
from rnf_cli.errors import UserError
from rnf_monitoring.recorder import FanOutRecorder, RecorderStats, recorder_from_url
from rnf_proxy.proxy import Proxy
from rnf_telemetry.record import Recorder

from rnf_experiments.cells import Cell, open_cell
from rnf_experiments.scenario import Arm, Scenario, proxy_config

TRAFFIC_PORT = 5201
SETTLE_S = 0.5


def git_commit() -> str:
    result = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent)
    dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, cwd=Path(__file__).parent)
    return result.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "") if result.returncode == 0 else "unknown"


def write_metadata(results: Path, scenario: Scenario, raw: dict[str, Any], overrides: list[str]) -> None:
    versions = {name: package_metadata.version(name) for name in ("rnf-cell", "rnf-experiments", "numpy", "pyzmq")}
    metadata = {
        "scenario": scenario.name,
        "scenario_data": raw,
        "overrides": overrides,
        "command": sys.argv,
        "started": datetime.now(UTC).isoformat(),
        "git_commit": git_commit(),
        "versions": versions | {"python": platform.python_version(), "kernel": platform.release()},
        "host": socket.gethostname(),
    }
    (results / "metadata.json").write_text(json.dumps(metadata, indent=1, default=str) + "\n")


def schedule(scenario: Scenario) -> list[tuple[int, Arm]]:
    """Every (repetition, arm), rotating the arm order each repetition so drift favours no arm."""
    order = []
    arms = list(scenario.arms)
    for repetition in range(scenario.repetitions):
        shift = repetition % len(arms)
        order += [(repetition, arm) for arm in arms[shift:] + arms[:shift]]
    return order


@dataclass(frozen=True)
class ArmContext:
    scenario: Scenario
    arm: Arm
    repetition: int
    directory: Path
    run_id: str
    influx_url: str | None


async def _start_server(cell: Cell) -> asyncio.subprocess.Process:
    process = await asyncio.create_subprocess_exec(
        "ip",
        "netns",
        "exec",
        cell.names.server,
        sys.executable,
        "-m",
        "rnf_experiments.traffic",
        "server",
        "--port",
        str(TRAFFIC_PORT),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    try:
        ready = await asyncio.wait_for(process.stdout.readline(), 10)
    except TimeoutError:
        ready = b""
    if ready.strip() != b"ready":
        process.kill()
        error = (await process.stderr.read()).decode(errors="replace").strip() if process.stderr else ""
        raise UserError(f"the traffic server did not start in {cell.names.server}: {error or 'no message'}")
    return process


async def _record_progress(process: asyncio.subprocess.Process, flow: str, ue: int, recorder: Recorder) -> None:
    """Record a client's progress lines as the `flow` measurement while it runs (grafana/SCHEMA.md)."""
    assert process.stdout is not None
    last: tuple[int, int] | None = None
    while line := await process.stdout.readline():
        kind, time_text, bytes_text = line.decode().split()
        if kind != "progress":
            continue
        now, received = int(time_text), int(bytes_text)
        fields: dict[str, int | float] = {"received_bytes": received}
        if last is not None and now > last[0]:
            fields["goodput_bps"] = (received - last[1]) * 8e9 / (now - last[0])
        recorder.record("flow", {"flow": flow, "ue": str(ue + 1)}, fields, now)
        last = (now, received)
    await process.wait()


async def _run_flows(context: ArmContext, cell: Cell, recorder: Recorder) -> None:
    traffic, scenario = context.scenario.traffic, context.scenario
    flows_dir = context.directory / "flows"
    flows_dir.mkdir()
    clients: list[asyncio.Task[None]] = []
    processes: list[asyncio.subprocess.Process] = []
    for ue in range(len(scenario.cell.ues)):
        for flow in range(traffic.flows_per_ue):
            name = f"ue{ue + 1}-flow{flow + 1}"
            delay = flow * traffic.stagger_s
            duration = 0.0 if traffic.bytes else max(scenario.duration_s - delay, 0.1)
            process = await asyncio.create_subprocess_exec(
                "ip",
                "netns",
                "exec",
                cell.names.ue(ue),
                sys.executable,
                "-m",
                "rnf_experiments.traffic",
                "client",
                "--name",
                name,
                "--server",
                str(SERVER_IP),
                "--port",
                str(TRAFFIC_PORT),
                "--bytes",
                str(traffic.bytes),
                "--duration",
                str(duration),
                "--cc",
                context.arm.cc,
                "--delay",
                str(delay),
                "--out",
                str(flows_dir / f"{name}.json"),
                stdout=asyncio.subprocess.PIPE,
            )
            processes.append(process)
            clients.append(asyncio.create_task(_record_progress(process, name, ue, recorder)))
    limit = scenario.duration_s + 30 if not traffic.bytes else scenario.duration_s
    try:
        await asyncio.wait_for(asyncio.gather(*clients), limit)
    except TimeoutError:
        for process in processes:
            if process.returncode is None:
                process.kill()


async def run_arm(context: ArmContext) -> RecorderStats | None:
    """Run one arm; with InfluxDB, return what the recorder wrote, dropped and had rejected."""
    tags = {
        "run": context.run_id,
        "scenario": context.scenario.name,
        "arm": context.arm.name,
        "repetition": str(context.repetition),
        "cell_kind": context.scenario.cell.kind,
    }
    recorder = recorder_from_url(context.influx_url, context.directory, tags, source="run")
    cell = open_cell(context.scenario.cell, context.directory, recorder, context.scenario.seed + context.repetition)
    try:
        async with cell:
            server = await _start_server(cell)
            try:
                await asyncio.sleep(SETTLE_S)
                if context.arm.kind == "proxy":
                    config = proxy_config(context.arm, cell.names.core, cell.telemetry_endpoint)
                    async with Proxy(config, recorder):
                        await _run_flows(context, cell, recorder)
                else:
                    await _run_flows(context, cell, recorder)
            finally:
                server.kill()
                await server.wait()
    finally:
        recorder.close()
    return recorder.influx.stats() if isinstance(recorder, FanOutRecorder) else None


def run_scenario(
    scenario: Scenario,
    raw: dict[str, Any],
    overrides: list[str],
    output_root: Path,
    influx_url: str | None = None,
    on_recorder_stats: Callable[[str, RecorderStats], None] | None = None,
) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    results = output_root / f"{stamp}-{scenario.name}"
    (results / "runs").mkdir(parents=True, exist_ok=False)
    write_metadata(results, scenario, raw, overrides)
    plan = schedule(scenario)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f} s"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, transient=False) as progress:
        total = progress.add_task("scenario", total=len(plan) * scenario.duration_s)
        for index, (repetition, arm) in enumerate(plan):
            directory = results / "runs" / f"{repetition}-{arm.name}"
            directory.mkdir()
            progress.update(total, description=f"[{index + 1}/{len(plan)}] {arm.name}, repetition {repetition}")
            context = ArmContext(scenario, arm, repetition, directory, results.name, influx_url)
            started = time.monotonic()
            stats = asyncio.run(_with_progress(context, progress, total, index * scenario.duration_s, started))
            if stats is not None and on_recorder_stats is not None:
                on_recorder_stats(directory.name, stats)
            progress.update(total, completed=(index + 1) * scenario.duration_s)
    return results


async def _with_progress(
    context: ArmContext, progress: Progress, task: Any, base: float, started: float
) -> RecorderStats | None:
    async def tick() -> None:
        while True:
            await asyncio.sleep(0.5)
            elapsed = min(time.monotonic() - started, context.scenario.duration_s)
            progress.update(task, completed=base + elapsed)

    ticker = asyncio.create_task(tick())
    try:
        return await run_arm(context)
    finally:
        ticker.cancel()
