"""Virtual cell benchmarks (docs/benchmarks.md): forwarding rate, trace fidelity, TTI jitter, and the same with a
queue discipline or the ACK Regulator on.

    python -m rnf_cell.bench [--seconds 10] [--only forwarding|fidelity|disciplines]

Forwarding is measured against a reference in the same run: the same iperf3 download over a plain veth
between two namespaces, where the kernel forwards with no user-space hop at all.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import tempfile
import time
import uuid
from itertools import pairwise
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rnf_telemetry.message import TelemetryMessage
from rnf_telemetry.record import NullRecorder

from rnf_cell.cell import VirtualCell
from rnf_cell.config import parse_cell
from rnf_cell.datapath import UeReport
from rnf_cell.topology import SERVER_IP

console = Console(highlight=False)


def _iperf(server_ns: str, client_ns: str, server_ip: str, seconds: float, streams: int) -> float:
    """Downlink iperf3 TCP goodput (Mbit/s) from `server_ns` to `client_ns`, measured at the receiver."""
    server = subprocess.Popen(["ip", "netns", "exec", server_ns, "iperf3", "-s", "-1"], stdout=subprocess.DEVNULL)
    time.sleep(0.3)
    try:
        result = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                client_ns,
                "iperf3",
                "-c",
                server_ip,
                "-R",
                "-J",
                "-t",
                str(seconds),
                "-P",
                str(streams),
                "-O",
                "1",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        server.wait(timeout=10)
    return json.loads(result.stdout)["end"]["sum_received"]["bits_per_second"] / 1e6


def reference_veth(seconds: float, streams: int) -> float:
    """The same download over a plain veth pair: the kernel's own forwarding, no user-space hop."""
    a, b = f"bref{uuid.uuid4().hex[:5]}a", f"bref{uuid.uuid4().hex[:5]}b"
    commands = [
        ["ip", "netns", "add", a],
        ["ip", "netns", "add", b],
        ["ip", "link", "add", "eth0", "netns", a, "type", "veth", "peer", "eth0", "netns", b],
        ["ip", "-n", a, "addr", "add", "10.99.0.1/24", "dev", "eth0"],
        ["ip", "-n", b, "addr", "add", "10.99.0.2/24", "dev", "eth0"],
        ["ip", "-n", a, "link", "set", "eth0", "up"],
        ["ip", "-n", b, "link", "set", "eth0", "up"],
        ["ip", "-n", a, "link", "set", "lo", "up"],
        ["ip", "-n", b, "link", "set", "lo", "up"],
    ]
    try:
        for command in commands:
            subprocess.run(command, check=True, capture_output=True)
        return _iperf(a, b, "10.99.0.1", seconds, streams)
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _cell(trace: dict[str, Any], queue_bytes: int, **ue: Any) -> dict[str, Any]:
    return {
        "namespace_prefix": "b" + uuid.uuid4().hex[:5],
        "telemetry": {"endpoint": "tcp://127.0.0.1:0", "period_ms": 10},
        "packet_log": False,
        "wired": {"delay_ms": 1, "rate_mbps": 10_000, "queue_bytes": 4_000_000},
        "ues": [{"trace": trace, "backhaul_delay_ms": 1, "uplink_delay_ms": 1, "queue_limit_bytes": queue_bytes, **ue}],
    }


async def _through_cell(
    data: dict[str, Any], seconds: float, streams: int, ecn: bool = False
) -> tuple[float, list[UeReport], dict]:
    config = parse_cell(data, "bench")
    reports: list[UeReport] = []
    with tempfile.TemporaryDirectory() as workdir:
        cell = VirtualCell(config, Path(workdir), NullRecorder())
        async with cell:
            keep = cell._record

            def record(report: UeReport, message: TelemetryMessage) -> None:
                reports.append(report)
                keep(report, message)

            cell._record = record  # type: ignore[method-assign]
            for namespace in (cell.names.server, cell.names.ue(0)):
                subprocess.run(
                    ["ip", "netns", "exec", namespace, "sysctl", "-qw", f"net.ipv4.tcp_ecn={int(ecn)}"], check=True
                )
            mbps = await asyncio.to_thread(
                _iperf, cell.names.server, cell.names.ue(0), str(SERVER_IP), seconds, streams
            )
    return mbps, reports, cell.summary or {}


def forwarding(seconds: float) -> dict[str, dict[str, float]]:
    """Aggregate forwarding through the cell with capacity far above what the machine can carry."""
    results = {}
    for streams in (1, 4):
        cell_mbps, _, summary = asyncio.run(
            _through_cell(_cell({"generator": "constant", "rate_mbps": 20_000}, 4_000_000), seconds, streams)
        )
        veth_mbps = reference_veth(seconds, streams)
        results[f"{streams} stream(s)"] = {
            "cell_mbps": cell_mbps,
            "veth_mbps": veth_mbps,
            "lateness_p99_us": summary["tti_lateness_ns"]["p99"] / 1e3,
            "lateness_max_us": summary["tti_lateness_ns"]["max"] / 1e3,
        }
    return results


def fidelity(seconds: float) -> dict[str, float]:
    """A backlogged CUBIC download on paper 000's piecewise trace: delivered against trace capacity, over the
    report periods that began with at least their capacity queued."""
    trace = {"generator": "piecewise", "min_mbps": 5, "max_mbps": 50, "period_s": 0.2, "duration_s": 60}
    _, reports, summary = asyncio.run(_through_cell(_cell(trace, 1_500_000), seconds, 1))
    # A period that starts with its whole capacity queued has at least each TTI's capacity queued at that TTI
    # (arrivals only add), so the trace alone decides what it serves. A queue that is not empty but holds less
    # than a TTI's capacity (CUBIC's after a loss, at 50 Mbit/s) leaves capacity unused by the sender's doing.
    saturated = [
        period
        for before, period in pairwise(reports)
        if period.period == before.period + 1
        and before.queue_new_bytes + before.queue_retx_bytes >= period.capacity_bytes > 0
    ]
    delivered = sum(r.delivered_bytes for r in saturated)
    capacity = sum(r.capacity_bytes for r in saturated)
    first, last = reports[0], reports[-1]
    return {
        # TTIs run per wall-clock second: 1.0 when the TTI clock keeps real time.
        "tti_clock_ratio": (last.tti_end - first.tti_end) * 1e6 / (last.time_ns - first.time_ns),
        "saturated_periods": len(saturated),
        "periods": len(reports),
        "delivered_over_capacity": delivered / capacity if capacity else float("nan"),
        "lateness_p50_us": summary["tti_lateness_ns"]["p50"] / 1e3,
        "lateness_p99_us": summary["tti_lateness_ns"]["p99"] / 1e3,
        "lateness_max_us": summary["tti_lateness_ns"]["max"] / 1e3,
    }


# What the datapath does per packet besides forwarding: each discipline (aqm.rs) and the ACK Regulator (ackreg.rs),
# with ECN negotiated where they mark.
DISCIPLINES: dict[str, tuple[dict[str, Any], bool]] = {
    "tail_drop": ({}, False),
    "codel": ({"queue_discipline": {"kind": "codel"}}, True),
    "mark": ({"queue_discipline": {"kind": "mark"}}, True),
    "mark, ack_ece": ({"queue_discipline": {"kind": "mark", "ack_ece": True}}, True),
    "ack_regulator": ({"ack_regulator": {}}, True),
}


def disciplines(seconds: float) -> dict[str, dict[str, float]]:
    """Per discipline: the most the cell forwards (one stream, capacity far above the machine's) and the TTI
    lateness of a download at 150 Mbit/s (the requirement's rate), each with its own run."""
    results = {}
    for name, (ue, ecn) in DISCIPLINES.items():
        top, _, top_summary = asyncio.run(
            _through_cell(_cell({"generator": "constant", "rate_mbps": 20_000}, 4_000_000, **ue), seconds, 1, ecn)
        )
        at_150, _, summary = asyncio.run(
            _through_cell(_cell({"generator": "constant", "rate_mbps": 150}, 1_000_000, **ue), seconds, 1, ecn)
        )
        results[name] = {
            "top_mbps": top,
            "top_lateness_p99_us": top_summary["tti_lateness_ns"]["p99"] / 1e3,
            "mbps_at_150": at_150,
            "lateness_p99_us": summary["tti_lateness_ns"]["p99"] / 1e3,
            "lateness_max_us": summary["tti_lateness_ns"]["max"] / 1e3,
        }
    return results


def print_disciplines(seconds: float) -> None:
    table = Table(title="queue disciplines (iperf3 CUBIC download, one stream)")
    for column in ("discipline", "most Mbit/s", "its TTI lateness p99 µs", "at 150: Mbit/s", "p99 µs", "max µs"):
        table.add_column(column, justify="right")
    for name, row in disciplines(seconds).items():
        table.add_row(
            name,
            f"{row['top_mbps']:.0f}",
            f"{row['top_lateness_p99_us']:.0f}",
            f"{row['mbps_at_150']:.1f}",
            f"{row['lateness_p99_us']:.0f}",
            f"{row['lateness_max_us']:.0f}",
        )
    console.print(table)


def print_forwarding(seconds: float) -> None:
    table = Table(title="virtual cell forwarding (iperf3 TCP download, server ns -> UE ns)")
    for column in ("streams", "cell Mbit/s", "plain veth Mbit/s", "ratio", "TTI lateness p99 µs", "max µs"):
        table.add_column(column, justify="right")
    for streams, row in forwarding(seconds).items():
        table.add_row(
            streams,
            f"{row['cell_mbps']:.0f}",
            f"{row['veth_mbps']:.0f}",
            f"{row['cell_mbps'] / row['veth_mbps']:.3f}",
            f"{row['lateness_p99_us']:.0f}",
            f"{row['lateness_max_us']:.0f}",
        )
    console.print(table)


def print_fidelity(seconds: float) -> None:
    result = fidelity(seconds)
    console.print(
        f"fidelity (piecewise 5-50 Mbit/s, 0.2 s period, CUBIC, periods that began with their capacity queued "
        f"{result['saturated_periods']}/{result['periods']}): delivered/capacity "
        f"{result['delivered_over_capacity']:.4f}; TTIs per wall-clock ms {result['tti_clock_ratio']:.5f}; "
        f"TTI lateness p50 {result['lateness_p50_us']:.0f} µs, "
        f"p99 {result['lateness_p99_us']:.0f} µs, max {result['lateness_max_us']:.0f} µs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--only", choices=("forwarding", "fidelity", "disciplines"))
    args = parser.parse_args()
    benchmarks = {"forwarding": print_forwarding, "fidelity": print_fidelity, "disciplines": print_disciplines}
    for name, run in benchmarks.items():
        if args.only in (None, name):
            run(args.seconds)


if __name__ == "__main__":
    main()
