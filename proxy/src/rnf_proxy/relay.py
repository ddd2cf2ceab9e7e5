"""The split connection: two TCP sockets and, in each direction, a kernel pipe between them.

Bytes move with splice(2), socket to pipe and pipe to socket, without a copy through Python. Each direction
is a `Pipe` that knows exactly how many bytes it holds; the proxy's buffer for a connection is that pipe plus
the wired socket's receive queue, and both are bounded (`Flow.set_share`). The downlink (server to UE) drains
only as far as its owner allows (`FlowOwner`, the UE's aggregate that enforces the controller's decision);
the uplink drains freely.

Close and reset are carried across: an end-of-file becomes a FIN toward the other side once the pipe is
empty (half-close works both ways); a reset or any error on one side becomes a RST on the other. Sockets of a
peer that vanished are aborted by keepalive and TCP_USER_TIMEOUT (`sockets.set_peer_timeout`), which lands
here as an error like any other.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import socket
from typing import Protocol

from rnf_proxy import sockets

F_SETPIPE_SZ = 1031
SPLICE_FLAGS = os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK
log = logging.getLogger("rnf.proxy")


class Pipe:
    """One direction: `source` socket -> kernel pipe -> `sink` socket."""

    def __init__(self, source: socket.socket, sink: socket.socket, capacity: int) -> None:
        self.source, self.sink = source.fileno(), sink.fileno()
        self.read_end, self.write_end = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.capacity = fcntl.fcntl(self.write_end, F_SETPIPE_SZ, capacity)
        self.limit = self.capacity  # bytes this direction may hold in the pipe
        self.buffered = 0
        self.eof = False  # the source sent its FIN
        self.shut = False  # the FIN went on to the sink
        self.stalled = False  # the pipe refused more: no free slot
        self.received = 0
        self.sent = 0

    def fill(self) -> int:
        """Move what the source has into the pipe, up to the limit; 0 at end of file or when full."""
        room = self.limit - self.buffered
        if room <= 0:
            self.stalled = True
            return 0
        try:
            moved = os.splice(self.source, self.write_end, room, flags=SPLICE_FLAGS)
        except BlockingIOError:
            # with bytes already in the pipe, EAGAIN means no free pipe slot; otherwise no data yet
            self.stalled = self.buffered > 0
            return 0
        if moved == 0:
            self.eof = True
        self.buffered += moved
        self.received += moved
        return moved

    def drain(self, limit: int) -> int:
        """Move up to `limit` bytes from the pipe to the sink; fewer when the sink's buffer is full."""
        want = min(self.buffered, limit)
        if want <= 0:
            return 0
        try:
            moved = os.splice(self.read_end, self.sink, want, flags=SPLICE_FLAGS)
        except BlockingIOError:
            return 0
        self.buffered -= moved
        self.sent += moved
        self.stalled = False
        return moved

    @property
    def finished(self) -> bool:
        return self.eof and self.buffered == 0

    def close(self) -> None:
        os.close(self.read_end)
        os.close(self.write_end)


class FlowOwner(Protocol):
    """Who decides how much of a flow's downlink may leave: the UE's aggregate."""

    def on_data(self, flow: Flow) -> None: ...

    def on_writable(self, flow: Flow) -> None: ...

    def on_closed(self, flow: Flow) -> None: ...


class Flow:
    """A split TCP connection: `ue` is the socket toward the UE, `server` the one toward the server."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        ue: socket.socket,
        server: socket.socket,
        owner: FlowOwner,
        pipe_bytes: int,
        server_port: int,
    ) -> None:
        self.loop, self.ue, self.server, self.owner = loop, ue, server, owner
        self.server_port = server_port
        self.ue_fd, self.server_fd = ue.fileno(), server.fileno()
        self.down = Pipe(server, ue, pipe_bytes)
        self.up = Pipe(ue, server, pipe_bytes)
        self.held = False  # the owner holds the server back (link stall)
        self.closed = False
        self.reset = False  # ended by an error, carried as RST
        self.unsent = 0  # FREE mode: an upper bound of the UE socket's unsent bytes
        self.acked_base = (0, 0, 0)  # TCP_INFO bytes_acked, total_retrans, total_rto at the last ACK sample
        self._reading_server = False
        self._reading_ue = False
        self._writing_ue = False
        self._writing_server = False
        self._update_reading()

    # -- reading ----------------------------------------------------------------------------------------

    def _update_reading(self) -> None:
        want_server = not (self.closed or self.down.eof or self.held or self.down.stalled)
        want_server = want_server and self.down.buffered < self.down.limit
        if want_server != self._reading_server:
            if want_server:
                self.loop.add_reader(self.server_fd, self._server_readable)
            else:
                self.loop.remove_reader(self.server_fd)
            self._reading_server = want_server
        want_ue = not (self.closed or self.up.eof or self.up.stalled) and self.up.buffered < self.up.limit
        if want_ue != self._reading_ue:
            if want_ue:
                self.loop.add_reader(self.ue_fd, self._ue_readable)
            else:
                self.loop.remove_reader(self.ue_fd)
            self._reading_ue = want_ue

    def _server_readable(self) -> None:
        try:
            self.down.fill()
        except OSError as error:
            self.abort(f"server side: {error.strerror or error}")
            return
        self.owner.on_data(self)
        if not self.closed:
            self._update_reading()
            self._forward_fin(self.down, self.ue)

    def _ue_readable(self) -> None:
        try:
            self.up.fill()
        except OSError as error:
            self.abort(f"UE side: {error.strerror or error}")
            return
        self._drain_up()

    def hold(self, held: bool) -> None:
        """Stop (or resume) reading from the server: its receive window closes as the buffer fills."""
        self.held = held
        self._update_reading()

    def set_share(self, share: int) -> None:
        """This connection's part of the UE's and the proxy's buffer: half in the pipe, half in the wired
        socket's receive buffer, which bounds the window the server sees (a lower share takes effect as the
        server fills the window it was already given)."""
        half = max(share // 2, 4096)
        self.down.limit = min(half, self.down.capacity)
        if not self.closed:
            try:
                sockets.set_receive_buffer(self.server, half)
            except OSError:
                pass
            self._update_reading()

    # -- writing ----------------------------------------------------------------------------------------

    def send_down(self, limit: int) -> int:
        """Move up to `limit` bytes toward the UE; registers for writability when the socket is full."""
        if self.closed:
            return 0
        try:
            moved = self.down.drain(limit)
        except OSError as error:
            self.abort(f"UE side: {error.strerror or error}")
            return 0
        if self.down.buffered > 0 and moved < limit:
            self.wait_writable()
        if moved and not self._reading_server:
            self._update_reading()
        self._forward_fin(self.down, self.ue)
        return moved

    def wait_writable(self) -> None:
        """Ask the owner to come back when the UE socket takes more (EPOLLOUT: send buffer space, and unsent
        bytes below TCP_NOTSENT_LOWAT)."""
        if not self._writing_ue and not self.closed:
            self.loop.add_writer(self.ue_fd, self._ue_writable)
            self._writing_ue = True

    def _ue_writable(self) -> None:
        self.loop.remove_writer(self.ue_fd)
        self._writing_ue = False
        self.owner.on_writable(self)

    def _drain_up(self) -> None:
        try:
            self.up.drain(self.up.buffered)
        except OSError as error:
            self.abort(f"server side: {error.strerror or error}")
            return
        blocked = self.up.buffered > 0
        if blocked != self._writing_server:
            if blocked:
                self.loop.add_writer(self.server_fd, self._drain_up)
            else:
                self.loop.remove_writer(self.server_fd)
            self._writing_server = blocked
        self._update_reading()
        self._forward_fin(self.up, self.server)

    def _forward_fin(self, pipe: Pipe, sink: socket.socket) -> None:
        if self.closed or pipe.shut or not pipe.finished:
            return
        pipe.shut = True
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError as error:
            self.abort(f"half-close: {error.strerror or error}")
            return
        if self.down.shut and self.up.shut:
            self.close()

    # -- ending -----------------------------------------------------------------------------------------

    def abort(self, reason: str) -> None:
        """An error on one side (a reset, a timeout, a vanished peer): RST both sockets and free everything.
        The failed side is gone already; the other side learns of the failure as a reset."""
        if self.closed:
            return
        log.debug("flow %s aborted: %s", self.describe(), reason)
        self.reset = True
        for sock in (self.ue, self.server):
            try:
                sockets.reset_on_close(sock)
            except OSError:
                pass
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for fd, reading, writing in (
            (self.server_fd, self._reading_server, self._writing_server),
            (self.ue_fd, self._reading_ue, self._writing_ue),
        ):
            if reading:
                self.loop.remove_reader(fd)
            if writing:
                self.loop.remove_writer(fd)
        self._reading_server = self._reading_ue = self._writing_ue = self._writing_server = False
        self.ue.close()
        self.server.close()
        self.down.close()
        self.up.close()
        self.owner.on_closed(self)

    def describe(self) -> str:
        return f"{self.ue_fd}/{self.server_fd}"
