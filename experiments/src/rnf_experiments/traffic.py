"""Traffic generators: a bulk server in the server namespace, a receiving client in a UE namespace.

The client measures at the receiver (paper 001's TTSU: from SYN to last byte; goodput; per-flow progress) and
writes one JSON result. The server picks the TCP congestion control the client asks for, so end-to-end
baselines (CUBIC, BBR, Reno) differ only in the sender's algorithm.

    python -m rnf_experiments.traffic server --port 5201
    python -m rnf_experiments.traffic client --server 10.20.0.2 --port 5201 --bytes 4000000 --out flow.json
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

ProgressCallback = Callable[[int, int], None]
CHUNK = 256 * 1024
PROGRESS_INTERVAL_S = 0.1
_PAYLOAD = bytes(CHUNK)


@dataclass(frozen=True)
class Request:
    """What the client asks for: `bytes` (0 means until `duration_s`), with the sender's congestion control."""

    bytes: int
    duration_s: float
    cc: str

    def encode(self) -> bytes:
        return json.dumps(asdict(self)).encode() + b"\n"


@dataclass
class FlowResult:
    flow: str
    requested_bytes: int
    cc: str
    start_ns: int
    connected_ns: int = 0
    first_byte_ns: int = 0
    last_byte_ns: int = 0
    received_bytes: int = 0
    complete: bool = False
    error: str = ""
    progress: list[tuple[int, int]] = field(default_factory=list)  # (time_ns, bytes so far)

    @property
    def ttsu_s(self) -> float:
        """Time to serve the user: from the SYN to the last byte (paper 001)."""
        return (self.last_byte_ns - self.start_ns) / 1e9 if self.last_byte_ns else float("nan")


def _serve_one(connection: socket.socket) -> None:
    with connection:
        request_line = connection.makefile("rb").readline(4096)
        try:
            request = Request(**json.loads(request_line))
        except (ValueError, TypeError):
            return
        try:
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, request.cc.encode())
        except OSError as error:
            print(f"traffic server: congestion control {request.cc!r} unavailable: {error}", file=sys.stderr)
            return
        deadline = time.monotonic() + request.duration_s if request.duration_s else float("inf")
        remaining = request.bytes or -1
        try:
            while remaining != 0 and time.monotonic() < deadline:
                size = CHUNK if remaining < 0 else min(CHUNK, remaining)
                sent = connection.send(_PAYLOAD[:size])
                if remaining > 0:
                    remaining -= sent
            connection.shutdown(socket.SHUT_WR)
            connection.recv(1)  # wait for the client's close, so the FIN is not reset
        except OSError:
            pass


def serve(port: int, host: str) -> None:
    listener = socket.create_server((host, port), reuse_port=False, backlog=512)
    print("ready", flush=True)
    while True:
        connection, _ = listener.accept()
        threading.Thread(target=_serve_one, args=(connection,), daemon=True).start()


def _print_progress(time_ns: int, received: int) -> None:
    print(f"progress {time_ns} {received}", flush=True)


def fetch(
    name: str,
    server: str,
    port: int,
    request: Request,
    timeout_s: float,
    on_progress: ProgressCallback = _print_progress,
) -> FlowResult:
    """Download what `request` asks for and measure it at the receiver; report progress every 100 ms."""
    result = FlowResult(flow=name, requested_bytes=request.bytes, cc=request.cc, start_ns=time.time_ns())
    next_progress = 0.0
    try:
        with socket.create_connection((server, port), timeout=timeout_s) as connection:
            result.connected_ns = time.time_ns()
            connection.sendall(request.encode())
            while True:
                data = connection.recv(CHUNK)
                now = time.time_ns()
                if not data:
                    break
                if not result.first_byte_ns:
                    result.first_byte_ns = now
                result.received_bytes += len(data)
                result.last_byte_ns = now
                if now / 1e9 >= next_progress:
                    result.progress.append((now, result.received_bytes))
                    on_progress(now, result.received_bytes)
                    next_progress = now / 1e9 + PROGRESS_INTERVAL_S
        result.progress.append((result.last_byte_ns or time.time_ns(), result.received_bytes))
        on_progress(*result.progress[-1])
        result.complete = request.bytes == 0 or result.received_bytes >= request.bytes
    except OSError as error:
        result.error = str(error)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rnf_experiments.traffic", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    server = commands.add_parser("server")
    server.add_argument("--port", type=int, required=True)
    server.add_argument("--host", default="0.0.0.0")
    client = commands.add_parser("client")
    client.add_argument("--name", default="flow")
    client.add_argument("--server", required=True)
    client.add_argument("--port", type=int, required=True)
    client.add_argument("--bytes", type=int, default=0)
    client.add_argument("--duration", type=float, default=0.0)
    client.add_argument("--cc", default="cubic")
    client.add_argument("--delay", type=float, default=0.0, help="Seconds to wait before connecting.")
    client.add_argument("--timeout", type=float, default=10.0)
    client.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "server":
        serve(args.port, args.host)
        return
    time.sleep(args.delay)
    result = fetch(args.name, args.server, args.port, Request(args.bytes, args.duration, args.cc), args.timeout)
    args.out.write_text(json.dumps(asdict(result)))


if __name__ == "__main__":
    main()
