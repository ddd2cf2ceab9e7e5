"""The split connections' data path: a native engine that moves the bytes, and the handles Python keeps.

The engine (`proxy/relay/`, Rust, `INTERFACE.md` there) runs its own threads, outside the interpreter lock:
each split connection is two sockets and a kernel pipe per direction, moved by splice(2). It bounds each
connection's downlink pipe, stops reading from a held server, carries an end of file across as a FIN once
its pipe is empty (half-close works both ways) and an error on either side as a RST on both. Sockets of a
peer that vanished are aborted by keepalive and TCP_USER_TIMEOUT (`sockets.set_peer_timeout`), which the
engine sees as an error like any other.

The uplink always drains freely, and so does the downlink of a *free* flow (itcp), as far as the UE socket's
unsent bytes stay under TCP_NOTSENT_LOWAT. The downlink of a *controlled* flow leaves only as far as its
owner, the UE's aggregate, grants (`Relay.grant`): the controller's window or quota stays in Python, the
copying in the engine's threads, which spend each grant as fast as the UE socket takes it. The engine tells
the owner (`FlowOwner`) about new data it has not looked at and about the end of the flow, through an eventfd
the asyncio loop watches.

Python keeps the socket objects (and closes them); the engine never closes a socket.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import socket
from collections.abc import Iterator, Sequence
from functools import cache
from typing import Protocol

from rnf_proxy import native, sockets

EVENT_DATA, EVENT_CLOSED = 1, 2
FLAG_CLOSED, FLAG_RESET = 1, 2
EVENT_BATCH = 256
log = logging.getLogger("rnf.proxy")

_U64 = ctypes.c_uint64
_ENGINE = ctypes.c_void_p


class _Event(ctypes.Structure):
    _fields_ = (("flow", _U64), ("kind", ctypes.c_uint32), ("padding", ctypes.c_uint32))


class FlowCounters(ctypes.Structure):
    """A flow's counters in bytes, as the engine reports them (`FlowInfo` in INTERFACE.md)."""

    _fields_ = (
        ("down_buffered", _U64),
        ("down_received", _U64),
        ("down_sent", _U64),
        ("up_buffered", _U64),
        ("up_received", _U64),
        ("up_sent", _U64),
        ("flags", _U64),
    )


@cache
def _library() -> ctypes.CDLL:
    library = native.load(ctypes.CDLL)  # a CDLL releases the GIL during every call
    ids, engine, i32 = ctypes.POINTER(_U64), _ENGINE, ctypes.c_int
    for name, restype, argtypes in (
        ("rnf_relay_new", engine, [ctypes.c_uint32]),
        ("rnf_relay_free", None, [engine]),
        ("rnf_relay_notify_fd", i32, [engine]),
        ("rnf_relay_add", i32, [engine, i32, i32, _U64, _U64, i32, i32, ids]),
        ("rnf_relay_configure", i32, [engine, _U64, _U64, i32, i32]),
        ("rnf_relay_grant", _U64, [engine, ids, ids, ids, ctypes.c_size_t]),
        ("rnf_relay_info", None, [engine, ids, ctypes.POINTER(FlowCounters), ctypes.c_size_t]),
        ("rnf_relay_demand", ctypes.c_size_t, [engine, ids, ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint32), ids]),
        ("rnf_relay_queued", _U64, [engine, ids, ctypes.c_size_t, i32]),
        ("rnf_relay_remove", None, [engine, _U64]),
        ("rnf_relay_events", ctypes.c_size_t, [engine, ctypes.POINTER(_Event), ctypes.c_size_t]),
    ):
        function = getattr(library, name)
        function.restype, function.argtypes = restype, argtypes
    return library


def _ids(flows: Sequence[Flow]) -> ctypes.Array[_U64]:
    return (_U64 * len(flows))(*(flow.id for flow in flows))


class FlowOwner(Protocol):
    """Who decides how much of a flow's downlink may leave: the UE's aggregate."""

    def on_data(self, flow: Flow) -> None: ...

    def on_closed(self, flow: Flow) -> None: ...


class Relay:
    """The engine with `threads` worker threads; its events reach the flows' owners on `loop`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, threads: int) -> None:
        self._lib = _library()
        self._engine = self._lib.rnf_relay_new(threads)
        if not self._engine:
            error = ctypes.get_errno()
            raise OSError(error, f"relay engine: {os.strerror(error)}")
        self.loop = loop
        self.flows: dict[int, Flow] = {}
        self._events = (_Event * EVENT_BATCH)()
        self._notify_fd = self._lib.rnf_relay_notify_fd(self._engine)
        loop.add_reader(self._notify_fd, self._on_events)

    def close(self) -> None:
        """Stop the worker threads; the flows must be closed first."""
        if self._engine:
            self.loop.remove_reader(self._notify_fd)
            self._lib.rnf_relay_free(self._engine)
            self._engine = None

    def add(self, flow: Flow, pipe_bytes: int, notsent_limit: int, controlled: bool, held: bool) -> int:
        flow_id = _U64()
        result = self._lib.rnf_relay_add(
            self._engine, flow.ue_fd, flow.server_fd, pipe_bytes, notsent_limit, controlled, held, ctypes.byref(flow_id)
        )
        if result < 0:
            raise OSError(-result, f"relay: {os.strerror(-result)}")
        self.flows[flow_id.value] = flow
        return flow_id.value

    def configure(self, flow: Flow) -> None:
        self._lib.rnf_relay_configure(self._engine, flow.id, flow.limit, flow.held, flow.controlled)

    def grant(self, grants: dict[Flow, int]) -> int:
        """Controlled flows: let up to each grant more bytes leave toward the UE; the bytes granted in all (a
        flow is granted at most what waits in its pipe ungranted, `demand`). The engine moves them."""
        flows = list(grants)
        limits = (_U64 * len(flows))(*grants.values())
        granted = (_U64 * len(flows))()
        return int(self._lib.rnf_relay_grant(self._engine, _ids(flows), limits, granted, len(flows)))

    def counters(self, flows: Sequence[Flow]) -> ctypes.Array[FlowCounters]:
        """Each flow's counters; looking re-arms its data event."""
        out = (FlowCounters * len(flows))()
        self._lib.rnf_relay_info(self._engine, _ids(flows), out, len(flows))
        return out

    def demand(self, group: FlowGroup) -> dict[Flow, int]:
        """Bytes waiting in the downlink pipes of the group's flows and not granted yet, for those that have
        some; looking re-arms their data events."""
        flows, ids = group.arrays()
        if not flows:
            return {}
        indices, buffered = (ctypes.c_uint32 * len(flows))(), (_U64 * len(flows))()
        found = self._lib.rnf_relay_demand(self._engine, ids, len(flows), indices, buffered)
        return {flows[index]: amount for index, amount in zip(indices[:found], buffered[:found], strict=True)}

    def queued(self, group: FlowGroup, unsent_only: bool = False) -> int:
        """What the group's flows hold toward their UE, summed: the UE sockets' SIOCOUTQ (or SIOCOUTQNSD when
        `unsent_only`) plus the bytes granted still in the pipes."""
        flows, ids = group.arrays()
        if not flows:
            return 0
        return int(self._lib.rnf_relay_queued(self._engine, ids, len(flows), unsent_only))

    def remove(self, flow: Flow) -> None:
        self._lib.rnf_relay_remove(self._engine, flow.id)
        self.flows.pop(flow.id, None)

    def _on_events(self) -> None:
        while True:
            count = self._lib.rnf_relay_events(self._engine, self._events, EVENT_BATCH)
            for event in self._events[:count]:
                flow = self.flows.get(event.flow)
                if flow is None:  # removed by the proxy after the event was queued
                    continue
                if event.kind == EVENT_DATA:
                    flow.owner.on_data(flow)
                elif event.kind == EVENT_CLOSED:
                    flow.ended()
            if count < EVENT_BATCH:
                return


class FlowGroup:
    """An ordered set of flows (one UE's), with the array of ids the engine's batch calls take kept between
    calls."""

    def __init__(self) -> None:
        self._flows: dict[Flow, None] = {}
        self._arrays: tuple[list[Flow], ctypes.Array[_U64]] | None = None

    def add(self, flow: Flow) -> None:
        self._flows[flow] = None
        self._arrays = None

    def discard(self, flow: Flow) -> None:
        self._flows.pop(flow, None)
        self._arrays = None

    def arrays(self) -> tuple[list[Flow], ctypes.Array[_U64]]:
        if self._arrays is None:
            flows = list(self._flows)
            self._arrays = flows, _ids(flows)
        return self._arrays

    def __iter__(self) -> Iterator[Flow]:
        return iter(self._flows)

    def __len__(self) -> int:
        return len(self._flows)

    def __contains__(self, flow: object) -> bool:
        return flow in self._flows


class Direction:
    """A view of one direction's counters (bytes): `buffered` in the pipe, `received`, `sent`."""

    def __init__(self, flow: Flow, downlink: bool) -> None:
        self.flow, self.downlink = flow, downlink

    def _counter(self, name: str) -> int:
        counters = self.flow.counters()
        return int(getattr(counters, f"{'down' if self.downlink else 'up'}_{name}"))

    @property
    def buffered(self) -> int:
        return self._counter("buffered")

    @property
    def received(self) -> int:
        return self._counter("received")

    @property
    def sent(self) -> int:
        return self._counter("sent")


class Flow:
    """A split TCP connection: `ue` is the socket toward the UE, `server` the one toward the server."""

    def __init__(
        self,
        relay: Relay,
        ue: socket.socket,
        server: socket.socket,
        owner: FlowOwner,
        pipe_bytes: int,
        server_port: int,
        notsent_limit: int,
        controlled: bool,
        held: bool = False,
    ) -> None:
        self.relay, self.ue, self.server, self.owner = relay, ue, server, owner
        self.server_port = server_port
        self.ue_fd, self.server_fd = ue.fileno(), server.fileno()
        self.limit = pipe_bytes  # bytes the downlink may hold in its pipe (the engine caps it at the pipe's size)
        self.held = held  # the owner holds the server back (link stall)
        self.controlled = controlled  # the owner says how much of the downlink leaves
        self.closed = False
        self.reset = False  # ended by an error, carried as RST
        self.acked_base = (0, 0, 0)  # TCP_INFO bytes_acked, total_retrans, total_rto at the last ACK sample
        self._final: FlowCounters | None = None
        self.down, self.up = Direction(self, True), Direction(self, False)
        self.id = relay.add(self, pipe_bytes, notsent_limit, controlled, held)

    def counters(self) -> FlowCounters:
        if self._final is not None:
            return self._final
        counters: FlowCounters = self.relay.counters([self])[0]
        return counters

    def hold(self, held: bool) -> None:
        """Stop (or resume) reading from the server: its receive window closes as the buffer fills."""
        if held != self.held and not self.closed:
            self.held = held
            self.relay.configure(self)

    def control(self, controlled: bool) -> None:
        """Whether the owner (controlled) or the kernel's send buffer (free) says how much leaves."""
        if controlled != self.controlled and not self.closed:
            self.controlled = controlled
            self.relay.configure(self)

    def set_share(self, share: int) -> None:
        """This connection's part of the UE's and the proxy's buffer: half in the pipe, half in the wired
        socket's receive buffer, which bounds the window the server sees (a lower share takes effect as the
        server fills the window it was already given)."""
        if self.closed:
            return
        half = max(share // 2, 4096)
        self.limit = half
        try:
            sockets.set_receive_buffer(self.server, half)
        except OSError:
            pass
        self.relay.configure(self)

    def ended(self) -> None:
        """The engine ended the flow: both FINs carried, or reset (its sockets then close with a RST)."""
        counters = self.counters()
        self.reset = bool(counters.flags & FLAG_RESET)
        if self.reset:
            log.debug("flow %s reset", self.describe())
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self._final = self.counters()
        self.closed = True
        self.relay.remove(self)
        self.ue.close()
        self.server.close()
        self.owner.on_closed(self)

    def describe(self) -> str:
        return f"{self.ue_fd}/{self.server_fd}"
