"""`rnf bridge`: run the GNU Radio channel between srsenb and srsue, and steer it while it runs.

This module runs in the venv and never imports GNU Radio: `run` starts the flowgraph under Debian's python3
(`launch.py`), the other commands talk to its control socket with pyzmq.
"""

from __future__ import annotations

import math
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rnf_foundation.endpoints import CONNECT_ENDPOINT
from rnf_foundation.errors import UserError

from rnf_bridge import client, config, control, launch, traces

console = Console(highlight=False)
control_option = click.option(
    "--control",
    "control_endpoint",
    type=CONNECT_ENDPOINT,
    envvar="RNF_BRIDGE_CONTROL",
    default=config.DEFAULT_CONTROL,
    show_default=True,
    help="The bridge's control socket (env RNF_BRIDGE_CONTROL).",
)


def _ask(endpoint: str, command: dict[str, Any]) -> dict[str, Any]:
    try:
        return client.request(endpoint, command)
    except client.ControlFailed as error:
        raise UserError(str(error)) from None


@click.group("bridge")
def bridge() -> None:
    """GNU Radio channel between srsenb and N srsue on srsRAN's ZeroMQ radio: gains, traces, live control."""


@bridge.command("check")
@click.argument("config_file", type=click.Path(dir_okay=False, path_type=Path))
def check(config_file: Path) -> None:
    """Validate CONFIG_FILE and print the device_args srsenb and every srsue need."""
    bridge_config = config.load(config_file)
    plan = config.to_plan(bridge_config, str(config_file))
    rate = plan.sample_rate / 1e6
    click.echo(f"{config_file}: {len(plan.ues)} UE(s) at {rate:g} Msample/s, control socket {plan.control}")
    for name, args in config.device_args(bridge_config).items():
        click.echo(f'  {name}: --rf.device_name=zmq --rf.device_args="{args}"')
    click.echo("Start srsenb and every srsue first (any order), then the bridge.")


@bridge.command("run")
@click.argument("config_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--ready-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the bound endpoints (JSON) here once the bridge listens.",
)
def run(config_file: Path, ready_file: Path | None) -> None:
    """Run the bridge described by CONFIG_FILE until Ctrl-C or until srsenb or a srsue goes away."""
    plan = config.to_plan(config.load(config_file), str(config_file))
    if (missing := launch.missing_system_modules()) is not None:
        raise UserError(missing)
    with launch.flowgraph_process(plan, ready_file, stdin=subprocess.DEVNULL) as process:

        def forward(signum: int, _frame: FrameType | None) -> None:
            process.send_signal(signum)

        signal.signal(signal.SIGTERM, forward)
        signal.signal(signal.SIGINT, forward)
        code = process.wait()
    if code != 0:
        sys.exit(code)


@bridge.command("status")
@control_option
@click.option("--json", "as_json", is_flag=True, help="Print the raw reply.")
def status(control_endpoint: str, as_json: bool) -> None:
    """Gains, sample counts and input powers of a running bridge."""
    reply = _ask(control_endpoint, {"command": "status"})
    if as_json:
        console.print_json(data=reply)
        return
    stream_s, wall_s = reply["stream_time_s"], reply["wall_time_s"]
    pace = f", {stream_s / wall_s:.2f}x real time" if wall_s > 0 else ""
    rate = reply["sample_rate"] / 1e6
    console.print(f"bridge at {rate:g} Msample/s: {stream_s:.3f} s of samples in {wall_s:.1f} s{pace}")
    table = Table()
    for column in ("UE", "gain dB", "down samples", "up samples", "down dBFS", "up dBFS", "noise dBFS"):
        table.add_column(column, justify="right")

    def db(value: float | str | None) -> str:
        return "-" if value is None else str(value) if isinstance(value, str) else f"{value:.1f}"

    for ue in reply["ues"]:
        table.add_row(
            ue["name"],
            db(ue["gain_db"]),
            str(ue["downlink_samples"]),
            str(ue["uplink_samples"]),
            db(ue["downlink_input_dbfs"]),
            db(ue["uplink_input_dbfs"]),
            db(ue["noise_dbfs"]),
        )
    console.print(table)


def _decibels(value: str) -> float:
    gain = float(value)
    if math.isnan(gain) or gain == math.inf:
        raise ValueError(value)
    return gain


@bridge.command("set-gain", context_settings={"ignore_unknown_options": True})
@click.argument("ue")
@click.argument("gain_db", metavar="DB")
@control_option
def set_gain(ue: str, gain_db: str, control_endpoint: str) -> None:
    """Set UE's path gain to DB from now on, replacing its trace; -inf is an outage."""
    try:
        value = _decibels(gain_db)
    except ValueError:
        raise UserError(f"DB must be a gain in dB or -inf, got {gain_db!r}") from None
    reply = _ask(control_endpoint, {"command": "set_gain", "ue": ue, "gain_db": control.encode_gain(value)})
    console.print(f"{ue}: gain {reply['gain_db']} dB from sample {reply['at_sample']}")


@bridge.command("load-trace")
@click.argument("ue")
@click.argument("trace_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--once", is_flag=True, help="Play the trace once and hold its last gain, instead of looping.")
@control_option
def load_trace(ue: str, trace_file: Path, once: bool, control_endpoint: str) -> None:
    """Play TRACE_FILE (`time_s,gain_db` CSV) on UE's path gain, starting now."""
    try:
        schedule = traces.read_csv(trace_file, loop=not once)
    except traces.TraceError as error:
        raise UserError(str(error)) from None
    gains = [control.encode_gain(g) for g in schedule.gains_db]
    command = {"command": "load_trace", "ue": ue, "times_s": list(schedule.times_s), "gains_db": gains}
    reply = _ask(control_endpoint, {**command, "loop": schedule.loop})
    console.print(f"{ue}: trace of {reply['rows']} rows from sample {reply['at_sample']}")
