"""The virtual cell as one async context: topology, datapath, telemetry publisher, recording.

```python
async with VirtualCell(config, workdir, recorder) as cell:
    ...  # namespaces exist, packets flow, telemetry is published on config.telemetry.endpoint
print(cell.totals, cell.summary)
```
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from types import TracebackType

import numpy as np
from rnf_foundation.errors import UserError
from rnf_telemetry.message import TelemetryMessage
from rnf_telemetry.record import Recorder, telemetry_fields
from rnf_telemetry.transport import Publisher

from rnf_cell import traces
from rnf_cell.config import CellConfig
from rnf_cell.datapath import Datapath, UeReport, datapath_config
from rnf_cell.export import Impairments, TelemetryBuilder
from rnf_cell.topology import Names, Topology

log = logging.getLogger("rnf.cell")
START_TIMEOUT_S = 10.0


class VirtualCell:
    def __init__(self, config: CellConfig, workdir: Path, recorder: Recorder, duration_s: float | None = None) -> None:
        self.config = config
        self.workdir = workdir
        self.recorder = recorder
        self.duration_s = duration_s
        self.names = Names(config.namespace_prefix, len(config.ues))
        self.ue_ips = config.ue_ips()
        self.rntis = config.rntis()
        self.totals: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.summary: dict[str, object] | None = None
        self.published = 0
        self.packet_log = workdir / "packets.bin" if config.packet_log else None
        rng = np.random.default_rng(config.seed)
        try:
            self.traces = [traces.with_outages(traces.build(ue.trace, rng), ue.outages) for ue in config.ues]
            self.uplink_traces = [
                traces.read_uplink_csv(ue.uplink_trace.file) if ue.uplink_trace is not None else None
                for ue in config.ues
            ]
        except traces.TraceError as error:
            raise UserError(str(error)) from None
        self._impairments = Impairments(config.telemetry.impairments, np.random.default_rng(config.seed + 1))
        self._builder = TelemetryBuilder(config)
        self._topology: Topology | None = None
        self._datapath: Datapath | None = None
        self._publisher: Publisher | None = None
        self._pump: asyncio.Task[None] | None = None
        self._first_report = asyncio.Event()
        self._started_at = 0.0

    @property
    def telemetry_endpoint(self) -> str:
        """Where the cell publishes its telemetry (from the caller's process, in the caller's namespace)."""
        return self.config.telemetry.endpoint

    async def __aenter__(self) -> VirtualCell:
        self.workdir.mkdir(parents=True, exist_ok=True)
        trace_files = []
        for index, trace in enumerate(self.traces):
            path = self.workdir / f"ue{index + 1}.cap"
            traces.write(trace, path)
            trace_files.append(path)
        uplink_files: list[Path | None] = []
        for index, uplink in enumerate(self.uplink_traces):
            if uplink is None:
                uplink_files.append(None)
                continue
            path = self.workdir / f"ue{index + 1}-uplink.bin"
            traces.write_uplink(uplink, path)
            uplink_files.append(path)
        try:
            self._publisher = Publisher(self.config.telemetry.endpoint)
        except OSError as error:
            raise UserError(str(error)) from None
        self._topology = Topology(self.names, self.ue_ips)
        try:
            self._topology.__enter__()
            duration_ms = round(self.duration_s * 1000) if self.duration_s else None
            config_path = self.workdir / "datapath.json"
            dp_config = datapath_config(
                self.config, self.names, trace_files, uplink_files, self.packet_log, duration_ms
            )
            config_path.write_text(json.dumps(dp_config, indent=1))
            self._datapath = await Datapath.start(config_path, self.workdir / "datapath.log")
            self._started_at = time.monotonic()
            self._pump = asyncio.create_task(self._run_pump())
            await self._wait_started()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def _wait_started(self) -> None:
        assert self._pump is not None
        started = asyncio.create_task(self._first_report.wait())
        await asyncio.wait({started, self._pump}, timeout=START_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
        started.cancel()
        if self._pump.done():
            self._pump.result()
            raise UserError("the datapath stopped before its first report")
        if not self._first_report.is_set():
            raise UserError(f"the datapath sent no report within {START_TIMEOUT_S:.0f} s")

    async def _run_pump(self) -> None:
        assert self._datapath is not None and self._publisher is not None
        loop = asyncio.get_running_loop()
        async for report in self._datapath.reports():
            self._first_report.set()
            message = self._builder.message(report)
            self._record(report, message)
            if not self._impairments.active:
                self._publisher.send(message)
                self.published += 1
                continue
            for send in self._impairments.apply(message, time.monotonic() - self._started_at):
                loop.call_later(send.delay_s, self._publisher.send, send.message)
                self.published += 1

    def _record(self, report: UeReport, message: TelemetryMessage) -> None:
        tags = {"cell": str(self.config.cell_id), "ue": str(report.ue + 1), "rnti": str(message.rnti)}
        counters = {k: v for k, v in asdict(report).items() if k not in ("ue", "period", "tti_end", "time_ns")}
        self.recorder.record("cell", tags, counters, report.time_ns)
        self.recorder.record("telemetry", tags, telemetry_fields(message), report.time_ns)
        totals = self.totals[report.ue]
        for key, value in counters.items():
            if not key.startswith("queue_"):
                totals[key] += value

    async def wait(self) -> None:
        """Until the datapath stops by itself (its duration) or fails."""
        assert self._pump is not None
        await asyncio.shield(self._pump)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self._datapath is not None:
                self._datapath.stop()
                if self._pump is not None:
                    try:
                        await asyncio.wait_for(asyncio.shield(self._pump), 5.0)
                    except (TimeoutError, UserError) as error:
                        log.warning("datapath did not stop cleanly: %s", error)
                self.summary = self._datapath.summary
        finally:
            if self._pump is not None and not self._pump.done():
                self._pump.cancel()
            if self._publisher is not None:
                self._publisher.close()
            if self._topology is not None:
                self._topology.__exit__(None, None, None)
