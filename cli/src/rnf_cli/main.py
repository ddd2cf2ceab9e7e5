"""`rnf`: the testbed's single command. Subcommands are imported only when used, so `rnf --help` stays fast."""

from __future__ import annotations

import importlib
import logging
import sys
import traceback
from collections.abc import Sequence
from typing import NamedTuple

import click


class Subcommand(NamedTuple):
    target: str  # "module:attribute" of a click command in a component package
    summary: str


SUBCOMMANDS: dict[str, Subcommand] = {
    "cell": Subcommand("rnf_cell.cli:cell", "Run the virtual cell (emulated eNB) from a cell file."),
    "telemetry": Subcommand("rnf_telemetry.cli:telemetry", "Listen to RAN telemetry; golden vectors."),
    "trace": Subcommand("rnf_cell.cli:trace", "Inspect and generate capacity traces."),
    "run": Subcommand("rnf_experiments.cli:run", "Run every arm of a scenario and write a results folder."),
    "worker": Subcommand("rnf_experiments.cli:worker", "Run a scenario's blocks sent by a Dask scheduler (rnf run)."),
    "report": Subcommand("rnf_experiments.cli:report", "Compare results folders in a table and plots."),
    "calibrate": Subcommand("rnf_experiments.cli:calibrate", "Derive a virtual cell from a srsRAN run; check it."),
    "model": Subcommand("rnf_experiments.cli:model_command", "Predict end-to-end TCP throughput from a trace."),
    "frontier": Subcommand(
        "rnf_experiments.cli:frontier_command", "What an ideal queue-target sender reaches on a trace."
    ),
    "proxy": Subcommand("rnf_proxy.cli:proxy", "Run the split proxy (smvs, rnf, itcp, clamp, ewma)."),
    "params": Subcommand("rnf_proxy.cli:params", "Check controller parameters against the papers' rules."),
    "record": Subcommand("rnf_monitoring.cli:record", "Recorded runs and InfluxDB: import a results folder."),
    "grafana": Subcommand("rnf_monitoring.cli:grafana", "Grafana dashboards as code: generate grafana/dashboards."),
    "bridge": Subcommand("rnf_bridge.cli:bridge", "GNU Radio channel between srsenb and srsue (ZeroMQ radio)."),
}


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        subcommand = SUBCOMMANDS.get(cmd_name)
        if subcommand is None:
            return None
        module_name, attribute = subcommand.target.split(":")
        command: click.Command = getattr(importlib.import_module(module_name), attribute)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, SUBCOMMANDS[name].summary) for name in self.list_commands(ctx)])


@click.group(cls=LazyGroup)
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def cli(verbose: int) -> None:
    """Cross-layer TCP control over cellular links: virtual cell, proxy, experiments."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


BUG_EXIT = 70  # EX_SOFTWARE: an internal error, told apart from a user's (2)


def main(args: Sequence[str] | None = None) -> None:
    """Run `rnf`; a user's mistake, a bad option included, is one line on stderr (click's usage block is not).
    Anything else is a bug in rnf: its traceback, then a line saying so."""
    try:
        code = cli.main(args=args, prog_name="rnf", standalone_mode=False)
    except click.ClickException as error:
        click.echo(f"Error: {error.format_message()}", err=True)
        sys.exit(error.exit_code)
    except click.Abort:
        click.echo("Aborted!", err=True)
        sys.exit(1)
    except Exception as error:
        traceback.print_exc()
        click.echo(f"rnf: a bug, not a problem with your input ({type(error).__name__}); please report it with the "
                   "traceback above", err=True)  # fmt: skip
        sys.exit(BUG_EXIT)
    sys.exit(code if isinstance(code, int) else 0)
