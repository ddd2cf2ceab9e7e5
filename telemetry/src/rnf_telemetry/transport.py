"""ZeroMQ transport for telemetry: a non-blocking publisher and a subscriber that never crashes on bad input."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import zmq
import zmq.asyncio

from rnf_telemetry.message import DecodeError, TelemetryMessage, decode_multipart, encode_multipart
from rnf_telemetry.stream import RateLimitedLog, StreamTracker
from rnf_telemetry.topic import TOPIC_PREFIX

DEFAULT_ENDPOINT = "tcp://127.0.0.1:5555"
SEND_HWM = 10_000
log = logging.getLogger("rnf.telemetry")


@dataclass(frozen=True)
class CurveKeys:
    """ZeroMQ CURVE keys (Z85 text) for an eNB reached over a network."""

    public: bytes
    secret: bytes
    server_public: bytes | None = None


class Publisher:
    """The eNB side: binds a PUB socket and sends without ever blocking the caller."""

    def __init__(self, endpoint: str, context: zmq.Context | None = None, curve: CurveKeys | None = None) -> None:
        self._context = context or zmq.Context.instance()
        self._socket = self._context.socket(zmq.PUB)
        self._socket.setsockopt(zmq.SNDHWM, SEND_HWM)
        self._socket.setsockopt(zmq.LINGER, 0)
        if curve is not None:
            self._socket.curve_server = True
            self._socket.curve_publickey = curve.public
            self._socket.curve_secretkey = curve.secret
        try:
            self._socket.bind(endpoint)
        except zmq.ZMQError as error:
            self._socket.close()
            raise OSError(f"cannot bind telemetry publisher to {endpoint}: {error}") from error
        self.endpoint: str = self._socket.getsockopt_string(zmq.LAST_ENDPOINT)
        self.dropped = 0

    def send(self, message: TelemetryMessage) -> None:
        self.send_frames(encode_multipart(message))

    def send_frames(self, frames: list[bytes]) -> None:
        try:
            self._socket.send_multipart(frames, flags=zmq.DONTWAIT)
        except zmq.Again:
            self.dropped += 1

    def close(self) -> None:
        self._socket.close()


class Subscriber:
    """The consumer side: connects a SUB socket and yields valid, in-order messages.

    Malformed, wrong-version, duplicate and out-of-order messages are counted in `tracker.errors`, logged at
    a limited rate, and dropped. ZeroMQ reconnects by itself when the publisher restarts.

    Two ways to receive: awaiting `receive`/`receive_burst` (the default asyncio context), or, with a plain
    `zmq.Context`, watching `fd` in an event loop and taking `receive_ready` when it fires, which saves the
    futures and the extra loop iteration an awaited receive costs (the proxy's telemetry-to-decision path).
    """

    def __init__(
        self,
        endpoint: str,
        topic: bytes = TOPIC_PREFIX.encode(),
        context: zmq.Context | None = None,
        curve: CurveKeys | None = None,
    ) -> None:
        self._context = context or zmq.asyncio.Context.instance()
        self._socket = self._context.socket(zmq.SUB)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.RCVHWM, SEND_HWM)
        # No ZMQ_MAXMSGSIZE: libzmq 4.3 ends a connecting socket's session for good on an oversized frame (no
        # reconnect), which would silence the eNB until restart; `decode` refuses payloads above the contract's
        # bound instead, counted and dropped like every other malformed message.
        # Reconnect quickly after an eNB restart, and bound the back-off so a long outage recovers fast.
        self._socket.setsockopt(zmq.RECONNECT_IVL, 100)
        self._socket.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
        if curve is not None:
            if curve.server_public is None:
                raise ValueError("a CURVE subscriber needs the publisher's public key")
            self._socket.curve_publickey = curve.public
            self._socket.curve_secretkey = curve.secret
            self._socket.curve_serverkey = curve.server_public
        self._socket.setsockopt(zmq.SUBSCRIBE, topic)
        self._socket.connect(endpoint)
        self.endpoint = endpoint
        self.tracker = StreamTracker()
        self._log = RateLimitedLog()

    def accept(self, frames: list[bytes]) -> TelemetryMessage | None:
        """Decode and order-check one received multipart message; None when it was dropped."""
        try:
            message = decode_multipart(frames)
        except DecodeError as error:
            self.tracker.count_error(error)
            self._report(error.kind, error.detail)
            return None
        result = self.tracker.offer(message)
        if not result.verdict.accepted:
            self._report(result.verdict.value, f"{message.key} seq {message.seq}")
            return None
        return message

    def _report(self, kind: str, detail: str) -> None:
        line = self._log.line(kind, detail, time.monotonic())
        if line is not None:
            log.warning(line)

    async def receive(self) -> TelemetryMessage:
        """The next valid message."""
        while True:
            message = self.accept(await self._socket.recv_multipart())
            if message is not None:
                return message

    async def receive_burst(self, limit: int = 8192) -> list[TelemetryMessage]:
        """The next valid message and every one already queued behind it: one control step for a burst."""
        messages = [await self.receive()]
        while len(messages) < limit:
            try:
                frames = await self._socket.recv_multipart(flags=zmq.NOBLOCK)
            except zmq.Again:
                break
            message = self.accept(frames)
            if message is not None:
                messages.append(message)
        return messages

    @property
    def fd(self) -> int:
        """Readable when messages may have arrived (ZMQ_FD). It is edge-like: after it fires, take
        `receive_ready` until `pending` is false."""
        return self._int_option(zmq.FD)

    def receive_ready(self, limit: int = 8192) -> list[TelemetryMessage]:
        """The valid messages among those already queued, up to `limit` received, without waiting (a plain
        `zmq.Context` socket only)."""
        socket = self._socket
        if isinstance(socket, zmq.asyncio.Socket):
            raise TypeError("receive_ready needs a Subscriber on a plain zmq.Context; await receive_burst instead")
        messages = []
        for _ in range(limit):
            try:
                frames = socket.recv_multipart(flags=zmq.NOBLOCK)
            except zmq.Again:
                break
            message = self.accept(frames)
            if message is not None:
                messages.append(message)
        return messages

    @property
    def pending(self) -> bool:
        """Messages are queued that `receive_ready` has not taken yet."""
        return bool(self._int_option(zmq.EVENTS) & zmq.POLLIN)

    def _int_option(self, option: int) -> int:
        value = self._socket.getsockopt(option)
        assert isinstance(value, int)  # ZMQ_FD and ZMQ_EVENTS are int options
        return value

    async def __aiter__(self) -> AsyncIterator[TelemetryMessage]:
        while True:
            yield await self.receive()

    def close(self) -> None:
        self._socket.close()
