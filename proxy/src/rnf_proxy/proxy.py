"""The split proxy: listener, telemetry, per-UE aggregates and the step clock in one asyncio loop; the bytes
move in the relay engine's threads (`relay.py`).

Python API (what `rnf proxy` and the experiment runner use):

```python
config = ProxyConfig(namespace="rnf-core", controller=SmvsConfig(b_max_bytes=300_000))
async with Proxy(config, recorder) as proxy:   # interception, kernel tuning, listener, telemetry
    await asyncio.sleep(60)
    print(proxy.stats())
```

The proxy lives in the caller's process and namespace (its telemetry subscriber reaches the eNB's loopback
endpoint from there); its relay sockets are created inside `config.namespace` (`netns.py`). Telemetry
arrives in bursts (one message per UE per period); each burst is one vectorized controller step
(`feedback.step_many`). A tick every Ts samples the UE-side sockets (TCP_INFO) for the controllers that use
ACKs and lets every controller notice stale telemetry. Each step's controller state goes to the recorder as the
`controller` measurement, tagged with the UE's address and the controller kind.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import logging
import os
import socket
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import zmq
from rnf_foundation.addresses import ue_index
from rnf_foundation.errors import UserError
from rnf_telemetry.message import TelemetryMessage
from rnf_telemetry.record import NullRecorder, Recorder
from rnf_telemetry.topic import topic_filter
from rnf_telemetry.transport import Subscriber

from rnf_proxy import netns, params, sockets
from rnf_proxy.aggregate import Aggregate, Enforcement
from rnf_proxy.clamp import Clamp, ClampConfig
from rnf_proxy.config import ProxyConfig
from rnf_proxy.control import Controller, Decision, RanSample, Tick
from rnf_proxy.ewma import Ewma, EwmaConfig
from rnf_proxy.feedback import RanController, step_many
from rnf_proxy.fixed import Fixed, FixedConfig
from rnf_proxy.interception import Interception
from rnf_proxy.itcp import Itcp, ItcpConfig
from rnf_proxy.relay import Flow, FlowCounters, Relay
from rnf_proxy.rnf import Rnf, RnfBank, RnfConfig
from rnf_proxy.scheduler import StrideScheduler
from rnf_proxy.smvs import Smvs, SmvsBank, SmvsConfig, resolve
from rnf_proxy.tuning import KernelTuning

OPEN_FILES = 65_536
TELEMETRY_BURST = 8192  # messages taken per loop iteration at most
TICK = Tick()
# The report period is judged on the median of the first reports' measured intervals: srsenb's exporter measures
# each one, and on the ZeroMQ radio the first of a run strayed from its deadline (9.594 and 10.101 ms for 10 ms, 6.39
# and 4.877 ms for 5 ms). A period configured otherwise differs by a whole step or more.
PERIOD_SAMPLES = 20
PERIOD_TOLERANCE = 0.1  # relative
log = logging.getLogger("rnf.proxy")


def check_parameters(config: ProxyConfig) -> list[str]:
    """The SMVS rules (paper 000 (43), Sec. 5.2) for a configuration: problems as lines; raises UserError
    when a rule is broken and the configuration does not allow it."""
    controller = config.controller
    if not isinstance(controller, SmvsConfig):
        return []
    resolved = resolve(controller)
    if resolved is None:  # the normal case with an eNB that reports its queue limit: not a warning
        log.info("smvs: B_max is not configured; the rules are checked when telemetry reports the queue limit")
        return []
    report = params.check(resolved)
    broken = [f"smvs parameters break {rule.name}: {rule.detail}" for rule in report.broken]
    if broken and not config.allow_broken_params:
        raise UserError("; ".join(broken) + " (see `rnf params check`; allow_broken_params = true to run anyway)")
    return broken


def controller_factory(config: ProxyConfig) -> Callable[[], Controller]:
    """New per-UE controllers; the telemetry-driven ones share one bank (one vectorized step per burst)."""
    kind = config.controller
    if isinstance(kind, SmvsConfig):
        smvs_bank = SmvsBank(kind)
        return lambda: Smvs(bank=smvs_bank)
    if isinstance(kind, RnfConfig):
        rnf_bank = RnfBank(kind)
        return lambda: Rnf(bank=rnf_bank)
    if isinstance(kind, ClampConfig):
        return lambda: Clamp(kind)
    if isinstance(kind, EwmaConfig):
        return lambda: Ewma(kind)
    if isinstance(kind, FixedConfig):
        return lambda: Fixed(kind)
    assert isinstance(kind, ItcpConfig)
    return lambda: Itcp(kind)


# While any proxy of the process runs, two things hold for the whole process; the first proxy to start sets them
# up and the last to close undoes them.
#
# Python's full collection walks every object the process holds, about 100 000 from the imports of `rnf run`, and
# holds the interpreter meanwhile: 60-170 ms on two cores shared with srsenb and srsue, once every 10-30 s, during
# which no telemetry is stepped and no quota released (docs/architecture.md). What exists when the first proxy
# starts is moved out of the collector's generations (gc.freeze); what the proxies allocate is still collected.
#
# The loop thread steps every telemetry report and releases its quota; on a loaded host a normal task waits
# behind the cell's packets, the senders and the kernel's softirqs, and its steps come 10-20 ms late: on the
# 2-core virtual cell at 6 Mbit/s, 4-5 % of a run stood still in steps over two periods late, against 0.2-0.8 %
# at SCHED_FIFO (docs/benchmarks.md). So the thread that runs the loop goes to SCHED_FIFO at the first proxy's
# `realtime_priority` (never lower: a thread already real-time keeps its priority). The relay's workers and every
# process the loop starts keep the normal scheduler (SCHED_RESET_ON_FORK).
_proxies_running = 0
_loop_thread_scheduling: tuple[int, os.sched_param] | None = None  # what to give the thread back, if raised


def _first_proxy_starts(priority: int) -> None:
    global _loop_thread_scheduling
    gc.collect()  # no garbage is frozen
    gc.freeze()
    policy = os.sched_getscheduler(0)
    if priority == 0 or policy & ~os.SCHED_RESET_ON_FORK in (os.SCHED_FIFO, os.SCHED_RR):
        return
    previous = (policy, os.sched_getparam(0))
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(priority))
    except OSError as error:
        log.warning(
            "realtime_priority %d: SCHED_FIFO refused (%s); the proxy's steps run with the normal scheduler and "
            "come late on a loaded host",
            priority,
            error.strerror or error,
        )
        return
    _loop_thread_scheduling = previous


def _last_proxy_closes() -> None:
    global _loop_thread_scheduling
    gc.unfreeze()
    if _loop_thread_scheduling is not None:
        policy, param = _loop_thread_scheduling
        os.sched_setscheduler(0, policy, param)
        _loop_thread_scheduling = None


def _proxy_starts(priority: int) -> None:
    global _proxies_running
    if _proxies_running == 0:
        _first_proxy_starts(priority)
    _proxies_running += 1


def _proxy_closes() -> None:
    global _proxies_running
    _proxies_running -= 1
    if _proxies_running == 0:
        _last_proxy_closes()


class Proxy:
    """The split proxy; an async context manager."""

    def __init__(self, config: ProxyConfig, recorder: Recorder | None = None) -> None:
        self.config = config
        self.recorder = recorder or NullRecorder()
        self._recording = not isinstance(self.recorder, NullRecorder)
        self.aggregates: dict[str, Aggregate] = {}
        self.counters: Counter[str] = Counter()
        self._new_controller = controller_factory(config)
        self._enforcement = Enforcement(config.pump_interval_s)
        self._interception: Interception | None = None
        self._tuning: KernelTuning | None = None
        self._listener: socket.socket | None = None
        self._subscriber: Subscriber | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._tick_handle: asyncio.TimerHandle | None = None
        self._relay: Relay | None = None
        self._flows = 0
        self._checked: set[str] = set()
        self._reported_periods_s: list[float] = []  # the first PERIOD_SAMPLES, then no more
        self._judges_period = config.controller_step_s is not None  # a controller without a step has none to set
        self._running = False  # counted in _proxies_running
        self.last_decision_at = 0.0  # loop time of the last telemetry burst carried into decisions
        self.address: tuple[str, int] | None = None

    async def __aenter__(self) -> Proxy:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- lifecycle --------------------------------------------------------------------------------------

    async def start(self) -> None:
        config = self.config
        for line in check_parameters(config):
            log.warning(line)
        self.loop = asyncio.get_running_loop()
        sockets.raise_open_files(OPEN_FILES)
        try:
            self._relay = Relay(self.loop, config.relay_threads)
            if config.owns_window and config.kernel.tune:
                self._tuning = KernelTuning(
                    config.namespace, tuple(config.ue_networks), config.kernel.initcwnd_segments
                )
                self._tuning.apply()
            self._listener = self._listen()
            if config.mode == "transparent":
                self._interception = Interception(
                    config.namespace,
                    self.address or config.listen_address,
                    tuple(config.ue_networks),
                    tuple(config.ports),
                )
                self._interception.setup()
            self.loop.add_reader(self._listener.fileno(), self._accept)
            telemetry = config.telemetry
            topic = topic_filter(telemetry.cell_id)
            context: zmq.Context[zmq.Socket[bytes]] = (
                zmq.Context.instance()
            )  # a plain socket watched by the loop (Subscriber.receive_ready)
            self._subscriber = Subscriber(telemetry.endpoint, topic, context=context, curve=telemetry.curve())
            self.loop.add_reader(self._subscriber.fd, self._telemetry_ready)
            self._tick_handle = self.loop.call_later(config.tick_s, self._tick, self.loop.time() + config.tick_s)
            _proxy_starts(config.realtime_priority)
            self._running = True
        except BaseException:
            await self.close()
            raise

    def _listen(self) -> socket.socket:
        host, port = self.config.listen_address
        with netns.inside(self.config.namespace):
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if self.config.mode == "transparent":
                listener.setsockopt(socket.SOL_IP, socket.IP_TRANSPARENT, 1)
            listener.bind((host, port))
            listener.listen(1024)
            listener.setblocking(False)
        except OSError as error:
            listener.close()
            raise UserError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
        self.address = listener.getsockname()
        return listener

    async def close(self) -> None:
        if self._tick_handle is not None:
            self._tick_handle.cancel()
            self._tick_handle = None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._subscriber is not None:
            self.loop.remove_reader(self._subscriber.fd)
            self._subscriber.close()
            self._subscriber = None
        if self._listener is not None:
            self.loop.remove_reader(self._listener.fileno())
            self._listener.close()
            self._listener = None
        for aggregate in self.aggregates.values():
            aggregate.close()
        if self._relay is not None:
            self._relay.close()
            self._relay = None
        if self._interception is not None:
            self._interception.teardown()
            self._interception = None
        if self._tuning is not None:
            self._tuning.restore()
            self._tuning = None
        if self._running:
            _proxy_closes()
            self._running = False

    def _spawn(self, coroutine: Any) -> None:
        task = self.loop.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("proxy task failed", exc_info=task.exception())

    # -- connections ------------------------------------------------------------------------------------

    def _accept(self) -> None:
        assert self._listener is not None
        while True:
            try:
                ue_sock, peer = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as error:
                if error.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    log.error("cannot accept a connection: %s", error.strerror)
                    self.counters["accept_failures"] += 1
                    return
                raise
            self._spawn(self._connect(ue_sock, peer))

    async def _connect(self, ue_sock: socket.socket, peer: tuple[str, int]) -> None:
        config = self.config
        target = config.server_address or ue_sock.getsockname()
        ue_sock.setblocking(False)
        buffers = config.buffers
        known = self.aggregates.get(peer[0])
        share = self._share(len(known.flows) + 1 if known else 1, self._flows + 1)
        with netns.inside(config.namespace):
            server_sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            server_sock.setblocking(False)
            sockets.set_receive_buffer(server_sock, share // 2)  # sized before the first window is promised
            sockets.set_peer_timeout(server_sock, config.peer_timeout_s)
            if config.mode == "transparent":
                server_sock.setsockopt(socket.SOL_IP, socket.IP_TRANSPARENT, 1)
                server_sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                server_sock.bind(peer)  # the server sees the UE's address and port
            await asyncio.wait_for(self.loop.sock_connect(server_sock, target), config.peer_timeout_s)
        except (OSError, TimeoutError) as error:
            log.info("connection from %s:%d to %s:%d failed: %s", *peer, *target, error)
            self.counters["connect_failures"] += 1
            server_sock.close()
            sockets.reset_on_close(ue_sock)  # the UE sees a reset, as from a refusing server
            ue_sock.close()
            return
        self._configure_ue_socket(ue_sock)
        aggregate = self._aggregate(peer[0])
        assert self._relay is not None
        try:
            flow = Flow(
                self._relay,
                ue_sock,
                server_sock,
                aggregate,
                buffers.connection_bytes // 2,
                target[1],
                buffers.free_notsent_bytes,
                controlled=aggregate.controls,
                held=aggregate.decision.hold_wired,
            )
        except OSError as error:  # no pipe or descriptor left
            log.error("cannot relay a connection from %s:%d: %s", *peer, error.strerror or error)
            self.counters["relay_failures"] += 1
            for sock in (ue_sock, server_sock):
                sockets.reset_on_close(sock)
                sock.close()
            return
        traffic_class = config.scheduling.classify(target[1])
        aggregate.add(flow, traffic_class.priority, traffic_class.tickets)
        self._flows += 1
        self.counters["flows_opened"] += 1
        self._share_buffers(aggregate)

    def _configure_ue_socket(self, ue_sock: socket.socket) -> None:
        config = self.config
        congestion: str
        if isinstance(config.controller, ItcpConfig):
            congestion = config.controller.congestion
        else:
            congestion = config.kernel.congestion
            sockets.set_rto_max(ue_sock, config.kernel.rto_max_s)
        try:
            ue_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion.encode())
        except OSError as error:
            if not self.counters["congestion_refused"]:
                log.warning("TCP_CONGESTION %s refused (%s): the kernel's default stays", congestion, error.strerror)
            self.counters["congestion_refused"] += 1
        ue_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT, config.buffers.free_notsent_bytes)
        sockets.set_receive_buffer(ue_sock, config.buffers.connection_bytes // 2)
        sockets.set_peer_timeout(ue_sock, config.peer_timeout_s)

    def _share(self, ue_flows: int, all_flows: int) -> int:
        """A connection's buffer: min(per connection, per UE / the UE's connections, total / all connections)."""
        buffers = self.config.buffers
        return min(
            buffers.connection_bytes, buffers.ue_bytes // max(ue_flows, 1), buffers.total_bytes // max(all_flows, 1)
        )

    def _share_buffers(self, changed: Aggregate) -> None:
        """Give every connection of `changed` (of every UE, when the total binds) its current share. A lower
        share takes effect as the windows already promised are used up."""
        buffers = self.config.buffers
        limited = buffers.total_bytes // max(self._flows, 1) < buffers.connection_bytes
        for aggregate in self.aggregates.values() if limited else [changed]:
            share = self._share(len(aggregate.flows), self._flows)
            for flow in aggregate.flows:
                flow.set_share(share)

    def _flow_closed(self, flow: Flow) -> None:
        self._flows -= 1
        self.counters["flows_closed"] += 1
        self.counters["flows_reset"] += flow.reset
        counters = flow.counters()
        self.counters["bytes_down"] += counters.down_sent
        self.counters["bytes_up"] += counters.up_sent
        if isinstance(flow.owner, Aggregate) and flow.owner.flows:
            self._share_buffers(flow.owner)  # the connections left get their share back

    def _aggregate(self, ue: str) -> Aggregate:
        aggregate = self.aggregates.get(ue)
        if aggregate is None:
            scheduler: StrideScheduler[Flow] = StrideScheduler(self.config.scheduling.quantum_bytes)
            controller = self._new_controller()
            assert self._relay is not None
            aggregate = Aggregate(
                ue, controller, self.loop, self._relay, self._enforcement, scheduler, self._flow_closed
            )
            aggregate.apply(controller.update(TICK, self.loop.time()))
            self.aggregates[ue] = aggregate
        return aggregate

    # -- control ----------------------------------------------------------------------------------------

    def _telemetry_ready(self) -> None:
        """Every message queued is one burst, handled in the loop iteration that saw it arrive."""
        subscriber = self._subscriber
        if subscriber is None:
            return
        messages = subscriber.receive_ready(TELEMETRY_BURST)
        if messages:
            try:
                self.on_telemetry(messages, self.loop.time())
            except Exception:  # a bad step must not end the subscription
                log.exception("telemetry burst of %d messages failed", len(messages))
        if subscriber.pending:  # ZMQ_FD fires once per arrival: what is still queued is taken now
            self.loop.call_soon(self._telemetry_ready)

    def on_telemetry(self, messages: list[TelemetryMessage], now: float) -> None:
        """One burst of telemetry: one step for every UE it reports."""
        lcid = self.config.telemetry.lcid
        ran: list[RanController] = []
        ran_samples: list[RanSample] = []
        ran_aggregates: list[Aggregate] = []
        for message in messages:
            if message.lcid != lcid:
                self.counters["telemetry_other_bearer"] += 1
                continue
            if message.ue_ip is None:
                self.counters["telemetry_unmapped"] += 1
                continue
            if self._judges_period and len(self._reported_periods_s) < PERIOD_SAMPLES:
                self._check_period(message.period_us * 1e-6)
            aggregate = self._aggregate(message.ue_ip)
            sample = RanSample.from_message(message, aggregate.take_released())
            controller = aggregate.controller
            if isinstance(controller, RanController):
                ran.append(controller)
                ran_samples.append(sample)
                ran_aggregates.append(aggregate)
            else:
                self._apply(aggregate, controller.update(sample, now))
        if ran:
            for aggregate, decision in zip(ran_aggregates, step_many(ran, ran_samples, now), strict=True):
                self._apply(aggregate, decision)
                if aggregate.ue not in self._checked:
                    self._check_runtime(aggregate)
        self.last_decision_at = now

    def _check_period(self, period_s: float) -> None:
        """Warns once if the median of the first reports' periods is not the controller's step Ts."""
        self._reported_periods_s.append(period_s)
        if len(self._reported_periods_s) < PERIOD_SAMPLES:
            return
        reported, step = statistics.median(self._reported_periods_s), self.config.tick_s
        if abs(reported - step) > PERIOD_TOLERANCE * step:
            log.warning(
                "telemetry period %g ms differs from the controller's step Ts = %g ms: it steps once per report, "
                "so its rates and horizons are off by their ratio; set controller.ts_s to the eNB's period",
                reported * 1e3,
                step * 1e3,
            )

    def _check_runtime(self, aggregate: Aggregate) -> None:
        """SMVS with B_max from telemetry: the rules can only be checked once the eNB reported it."""
        controller = aggregate.controller
        if not isinstance(controller, Smvs):
            self._checked.add(aggregate.ue)
            return
        resolved = controller.smvs_bank.params(controller.row)
        if resolved is None:
            return
        self._checked.add(aggregate.ue)
        for rule in params.check(resolved).broken:
            log.warning("UE %s: smvs parameters break %s: %s", aggregate.ue, rule.name, rule.detail)

    def _tick(self, due: float) -> None:
        now = self.loop.time()
        step = self.config.tick_s
        self._tick_handle = self.loop.call_at(max(due + step, now), self._tick, max(due + step, now))
        for aggregate in list(self.aggregates.values()):
            controller = aggregate.controller
            try:
                if controller.wants_acks and aggregate.flows:
                    self._apply(aggregate, controller.update(aggregate.sample_acks(now), now))
                self._apply(aggregate, controller.update(TICK, now))
            except Exception:  # one UE's failure must not stop the clock of the others
                log.exception("controller step failed for UE %s", aggregate.ue)

    def _apply(self, aggregate: Aggregate, decision: Decision) -> None:
        aggregate.apply(decision)
        if self._recording and decision.step != aggregate.recorded_step:
            aggregate.recorded_step = decision.step
            state = aggregate.controller.state()
            if state is not None:
                fields = {**state.fields(), "mode": decision.mode.value, "limit_bytes": decision.limit}
                tags = {"ue": ue_index(aggregate.ue), "ue_ip": aggregate.ue, "controller": aggregate.controller.kind}
                self.recorder.record("controller", tags, fields, time.time_ns())

    # -- reporting --------------------------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """Counters: connections, bytes relayed, telemetry accepted and dropped by kind."""
        live = [flow for aggregate in self.aggregates.values() for flow in aggregate.flows]
        counters: Iterable[FlowCounters] = self._relay.counters(live) if self._relay is not None and live else ()
        live_down = sum(flow.down_sent for flow in counters)
        live_up = sum(flow.up_sent for flow in counters)
        result = dict(self.counters)
        result["flows_active"] = self._flows
        result["bytes_down"] = self.counters["bytes_down"] + live_down
        result["bytes_up"] = self.counters["bytes_up"] + live_up
        result["ues"] = len(self.aggregates)
        if self._subscriber is not None:
            tracker = self._subscriber.tracker
            result["telemetry_accepted"] = tracker.accepted
            result["telemetry_lost"] = tracker.lost
            result["telemetry_restarts"] = tracker.restarts
            for kind, count in tracker.errors.items():
                result[f"telemetry_error_{kind}"] = count
        return result
