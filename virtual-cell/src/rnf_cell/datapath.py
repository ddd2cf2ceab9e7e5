"""Running the Rust datapath (`rnf-cell-dp`, virtual-cell/datapath/INTERFACE.md) and reading its reports."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from rnf_foundation.errors import UserError

from rnf_cell.config import AckRegulator, CellConfig, CoDel, Mark, QueueDiscipline, TailDrop
from rnf_cell.topology import (
    SGI_IFNAME,
    UE_IFNAME,
    WIRE_CORE_IFNAME,
    WIRE_SERVER_IFNAME,
    Names,
)

BINARY_NAME = "rnf-cell-dp"
TTI_US = 1000


def binary() -> Path:
    """The datapath binary: $RNF_CELL_DP, the repository's release build, or one on PATH."""
    candidates = [
        os.environ.get("RNF_CELL_DP"),
        str(Path(__file__).resolve().parents[2] / "datapath" / "target" / "release" / BINARY_NAME),
        shutil.which(BINARY_NAME),
    ]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    raise UserError(f"the datapath binary {BINARY_NAME} is not built; run `make setup` (as root)")


@dataclass(frozen=True)
class UeReport:
    """One UE's report period from the datapath; counters are deltas over the period (bytes, TTIs)."""

    ue: int
    period: int
    tti_end: int
    time_ns: int
    queue_new_bytes: int
    queue_retx_bytes: int
    queue_sdus: int
    sched_new_bytes: int
    sched_retx_bytes: int
    grant_ttis: int
    capacity_bytes: int
    granted_capacity_bytes: int
    backlogged_capacity_bytes: int
    backlogged_ttis: int
    idle_ttis: int
    idle_capacity_bytes: int
    arrived_bytes: int
    arrived_sdus: int
    delivered_bytes: int
    delivered_sdus: int
    dropped_sdus: int
    dropped_bytes: int
    outage_ttis: int
    discarded_sdus: int
    discarded_bytes: int
    ce_marked_sdus: int
    aqm_dropped_sdus: int
    aqm_dropped_bytes: int
    ece_marked_acks: int
    held_acks: int
    held_ack_ttis: int
    forced_acks: int

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> UeReport:
        return cls(**{f.name: int(data[f.name]) for f in fields(cls)})


def queue_discipline(discipline: QueueDiscipline) -> dict[str, Any]:
    """A UE's `queue_discipline` as the datapath takes it, times in us."""
    match discipline:
        case CoDel():
            return {
                "kind": "codel",
                "target_us": round(discipline.target_ms * 1000),
                "interval_us": round(discipline.interval_ms * 1000),
            }
        case Mark():
            threshold_us = round(discipline.threshold_ms * 1000)
            return {"kind": "mark", "threshold_us": threshold_us, "ack_ece": discipline.ack_ece}
        case TailDrop():
            return {"kind": "tail_drop"}


def ack_regulator(regulator: AckRegulator) -> dict[str, Any]:
    """A UE's `ack_regulator` as the datapath takes it, times in us."""
    fields: dict[str, Any] = {
        "max_hold_rtts": regulator.max_hold_rtts,
        "initial_rtt_us": round(regulator.initial_rtt_ms * 1000),
    }
    if regulator.headroom_bytes is not None:
        fields["headroom_bytes"] = regulator.headroom_bytes
    return fields


def datapath_config(
    config: CellConfig,
    names: Names,
    trace_files: list[Path],
    uplink_files: list[Path | None],
    packet_log: Path | None,
    duration_ms: int | None,
) -> dict[str, Any]:
    """The JSON configuration INTERFACE.md defines; `uplink_files` per UE, None for a UE without an uplink trace."""
    return {
        "tti_us": TTI_US,
        "report_period_ttis": config.telemetry.period_ms * 1000 // TTI_US,
        "scheduler": config.scheduler,
        "pf_window_ttis": config.pf_window_ttis,
        "seed": config.seed,
        "realtime_priority": config.realtime_priority,
        "keep_cpus_awake": config.keep_cpus_awake,
        "duration_ms": duration_ms,
        "packet_log": str(packet_log) if packet_log else None,
        "wired": {
            "netns": names.wire,
            "server_ifname": WIRE_SERVER_IFNAME,
            "core_ifname": WIRE_CORE_IFNAME,
            "rate_bps": round(config.wired.rate_mbps * 1e6),
            "delay_us": round(config.wired.delay_ms * 1000),
            "queue_limit_bytes": config.wired.queue_bytes,
        },
        "core": {"netns": names.core, "ifname": SGI_IFNAME},
        "ues": [
            {
                "netns": names.ue(i),
                "ifname": UE_IFNAME,
                "ipv4": str(ip),
                "trace_file": str(trace_files[i]),
                "backhaul_delay_us": round(ue.backhaul_delay_ms * 1000),
                "delivery_delay_us": round(ue.delivery_delay_ms * 1000),
                "uplink_delay_us": round(ue.uplink_delay_ms * 1000),
                "uplink_sr_period_us": round(ue.uplink_sr_period_ms * 1000),
                "uplink_grant_period_us": round(ue.uplink_grant_period_ms * 1000),
                "uplink_grant_chain": ue.uplink_grant_chain,
                "queue_limit_bytes": ue.queue_limit_bytes,
                "queue_limit_sdus": ue.queue_limit_sdus,
                "harq_bler": ue.harq_bler,
                "harq_rtt_us": round(ue.harq_rtt_ms * 1000),
                "discard_timer_us": round(ue.discard_timer_ms * 1000),
                "queue_discipline": queue_discipline(ue.queue_discipline),
                "trace_starts_at_first_packet": ue.trace_start == "first_packet",
                **({} if ue.ack_regulator is None else {"ack_regulator": ack_regulator(ue.ack_regulator)}),
                **({} if uplink_files[i] is None else {"uplink_trace_file": str(uplink_files[i])}),
            }
            for i, (ue, ip) in enumerate(zip(config.ues, config.ue_ips(), strict=True))
        ],
    }


class Datapath:
    """The running datapath process: its report stream and its final summary."""

    def __init__(self, process: asyncio.subprocess.Process, stderr_path: Path) -> None:
        self._process = process
        self._stderr_path = stderr_path
        self.summary: dict[str, Any] | None = None

    @classmethod
    async def start(cls, config_path: Path, stderr_path: Path) -> Datapath:
        with stderr_path.open("wb") as stderr:
            process = await asyncio.create_subprocess_exec(
                str(binary()),
                str(config_path),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                limit=1 << 20,
            )
        return cls(process, stderr_path)

    async def reports(self) -> AsyncIterator[UeReport]:
        """UE reports until the datapath stops; the summary is kept in `summary`."""
        assert self._process.stdout is not None
        while line := await self._process.stdout.readline():
            data = json.loads(line)
            if data["type"] == "ue":
                yield UeReport.from_json(data)
            elif data["type"] == "summary":
                self.summary = data
        code = await self._process.wait()
        if code != 0:
            raise UserError(f"the datapath stopped with status {code}: {self.error_text()}")

    def error_text(self) -> str:
        text = self._stderr_path.read_text(errors="replace").strip()
        return text.splitlines()[-1] if text else "(no message)"

    def stop(self) -> None:
        """Ask the datapath to stop; it writes its summary and exits."""
        if self._process.returncode is None:
            self._process.terminate()

    async def wait(self) -> int:
        return await self._process.wait()
