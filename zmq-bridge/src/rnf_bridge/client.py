"""A client of the bridge's control socket: one JSON request, one reply. pyzmq only, so any interpreter can use it."""

from __future__ import annotations

import json
from typing import Any

import zmq


class ControlFailed(RuntimeError):
    """The bridge did not answer, or answered that it could not carry the request out."""


def request(endpoint: str, command: dict[str, Any], timeout_s: float = 3.0) -> dict[str, Any]:
    """Send `command` to the bridge at `endpoint`; its reply, without the "ok" field."""
    context: zmq.Context[Any] = zmq.Context()
    socket = context.socket(zmq.REQ)
    socket.setsockopt(zmq.LINGER, 0)
    try:
        socket.connect(endpoint)
        socket.send(json.dumps(command).encode())
        if not socket.poll(round(timeout_s * 1000), zmq.POLLIN):
            raise ControlFailed(f"no answer from the bridge at {endpoint} within {timeout_s:g} s: is it running?")
        reply: dict[str, Any] = json.loads(socket.recv())
    except zmq.ZMQError as error:
        raise ControlFailed(f"cannot reach the bridge at {endpoint}: {error}") from None
    finally:
        socket.close()
        context.term()
    if not reply.pop("ok", False):
        raise ControlFailed(f"the bridge refused: {reply.get('error', reply)}")
    return reply
