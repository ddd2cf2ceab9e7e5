"""The bridge: a GNU Radio flowgraph between one srsenb and N srsue on srsRAN 4G's ZeroMQ radio.

    /usr/bin/python3 -m rnf_bridge.flowgraph PLAN.json [--ready-file PATH] [--parent PID]

(`rnf bridge run CONFIG` writes the plan and starts this under Debian's Python, which has GNU Radio.)

srsRAN's ZeroMQ radio is REQ/REP: each radio binds a REP socket on its tx port and answers requests with the
samples it transmits, and connects a REQ socket to its rx port to ask for the samples it receives (complex64).
The bridge plays the other end for everyone:

    srsenb tx ─REQ─► gain(ue1) ─ [fading] ─ [+noise] ─REP─► srsue 1 rx
              └───► gain(ue2) ─ [fading] ─ [+noise] ─REP─► srsue 2 rx        downlink: copied to every UE
    srsue 1 tx ─REQ─► gain(ue1) ─ [fading] ─┐
    srsue 2 tx ─REQ─► gain(ue2) ─ [fading] ─┴─ Σ ─ [+noise] ─REP─► srsenb rx   uplink: summed

GNU Radio moves every sample it receives and never drops or repeats one, so the i-th sample of every stream is
the same instant for all: srsenb's i-th transmitted sample, each UE's i-th received and i-th transmitted sample,
and srsenb's i-th received sample. Gains follow the sample index (see `gain.py`).

A control socket (ZeroMQ REP, JSON, see `control.py`) changes gains while running; a watchdog stops the bridge
when a peer goes away (the loop of lock-stepped radios stalls).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import math
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import zmq
from gnuradio import analog, blocks, channels, gr, zeromq

from rnf_bridge import control, liveness
from rnf_bridge.gain import Direction, GainPath, ScheduledGain
from rnf_bridge.plan import Fading, Plan, UePlan
from rnf_bridge.schedule import Schedule, ScheduleError

log = logging.getLogger("rnf-bridge")

ITEM_SIZE = gr.sizeof_gr_complex  # srsRAN's fc32 samples
ZMQ_POLL_MS = 100  # how long a ZeroMQ block waits in one work call; bounds how long stopping takes
PR_SET_PDEATHSIG = 1  # prctl(2)
BUFFER_ITEMS = 1 << 16  # per stream output: whole srsRAN messages (a 1 ms subframe is 23040 samples at 100 PRB)
NOISE_POOL = 1 << 16
WAITING_REPORT_S = 5.0
WATCHDOG_PERIOD_S = 0.1


def _noise(power_dbfs: float, seed: int) -> Any:
    """Complex AWGN of `power_dbfs` (power = amplitude**2). fastnoise_source_c draws from a pool of pre-generated
    Gaussian samples: a tenth of noise_source_c's CPU (4 against 45 ns a sample here)."""
    return analog.fastnoise_source_c(analog.GR_GAUSSIAN, math.sqrt(10.0 ** (power_dbfs / 10.0)), seed, NOISE_POOL)


def _dbfs(power: float) -> float | None:
    return 10.0 * math.log10(power) if power > 0 else None


class SocketError(RuntimeError):
    """A socket the bridge cannot bind or connect; the message names its endpoint."""


def _req_source(endpoint: str) -> Any:
    try:
        return zeromq.req_source(ITEM_SIZE, 1, endpoint, ZMQ_POLL_MS, False, -1)
    except RuntimeError as error:
        raise SocketError(f"cannot connect to {endpoint}: {error}") from None


def _rep_sink(endpoint: str) -> Any:
    try:
        return zeromq.rep_sink(ITEM_SIZE, 1, endpoint, ZMQ_POLL_MS, False, -1)
    except RuntimeError as error:
        raise SocketError(f"cannot bind {endpoint}: {error}") from None


def _fading_model(fading: Fading, sample_rate: float, seed: int) -> Any:
    return channels.fading_model(
        fading.sinusoids, fading.doppler_hz / sample_rate, fading.model == "rician", fading.k_factor, seed
    )


@dataclass
class UePath:
    """The blocks of one UE, by name, and the gain they share."""

    plan: UePlan
    gain: GainPath
    tx_source: Any  # zeromq.req_source on the UE's tx port
    rx_sink: Any  # zeromq.rep_sink the UE's rx port connects to
    downlink_gain: ScheduledGain
    uplink_gain: ScheduledGain
    downlink_fading: Any | None
    uplink_fading: Any | None
    noise: Any | None
    noise_sum: Any | None


class Bridge(gr.top_block):  # type: ignore[misc]
    """The flowgraph for a plan. Bound endpoints (port 0 resolved) are in `enb_rx_endpoint` and `ue_rx_endpoints`."""

    def __init__(self, plan: Plan) -> None:
        gr.top_block.__init__(self, "rnf-bridge")
        self.plan = plan
        rate = plan.sample_rate
        self.enb_tx_source = _req_source(plan.enb_tx)
        self.enb_rx_sink = _rep_sink(plan.enb_rx)
        self.ues: dict[str, UePath] = {}
        uplinks: list[Any] = []
        for index, ue in enumerate(plan.ues):
            path = GainPath(ue.schedule, rate)
            ue_path = UePath(
                plan=ue,
                gain=path,
                tx_source=_req_source(ue.tx),
                rx_sink=_rep_sink(ue.rx),
                downlink_gain=ScheduledGain(path, Direction.DOWNLINK, rate, f"{ue.name}_downlink_gain"),
                uplink_gain=ScheduledGain(path, Direction.UPLINK, rate, f"{ue.name}_uplink_gain"),
                downlink_fading=_fading_model(ue.fading, rate, ue.fading.seed) if ue.fading else None,
                uplink_fading=_fading_model(ue.fading, rate, ue.fading.seed + 1) if ue.fading else None,
                noise=None,
                noise_sum=None,
            )
            downlink = [self.enb_tx_source, ue_path.downlink_gain]
            if ue_path.downlink_fading is not None:
                downlink.append(ue_path.downlink_fading)
            if ue.noise_dbfs is not None:
                ue_path.noise = _noise(ue.noise_dbfs, plan.seed + 1 + index)
                ue_path.noise_sum = blocks.add_vcc(1)
                self.connect(ue_path.noise, (ue_path.noise_sum, 1))
                downlink.append(ue_path.noise_sum)
            self.connect(*downlink, ue_path.rx_sink)
            uplink = [ue_path.tx_source, ue_path.uplink_gain]
            if ue_path.uplink_fading is not None:
                uplink.append(ue_path.uplink_fading)
            self.connect(*uplink)
            uplinks.append(uplink[-1])
            self.ues[ue.name] = ue_path
        self.enb_noise = None
        if plan.enb_noise_dbfs is not None:
            self.enb_noise = _noise(plan.enb_noise_dbfs, plan.seed)
            uplinks.append(self.enb_noise)
        if len(uplinks) == 1:
            self.uplink_sum = None
            self.connect(uplinks[0], self.enb_rx_sink)
        else:
            self.uplink_sum = blocks.add_vcc(1)
            for port, block in enumerate(uplinks):
                self.connect(block, (self.uplink_sum, port))
            self.connect(self.uplink_sum, self.enb_rx_sink)
        self.enb_rx_endpoint: str = self.enb_rx_sink.last_endpoint()
        self.ue_rx_endpoints: dict[str, str] = {name: ue.rx_sink.last_endpoint() for name, ue in self.ues.items()}
        for block in self._stream_blocks():
            block.set_min_output_buffer(BUFFER_ITEMS)

    def _stream_blocks(self) -> list[Any]:
        """Every block with a stream output."""
        found = [self.enb_tx_source, self.enb_noise, self.uplink_sum]
        for ue in self.ues.values():
            found += [ue.tx_source, ue.downlink_gain, ue.uplink_gain, ue.downlink_fading, ue.uplink_fading]
            found += [ue.noise, ue.noise_sum]
        return [block for block in found if block is not None]

    def set_gain_db(self, ue: str, gain_db: float) -> int:
        """A constant gain for `ue` from now on; returns the first sample that has it."""
        return self.ues[ue].gain.change(Schedule.constant(gain_db))

    def set_schedule(self, ue: str, schedule: Schedule) -> int:
        """`schedule` for `ue` from now on (its time 0 is now); returns the first sample that follows it."""
        return self.ues[ue].gain.change(schedule)

    def streams(self) -> list[liveness.Stream]:
        """What arrived from each peer: srsenb's downlink (as far as any UE's gain block got), each UE's uplink."""
        downlink = max((ue.downlink_gain for ue in self.ues.values()), key=lambda block: block.samples)
        streams = [liveness.Stream(f"srsenb (tx {self.plan.enb_tx})", downlink.samples, downlink.last_arrival)]
        for name, ue in self.ues.items():
            streams.append(
                liveness.Stream(f"{name} (tx {ue.plan.tx})", ue.uplink_gain.samples, ue.uplink_gain.last_arrival)
            )
        return streams

    def status(self) -> dict[str, Any]:
        rate = self.plan.sample_rate
        downlink_samples = max(ue.downlink_gain.samples for ue in self.ues.values())
        arrivals = [ue.downlink_gain.first_arrival for ue in self.ues.values() if ue.downlink_gain.first_arrival]
        return {
            "sample_rate": rate,
            "stream_time_s": downlink_samples / rate,  # srsenb's samples so far, in seconds of radio time
            "wall_time_s": time.monotonic() - min(arrivals) if arrivals else 0.0,  # since srsenb's first sample
            "enb": {
                "tx": self.plan.enb_tx,
                "rx": self.enb_rx_endpoint,
                "noise_dbfs": self.plan.enb_noise_dbfs,
            },
            "ues": [
                {
                    "name": name,
                    "tx": ue.plan.tx,
                    "rx": self.ue_rx_endpoints[name],
                    "gain_db": control.encode_gain(ue.gain.gain_db_now()),
                    "downlink_samples": ue.downlink_gain.samples,
                    "uplink_samples": ue.uplink_gain.samples,
                    "downlink_input_dbfs": _dbfs(ue.downlink_gain.power),
                    "uplink_input_dbfs": _dbfs(ue.uplink_gain.power),
                    "noise_dbfs": ue.plan.noise_dbfs,
                    "fading": ue.plan.fading.model if ue.plan.fading else None,
                }
                for name, ue in self.ues.items()
            ],
        }

    def handle(self, request: bytes) -> bytes:
        """One control request, one reply (see `control.py`)."""
        try:
            command = control.parse(request, self.ues.keys())
            match command:
                case control.Status():
                    return control.reply(**self.status())
                case control.SetGain(ue=ue, gain_db=gain_db):
                    at = self.set_gain_db(ue, gain_db)
                    log.info("%s: gain %s dB from sample %d", ue, gain_db, at)
                    return control.reply(ue=ue, gain_db=control.encode_gain(gain_db), at_sample=at)
                case control.LoadTrace(ue=ue, schedule=schedule):
                    at = self.set_schedule(ue, schedule)
                    log.info("%s: trace of %d rows from sample %d", ue, len(schedule.times_s), at)
                    return control.reply(ue=ue, rows=len(schedule.times_s), at_sample=at)
        except (control.ControlError, ScheduleError) as error:
            return control.failure(str(error))
        raise AssertionError(f"unhandled command {command}")


class ControlServer:
    """The REP control socket, served by one thread; binds at construction so errors surface before the start."""

    def __init__(self, bridge: Bridge, endpoint: str, context: zmq.Context[Any]) -> None:
        self._bridge = bridge
        self._socket = context.socket(zmq.REP)
        self._socket.setsockopt(zmq.LINGER, 0)
        try:
            self._socket.bind(endpoint)
        except zmq.ZMQError as error:
            self._socket.close()
            raise SocketError(f"cannot bind the control socket {endpoint}: {error}") from None
        self.endpoint: str = self._socket.getsockopt_string(zmq.LAST_ENDPOINT)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="bridge-control", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            if self._socket.poll(ZMQ_POLL_MS, zmq.POLLIN):
                self._socket.send(self._bridge.handle(self._socket.recv()))

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._socket.close()


def supervise(bridge: Bridge, stop: threading.Event) -> str:
    """Watch the streams until `stop` is set or a peer goes away; returns why the bridge stops."""
    next_report = time.monotonic() + WAITING_REPORT_S
    announced = False
    while not stop.wait(WATCHDOG_PERIOD_S):
        now = time.monotonic()
        verdict = liveness.assess(bridge.streams(), now, bridge.plan.peer_timeout_s)
        match verdict:
            case liveness.Waiting(missing=missing) if now >= next_report:
                log.warning("waiting for samples from %s", ", ".join(missing))
                next_report = now + WAITING_REPORT_S
            case liveness.Running() if not announced:
                log.info("samples flowing from srsenb and every UE")
                announced = True
            case liveness.Stalled(first=first, idle_s=idle_s):
                return f"no samples for {idle_s:.1f} s; the first to stop was {first}, which has probably gone away"
    return "stopped by signal"


def _write_ready_file(path: Path, bridge: Bridge, control_endpoint: str) -> None:
    """The bound endpoints, for whoever started the bridge (written once everything is bound)."""
    ready = {
        "pid": os.getpid(),
        "control": control_endpoint,
        "enb_tx": bridge.plan.enb_tx,
        "enb_rx": bridge.enb_rx_endpoint,
        "ues": {name: {"tx": ue.plan.tx, "rx": bridge.ue_rx_endpoints[name]} for name, ue in bridge.ues.items()},
    }
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(ready, indent=1))
    partial.replace(path)


def serve(plan: Plan, ready_file: Path | None) -> int:
    """Run the bridge until a signal or until a peer goes away. Returns the exit code."""
    context: zmq.Context[Any] = zmq.Context()
    try:
        bridge = Bridge(plan)
        server = ControlServer(bridge, plan.control, context)
    except SocketError as error:
        log.error("%s", error)
        context.term()
        return 2
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    server.start()
    bridge.start()
    log.info(
        "bridge up at %g Msample/s: srsenb tx %s rx %s; %s; control %s",
        plan.sample_rate / 1e6,
        plan.enb_tx,
        bridge.enb_rx_endpoint,
        "; ".join(f"{name} tx {ue.plan.tx} rx {bridge.ue_rx_endpoints[name]}" for name, ue in bridge.ues.items()),
        server.endpoint,
    )
    if ready_file is not None:
        _write_ready_file(ready_file, bridge, server.endpoint)
    reason = supervise(bridge, stop)
    log.info("stopping: %s", reason)
    bridge.stop()
    bridge.wait()
    server.close()
    context.term()
    totals = ", ".join(
        f"{name} {ue.downlink_gain.samples} down / {ue.uplink_gain.samples} up" for name, ue in bridge.ues.items()
    )
    log.info("samples moved: %s", totals)
    return 0


def _stop_with(parent: int) -> bool:
    """Ask the kernel for SIGTERM when `parent` dies; False if it is gone already."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    return os.getppid() == parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m rnf_bridge.flowgraph", description=__doc__.split("\n\n")[0])
    parser.add_argument("plan", type=Path, help="plan JSON written by `rnf bridge run`")
    parser.add_argument("--ready-file", type=Path, help="write the bound endpoints here once listening")
    parser.add_argument("--parent", type=int, help="stop when this process (the launcher) dies")
    args = parser.parse_args(argv)
    if args.parent is not None and not _stop_with(args.parent):
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s rnf-bridge: %(message)s", stream=sys.stderr)
    gr.logging().set_default_level(gr.log_levels.warn)  # not GNU Radio's info line per buffer size
    try:
        plan = Plan.from_json(args.plan.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError) as error:
        log.error("%s: not a bridge plan: %s", args.plan, error)
        return 2
    return serve(plan, args.ready_file)


if __name__ == "__main__":
    sys.exit(main())
