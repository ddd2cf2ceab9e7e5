"""`rnf run`: every arm of a scenario, repetitions interleaved, into a results folder.

```
results/<time>-<scenario>/
  metadata.json                 scenario, overrides, git commit, versions, host, command line
  runs/<repetition>-<arm>/      run.json ("complete": true once the run ended), series.lp (line protocol),
                                packets.bin, flows/*.json, datapath files
  summary.json                  per run and per arm metrics (experiments/README.md)
  plots/*.png
```

SIGINT and SIGTERM stop a run as cleanly as its end: the arm's tasks are cancelled, so its proxy, traffic processes
and cell (namespaces included) are taken down by their own exits; the stopped run keeps no completion mark, and
metadata.json says which signal stopped the scenario after how many runs.
"""

from __future__ import annotations

import asyncio
import json
import platform
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata as package_metadata
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rnf_cell.cell import VirtualCell
from rnf_cell.topology import SERVER_IP
from rnf_foundation.errors import UserError
from rnf_foundation.signals import STOP_SIGNALS
from rnf_monitoring.recorder import FanOutRecorder, RecorderStats, recorder_from_url
from rnf_proxy.proxy import Proxy
from rnf_telemetry.record import Recorder

from rnf_experiments import congestion, netstat
from rnf_experiments.cells import Cell, open_cell
from rnf_experiments.scenario import (
    Arm,
    Scenario,
    Traffic,
    Variant,
    WebTraffic,
    arm_cell,
    arm_ecn,
    expand,
    file_name_part,
    proxy_config,
    telemetry_period,
)

TRAFFIC_PORT = 5201
SETTLE_S = 0.5
BACKLOG_GRACE_S = 1.0
CLIENT_EXIT_S = 30.0  # after the arm's end, for clients to write their results


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


def run_folder(scenario: Scenario, variant: Variant, repetition: int, arm: Arm) -> str:
    """The folder under runs/ of one arm in one repetition at one sweep point."""
    folder = f"{repetition}-{arm.name}"
    if scenario.sweep is not None:
        point = file_name_part(f"{scenario.sweep.parameter}={variant.label}")
        folder = f"{variant.index:02d}-{point}-{folder}"
    return folder


@dataclass(frozen=True)
class ArmContext:
    scenario: Scenario
    arm: Arm
    repetition: int
    directory: Path
    run_id: str
    influx_url: str | None
    variant: Variant

    def describe(self) -> dict[str, object]:
        """run.json: what this run is, for the analysis (which never parses folder names)."""
        return {
            "arm": self.arm.name,
            "kind": self.arm.kind,
            "controller": (self.arm.controller or {}).get("kind", ""),
            "controller_config": self.arm.controller,  # the analysis's queue reference (analysis.Reference)
            "cc": self.arm.cc,
            "queue_discipline": discipline.model_dump() if (discipline := self.arm.queue_discipline) else None,
            "ecn": arm_ecn(self.scenario.cell, self.arm),
            "ack_regulator": regulator.model_dump() if (regulator := self.arm.ack_regulator) else None,
            "repetition": self.repetition,
            "sweep": None
            if self.variant.parameter is None
            else {"parameter": self.variant.parameter, "value": self.variant.value, "index": self.variant.index},
        }


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


async def set_ecn(namespaces: list[str], on: bool) -> None:
    """`net.ipv4.tcp_ecn` in each namespace (it is per namespace): 1 requests and accepts ECN, 0 neither. The UE
    requests it (its client connects), the server or the proxy in the core accepts it and sends ECT."""
    for namespace in namespaces:
        process = await asyncio.create_subprocess_exec(
            "ip", "netns", "exec", namespace, "sysctl", "-q", "-w", f"net.ipv4.tcp_ecn={int(on)}",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, error = await process.communicate()
        if process.returncode != 0:
            raise UserError(f"cannot set net.ipv4.tcp_ecn in {namespace}: {error.decode(errors='replace').strip()}")


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


def _client_arguments(traffic: Traffic, duration_s: float, delay_s: float) -> list[str]:
    """The client's command line: what to transfer, and `--until`, the arm's end, where transfers stop (a
    backlogged transfer, ended by its sender at the arm's end, gets a second more to see the FIN)."""
    if isinstance(traffic, WebTraffic):
        objects = ",".join(str(size) for size in traffic.objects_bytes)
        kind = ["web", "--objects", objects, "--parallel", str(traffic.parallel), "--pages", str(traffic.pages),
                "--think", str(traffic.think_s)]  # fmt: skip
        return [*kind, "--until", str(duration_s)]
    duration = 0.0 if traffic.bytes else max(duration_s - delay_s, 0.1)
    until = duration_s + (0.0 if traffic.bytes else BACKLOG_GRACE_S)
    return [traffic.kind, "--bytes", str(traffic.bytes), "--duration", str(duration), "--until", str(until)]


async def _run_flows(context: ArmContext, cell: Cell, recorder: Recorder) -> None:
    """Every transfer of the scenario's traffic, each client in its UE's namespace; returns when all ended (the
    clients stop their transfers at the arm's end themselves)."""
    scenario = context.scenario
    flows_dir = context.directory / "flows"
    flows_dir.mkdir()
    clients: list[asyncio.Task[None]] = []
    processes: list[asyncio.subprocess.Process] = []
    cc = congestion.kernel_name(context.arm.cc)
    for index, traffic in enumerate(scenario.traffic):
        for ue in traffic.ues or range(1, len(scenario.cell.ues) + 1):
            for instance in range(traffic.flows):
                name = f"ue{ue}-{traffic.kind}{index + 1}-{instance + 1}"
                delay = traffic.start_s + instance * traffic.stagger_s
                process = await asyncio.create_subprocess_exec(
                    "ip", "netns", "exec", cell.names.ue(ue - 1),
                    sys.executable, "-m", "rnf_experiments.traffic", "client",
                    *_client_arguments(traffic, scenario.duration_s, delay),
                    "--name", name, "--ue", str(ue), "--server", str(SERVER_IP), "--port", str(TRAFFIC_PORT),
                    "--cc", cc, "--delay", str(delay), "--out", str(flows_dir / f"{name}.json"),
                    stdout=asyncio.subprocess.PIPE,
                )  # fmt: skip
                processes.append(process)
                clients.append(asyncio.create_task(_record_progress(process, name, ue - 1, recorder)))
    gathered = asyncio.gather(*clients)
    try:
        await asyncio.wait_for(gathered, scenario.duration_s + CLIENT_EXIT_S)
    except TimeoutError:
        pass
    finally:  # also when the arm is cancelled (a stopped run): no client outlives it
        if gathered.done() and not gathered.cancelled():
            gathered.exception()  # retrieved: a cancelled arm logs no "exception was never retrieved"
        for process in processes:
            if process.returncode is None:
                process.kill()
                await process.wait()


async def run_arm(context: ArmContext) -> RecorderStats | None:
    """Run one arm; with InfluxDB, return what the recorder wrote, dropped and had rejected."""
    tags = {
        "run": context.run_id,
        "scenario": context.scenario.name,
        "arm": context.arm.name,
        "repetition": str(context.repetition),
        "cell_kind": context.scenario.cell.kind,
    } | ({} if context.variant.parameter is None else {"sweep": context.variant.label})
    recorder = recorder_from_url(context.influx_url, context.directory, tags, source="run")
    spec = arm_cell(context.scenario.cell, context.arm)
    cell = open_cell(spec, context.directory, recorder, context.scenario.seed + context.repetition)
    try:
        async with cell:
            ues = [cell.names.ue(ue) for ue in range(len(spec.ues))]
            await set_ecn([cell.names.server, cell.names.core, *ues], arm_ecn(context.scenario.cell, context.arm))
            server = await _start_server(cell)
            try:
                await asyncio.sleep(SETTLE_S)
                senders = {"server": cell.names.server, "core": cell.names.core} | {
                    f"ue{ue + 1}": cell.names.ue(ue) for ue in range(len(context.scenario.cell.ues))
                }
                before = {role: await netstat.read(namespace) for role, namespace in senders.items()}
                if context.arm.kind == "proxy":
                    period_s, _ = telemetry_period(context.scenario.cell)
                    config = proxy_config(context.arm, cell.names.core, cell.telemetry_endpoint, period_s)
                    async with Proxy(config, recorder):
                        await _run_flows(context, cell, recorder)
                else:
                    await _run_flows(context, cell, recorder)
                counters = {
                    role: netstat.difference(before[role], await netstat.read(namespace))
                    for role, namespace in senders.items()
                }
                (context.directory / "netstat.json").write_text(json.dumps(counters, indent=1) + "\n")
            finally:
                server.kill()
                await server.wait()
    finally:
        recorder.close()
        if isinstance(cell, VirtualCell) and cell.summary is not None:  # TTI lateness: did it keep real time?
            (context.directory / "cell-summary.json").write_text(json.dumps(cell.summary, indent=1) + "\n")
    return recorder.influx.stats() if isinstance(recorder, FanOutRecorder) else None


class Stopped(click.ClickException):
    """`rnf run` stopped by SIGTERM, after the running arm was taken down: exit 143, 128 + the signal."""

    exit_code = 128 + signal.SIGTERM


class Interrupted(Stopped):
    """`rnf run` stopped by SIGINT (Ctrl-C), after the running arm was taken down: exit 130."""

    exit_code = 128 + signal.SIGINT


class _StopSignals:
    """While installed, SIGINT and SIGTERM cancel the running arm (cleanly, through its exits), or between arms
    stop the scenario before the next one; `signum` is the first signal received."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._task: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopSignals:
        self._previous = {signum: signal.signal(signum, self._handle) for signum in STOP_SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: object) -> None:
        if self.signum is not None:  # already stopping: a second cancel would cut the arm's cleanup short
            return
        self.signum = signum
        if self._task is not None:
            loop, task = self._task
            loop.call_soon_threadsafe(task.cancel)

    async def run(self, coroutine: Any) -> Any:
        """`coroutine` as a task that a stop signal cancels."""
        task = asyncio.ensure_future(coroutine)
        self._task = (asyncio.get_running_loop(), task)
        try:
            if self.signum is not None:
                task.cancel()
            return await task
        finally:
            self._task = None


def create_results(output_root: Path, scenario: Scenario) -> Path:
    """A new results folder `<time>-<scenario>` with its runs/ folder."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    results = output_root / f"{stamp}-{scenario.name}"
    try:
        (results / "runs").mkdir(parents=True, exist_ok=False)
    except OSError as error:
        raise UserError(f"--output {output_root}: cannot create {results}: {error.strerror}") from None
    return results


def run_scenario(
    scenario: Scenario,
    raw: dict[str, Any],
    overrides: list[str],
    output_root: Path,
    influx_url: str | None = None,
    on_recorder_stats: Callable[[str, RecorderStats], None] | None = None,
) -> Path:
    """Every variant (sweep value) x repetition x arm, each in `runs/<folder>/` with its run.json; `Stopped` when
    SIGINT or SIGTERM ended it early (the results folder then says so)."""
    for arm in scenario.arms:  # before any arm runs: a congestion control the kernel lacks ends the run here
        congestion.kernel_name(arm.cc)
    results = create_results(output_root, scenario)
    write_metadata(results, scenario, raw, overrides)
    plan = [
        (variant, repetition, arm)
        for variant in expand(scenario, raw, scenario.name)
        for repetition, arm in schedule(variant.scenario)
    ]
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f} s"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with _StopSignals() as stop, Progress(*columns, transient=False) as progress:
        total = progress.add_task("scenario", total=sum(v.scenario.duration_s for v, _, _ in plan))
        base = 0.0
        for index, (variant, repetition, arm) in enumerate(plan):
            if stop.signum is not None:
                _mark_stopped(results, stop.signum, index, len(plan))
            directory = results / "runs" / run_folder(scenario, variant, repetition, arm)
            directory.mkdir()
            where = f" {scenario.sweep.parameter} = {variant.label}," if scenario.sweep else ""
            progress.update(total, description=f"[{index + 1}/{len(plan)}] {arm.name},{where} repetition {repetition}")
            context = ArmContext(variant.scenario, arm, repetition, directory, results.name, influx_url, variant)
            (directory / "run.json").write_text(json.dumps(context.describe(), indent=1) + "\n")
            started = time.monotonic()
            try:
                stats = asyncio.run(stop.run(_with_progress(context, progress, total, base, started)))
            except asyncio.CancelledError:
                if stop.signum is None:
                    raise
                _mark_stopped(results, stop.signum, index, len(plan), directory, context)
            # Only now is the run a measurement: `rnf report` leaves out a run folder without the mark.
            (directory / "run.json").write_text(json.dumps(context.describe() | {"complete": True}, indent=1) + "\n")
            if stats is not None and on_recorder_stats is not None:
                on_recorder_stats(directory.name, stats)
            base += variant.scenario.duration_s
            progress.update(total, completed=base)
    return results


def _mark_stopped(
    results: Path,
    signum: int,
    done: int,
    planned: int,
    directory: Path | None = None,
    context: ArmContext | None = None,
) -> NoReturn:
    """Say in the results folder that a signal stopped the scenario (and the run in `directory`), then raise."""
    name = signal.Signals(signum).name
    if directory is not None and context is not None:
        (directory / "run.json").write_text(json.dumps(context.describe() | {"stopped": name}, indent=1) + "\n")
    metadata = json.loads((results / "metadata.json").read_text())
    metadata["stopped"] = {"signal": name, "at": datetime.now(UTC).isoformat(), "runs": done, "planned": planned}
    (results / "metadata.json").write_text(json.dumps(metadata, indent=1, default=str) + "\n")
    kind = Interrupted if signum == signal.SIGINT else Stopped
    raise kind(f"stopped by {name} after {done} of {planned} runs; {results} is incomplete")


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
