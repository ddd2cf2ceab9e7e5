"""The srsRAN cell kinds of `rnf run`: the real stack (`stack.py`) behind the same namespaces as the virtual cell.

```
 P-server                           P-core                                                  P-ueN
 [eth0 10.20.0.2] ====veth==== [wan0 10.20.0.1]  srsepc [srs_spgw_sgi 172.16.0.1]          [tun_srsue 172.16.0.N+1]
                                                 srsenb ──ZeroMQ radio── srsue N ─────────────┘
                                                        (`srsran-zmq`: through the bridge)
```

`srsran` wires srsenb to one srsue; `srsran-zmq` puts the GNU Radio bridge (zmq-bridge/) between srsenb and N srsue,
with each UE's gain trace from the scenario. The wired link is a plain veth pair: this kernel has no netem, and
the virtual cell's wire emulation belongs to its datapath, so the server is one hop from the core.

The telemetry socket and the bridge's control socket are `ipc://` endpoints under /run/rnf/: a file path reaches
across network namespaces, so the proxy and the recorder subscribe from the runner's process. The cell records
every telemetry message of each UE's data bearer as the `telemetry` measurement, and the `cell` measurement derived
from it (`derive.py`), for the analysis.

The one-way delay through the cell is measured by packet captures at the SGi device and at each UE's TUN
(`owd.py`): the run folder gets the virtual cell's `packets.bin`, and `cell-summary.json` the captures' counts
(`delay`: packets matched, unmatched, and lost by the captures).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from rnf_bridge import config as bridge_config
from rnf_bridge.launch import flowgraph_process, missing_system_modules
from rnf_cell.topology import (
    CORE_WAN_IFNAME,
    CORE_WAN_IP,
    RUN_DIR,
    SERVER_IFNAME,
    SERVER_IP,
    UE_SUBNET,
    Names,
    leftovers,
    remove_namespaces,
    run,
)
from rnf_foundation.addresses import ue_index
from rnf_foundation.errors import UserError
from rnf_telemetry.message import TelemetryMessage
from rnf_telemetry.record import Recorder, telemetry_fields
from rnf_telemetry.transport import Subscriber

from rnf_experiments.cells.capture import CaptureError
from rnf_experiments.cells.derive import CapacityEstimate, cell_fields
from rnf_experiments.cells.owd import DelayCapture
from rnf_experiments.cells.spec import SrsranCellSpec, SrsranZmqCellSpec
from rnf_experiments.cells.stack import (
    DRB_LCID,
    Radio,
    SrsStack,
    StackConfig,
    StackError,
    find_build,
    sctp_preload,
)

log = logging.getLogger("rnf.cell")
BRIDGE_READY_S = 30.0


def server_link_plan(names: Names) -> list[list[str]]:
    """The server namespace and its veth to the core (which the stack has made), as iproute2 commands."""
    server, core = names.server, names.core
    return [
        ["ip", "netns", "add", server],
        ["ip", "-n", server, "link", "set", "lo", "up"],
        ["ip", "link", "add", SERVER_IFNAME, "netns", server, "type", "veth", "peer", CORE_WAN_IFNAME, "netns", core],
        ["ip", "-n", server, "addr", "add", f"{SERVER_IP}/24", "dev", SERVER_IFNAME],
        ["ip", "-n", core, "addr", "add", f"{CORE_WAN_IP}/24", "dev", CORE_WAN_IFNAME],
        ["ip", "-n", server, "link", "set", SERVER_IFNAME, "up"],
        ["ip", "-n", core, "link", "set", CORE_WAN_IFNAME, "up"],
        ["ip", "-n", server, "route", "add", str(UE_SUBNET), "via", str(CORE_WAN_IP)],
        ["ip", "netns", "exec", core, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"],
    ]


class SrsranCell:
    """A srsRAN cell for one arm, as an async context: namespaces, processes and recording exist inside it."""

    def __init__(self, spec: SrsranCellSpec | SrsranZmqCellSpec, workdir: Path, recorder: Recorder) -> None:
        self.spec = spec
        self.workdir = workdir.absolute()  # the processes run in it and read their configurations by these paths
        self.recorder = recorder
        self.names = Names(spec.namespace_prefix, len(spec.ues))
        self.telemetry_endpoint = f"ipc://{RUN_DIR}/{spec.namespace_prefix}-telemetry.ipc"
        self.bridge_control = f"ipc://{RUN_DIR}/{spec.namespace_prefix}-bridge.ipc"
        self.stack: SrsStack | None = None
        self.bridge: subprocess.Popen[bytes] | None = None  # the flowgraph's process (`srsran-zmq`)
        self.unmatched_messages = 0  # telemetry of a bearer whose UE address is not (yet) known
        self.delay: dict[str, Any] | None = None  # the delay measurement's counts, once the cell is down
        self._exits = contextlib.ExitStack()
        self._recording: asyncio.Task[None] | None = None

    async def __aenter__(self) -> SrsranCell:
        build = find_build(os.environ.get("SRSRAN_BUILD"))
        if isinstance(build, str):
            raise UserError(f"cell kind {self.spec.kind!r}: {build}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        found = leftovers(self.spec.namespace_prefix)
        if found:
            log.warning("removing leftovers of an earlier run: %s", ", ".join(found))
            remove_namespaces(found)
        for endpoint in (self.telemetry_endpoint, self.bridge_control):  # sockets srsenb and the bridge leave behind
            self._exits.callback(Path(endpoint.removeprefix("ipc://")).unlink, missing_ok=True)
        try:
            preload = sctp_preload(os.environ.get("SCTPSHIM"), self.workdir)
            radio, before_attach = self._radio()
            self.stack = SrsStack(
                StackConfig(
                    build=build,
                    workdir=self.workdir,
                    core_ns=self.names.core,
                    ue_namespaces=tuple(self.names.ue(i) for i in range(len(self.spec.ues))),
                    radio=radio,
                    preload=preload,
                    n_prb=self.spec.n_prb,
                    qci=self.spec.qci,
                    telemetry_endpoint=self.telemetry_endpoint,
                    telemetry_period_ms=self.spec.telemetry_period_ms,
                )
            )
            self._exits.callback(self.stack.stop)
            await asyncio.to_thread(self.stack.start, before_attach)
            self._exits.callback(remove_namespaces, [self.names.server])
            for command in server_link_plan(self.names):
                run(command)
            capture = DelayCapture(self.workdir, self.names.core, self.stack.config.ue_namespaces)
            await asyncio.to_thread(capture.start)
            # before the stack's stop: the devices go with srsepc and srsue, and tcpdump with them
            self._exits.callback(self._finish_delay, capture)
            subscriber = Subscriber(self.telemetry_endpoint)
            self._exits.callback(subscriber.close)
            self._recording = asyncio.create_task(self._record(subscriber))
            for index in range(len(self.spec.ues)):
                await asyncio.to_thread(self.stack.ping_ue, index)
        except (StackError, CaptureError) as error:
            await self.__aexit__(None, None, None)
            raise UserError(f"cell kind {self.spec.kind!r}: {error}") from None
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    def _radio(self) -> tuple[Radio, Callable[[], None] | None]:
        """The radio's device_args, and what starts between the UEs' start and their attach (the bridge)."""
        if isinstance(self.spec, SrsranCellSpec):
            return Radio.direct(self.spec.n_prb), None
        config = self.spec.bridge_config(self.bridge_control)
        if (missing := missing_system_modules()) is not None:
            raise UserError(missing)
        plan = bridge_config.to_plan(config, "cell (srsran-zmq)")
        (self.workdir / "bridge.json").write_text(json.dumps(config.model_dump(mode="json"), indent=1) + "\n")
        args = bridge_config.device_args(config)
        radio = Radio(args["srsenb"], tuple(args[name] for name in config.ue_names()))
        ready = self.workdir / "bridge-ready.json"

        def start_bridge() -> None:
            log_file = self._exits.enter_context((self.workdir / "bridge.log").open("wb"))
            process = self._exits.enter_context(
                flowgraph_process(plan, ready, namespace=self.names.core, stdout=log_file, stderr=subprocess.STDOUT)
            )
            self.bridge = process
            deadline = time.monotonic() + BRIDGE_READY_S
            while not ready.exists():
                if process.poll() is not None or time.monotonic() > deadline:
                    output = (self.workdir / "bridge.log").read_text(errors="replace")[-2000:]
                    raise StackError(f"the bridge did not come up within {BRIDGE_READY_S:.0f} s:\n{output}")
                time.sleep(0.1)

        return radio, start_bridge

    def _finish_delay(self, capture: DelayCapture) -> None:
        """Stops the captures, writes packets.bin, and the counts to cell-summary.json (the analysis reads `lost`)."""
        self.delay = capture.finish()
        (self.workdir / "cell-summary.json").write_text(json.dumps({"delay": self.delay}, indent=1) + "\n")
        lost = self.delay["lost"]
        if lost is None or lost > 0:
            log.warning(
                "%s: the packet captures lost %s packets; the one-way delay covers the %d they matched",
                self.workdir,
                "an unknown number of" if lost is None else lost,
                self.delay["matched"],
            )

    async def _record(self, subscriber: Subscriber) -> None:
        estimates: dict[int, CapacityEstimate] = {}
        while True:
            for message in await subscriber.receive_burst():
                self._record_one(message, estimates)

    def _record_one(self, message: TelemetryMessage, estimates: dict[int, CapacityEstimate]) -> None:
        index = ue_index(message.ue_ip) if message.ue_ip else ""
        if message.lcid != DRB_LCID or not index.isdigit():
            self.unmatched_messages += message.lcid == DRB_LCID
            return
        tags = {"cell": str(message.cell_id), "ue": index, "rnti": str(message.rnti)}
        estimate = estimates.setdefault(int(index), CapacityEstimate())
        capacity = estimate.update(message)
        self.recorder.record("telemetry", tags, telemetry_fields(message), message.timestamp_ns)
        self.recorder.record("cell", tags, cell_fields(message, capacity, estimate.period_ttis), message.timestamp_ns)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._recording is not None:
            self._recording.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._recording
        await asyncio.to_thread(self._exits.close)
        if self.unmatched_messages:
            log.info("%d telemetry messages before the UE's address was known (not recorded)", self.unmatched_messages)
