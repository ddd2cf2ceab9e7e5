"""Traffic generators: one server in the server namespace, clients in the UE namespaces.

Every transfer is measured at its receiver: downloads and web pages at the UE, uploads at the server, which
reports its measurement back on the same connection. The measures are paper 001's TTSU (time to serve the user:
from the SYN to the last byte), goodput and per-transfer progress. A client writes one JSON result per transfer
(a web page is one transfer, its objects fetched over parallel connections). The server sets the TCP congestion
control the client asks for, so end-to-end baselines (CUBIC, BBR, Reno) differ only in the sender's algorithm;
an uploading client sets its own.

    python -m rnf_experiments.traffic server --port 5201
    python -m rnf_experiments.traffic client bulk --server 10.20.0.2 --port 5201 --bytes 4000000 --out flow.json
    python -m rnf_experiments.traffic client upload --server 10.20.0.2 --port 5201 --bytes 1000000 --out up.json
    python -m rnf_experiments.traffic client web --server 10.20.0.2 --port 5201 --objects 51500,368500 --out page.json
"""

from __future__ import annotations

import argparse
import builtins
import json
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from rnf_foundation.tcp import tcp_info

from rnf_experiments import congestion

ProgressCallback = Callable[[int, int], None]
CHUNK = 256 * 1024
PROGRESS_INTERVAL_S = 0.1
_PAYLOAD = bytes(CHUNK)
Direction = Literal["down", "up"]


@dataclass(frozen=True)
class Request:
    """What a client asks for: `bytes` (0 means until `duration_s`) in `direction`, with the sender's congestion
    control `cc` (the server's, for downloads)."""

    bytes: int
    duration_s: float
    cc: str
    direction: Direction = "down"

    def encode(self) -> builtins.bytes:
        return json.dumps(asdict(self)).encode() + b"\n"


@dataclass
class Receipt:
    """What a receiver measured: bytes, and the times of the first and last byte (ns since the epoch)."""

    received_bytes: int = 0
    first_byte_ns: int = 0
    last_byte_ns: int = 0

    def add(self, size: int, now: int) -> None:
        if not self.first_byte_ns:
            self.first_byte_ns = now
        self.received_bytes += size
        self.last_byte_ns = now


@dataclass
class FlowResult:
    """One transfer: a download, an upload or a web page (`objects` > 1)."""

    flow: str
    kind: str
    ue: int
    requested_bytes: int
    cc: str
    start_ns: int
    connected_ns: int = 0
    first_byte_ns: int = 0
    last_byte_ns: int = 0
    received_bytes: int = 0
    objects: int = 1
    complete: bool = False
    error: str = ""
    progress: list[tuple[int, int]] = field(default_factory=list)  # (time_ns, bytes so far)

    @property
    def ttsu_s(self) -> float:
        """Time to serve the user: from the SYN to the last byte (paper 001)."""
        return (self.last_byte_ns - self.start_ns) / 1e9 if self.last_byte_ns else float("nan")


class Deadline:
    """The end of the arm (time.monotonic() seconds): blocking socket calls time out at it."""

    def __init__(self, seconds_from_now: float) -> None:
        self.at = time.monotonic() + seconds_from_now

    def arm(self, connection: socket.socket) -> None:
        remaining = self.at - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the arm ended before the transfer did")
        connection.settimeout(remaining)


def _receive_all(
    receive: Callable[[int], bytes], receipt: Receipt, on_chunk: Callable[[], None] = lambda: None
) -> None:
    while data := receive(CHUNK):
        receipt.add(len(data), time.time_ns())
        on_chunk()


def _send(connection: socket.socket, request: Request) -> None:
    deadline = time.monotonic() + request.duration_s if request.duration_s else float("inf")
    remaining = request.bytes or -1
    while remaining != 0 and time.monotonic() < deadline:
        size = CHUNK if remaining < 0 else min(CHUNK, remaining)
        sent = connection.send(_PAYLOAD[:size])
        if remaining > 0:
            remaining -= sent


def _use_congestion_control(connection: socket.socket, cc: str) -> None:
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())


def _serve_one(connection: socket.socket) -> None:
    with connection:
        reader = connection.makefile("rb")
        try:
            request = Request(**json.loads(reader.readline(4096)))
        except (ValueError, TypeError):
            return
        try:
            if request.direction == "down":
                _use_congestion_control(connection, request.cc)
                _send(connection, request)
                connection.shutdown(socket.SHUT_WR)
                connection.recv(1)  # wait for the client's close, so the FIN is not reset
            else:
                if congestion.needs_receiver(request.cc):
                    _use_congestion_control(connection, request.cc)
                receipt = Receipt()
                _receive_all(reader.read1, receipt)  # read1: bytes buffered with the request line come first
                connection.sendall(json.dumps(asdict(receipt)).encode() + b"\n")
                connection.shutdown(socket.SHUT_WR)
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


class _Progress:
    """Reports a transfer's bytes so far at most every 100 ms, and once at the end."""

    def __init__(self, result: FlowResult, on_progress: ProgressCallback) -> None:
        self.result, self.on_progress = result, on_progress
        self.next_s = 0.0
        self.lock = threading.Lock()

    def report(self, received: int, final: bool = False) -> None:
        now = time.time_ns()
        with self.lock:
            if final or now / 1e9 >= self.next_s:
                self.result.progress.append((now, received))
                self.on_progress(now, received)
                self.next_s = now / 1e9 + PROGRESS_INTERVAL_S


def _download(
    server: str,
    port: int,
    request: Request,
    deadline: Deadline,
    receipt: Receipt,
    on_connected: Callable[[int], None],
    on_chunk: Callable[[], None],
) -> None:
    """One download over a new connection, into `receipt`; `on_connected` gets the time the connection was up."""
    with _connect(server, port, deadline) as connection:
        on_connected(time.time_ns())
        if congestion.needs_receiver(request.cc):
            # after the handshake: a SYN sent by DCTCP is ECT, and a listener that does not run it refuses ECN then
            _use_congestion_control(connection, request.cc)
        connection.sendall(request.encode())

        def receive(size: int) -> bytes:
            deadline.arm(connection)
            return connection.recv(size)

        _receive_all(receive, receipt, on_chunk)


def _connect(server: str, port: int, deadline: Deadline) -> socket.socket:
    """Connect, retrying the SYN as the kernel does, until the arm's end: behind a deep queue the handshake itself
    may take many seconds (paper 004, Fig. 4), and that wait is part of the TTSU."""
    return socket.create_connection((server, port), timeout=max(deadline.at - time.monotonic(), 0.01))


def fetch(
    name: str,
    ue: int,
    server: str,
    port: int,
    request: Request,
    deadline: Deadline,
    on_progress: ProgressCallback = _print_progress,
) -> FlowResult:
    """Download what `request` asks for and measure it at the receiver."""
    result = FlowResult(name, "bulk", ue, request.bytes, request.cc, start_ns=time.time_ns())
    receipt = Receipt()
    progress = _Progress(result, on_progress)
    try:
        _download(
            server,
            port,
            request,
            deadline,
            receipt,
            lambda now: setattr(result, "connected_ns", now),
            lambda: progress.report(receipt.received_bytes),
        )
        result.complete = request.bytes == 0 or receipt.received_bytes >= request.bytes
    except TimeoutError as error:
        # a backlogged download ends at the arm's end, FIN or not, but not without data
        result.complete = request.bytes == 0 and receipt.received_bytes > 0
        result.error = "" if result.complete else str(error)
    except OSError as error:
        result.error = str(error)
    _finish(result, receipt, progress)
    return result


def fetch_page(
    name: str,
    ue: int,
    server: str,
    port: int,
    objects_bytes: list[int],
    parallel: int,
    cc: str,
    deadline: Deadline,
    on_progress: ProgressCallback = _print_progress,
) -> FlowResult:
    """A web page: every object over its own connection, at most `parallel` at once; TTSU is the page's."""
    total = sum(objects_bytes)
    result = FlowResult(name, "web", ue, total, cc, start_ns=time.time_ns(), objects=len(objects_bytes))
    page = Receipt()
    progress = _Progress(result, on_progress)
    lock = threading.Lock()

    def connected(now: int) -> None:
        with lock:
            result.connected_ns = min(result.connected_ns or now, now)

    def one(size: int) -> None:
        own = Receipt()
        _download(server, port, Request(size, 0.0, cc), deadline, own, connected, lambda: None)
        with lock:
            page.received_bytes += own.received_bytes
            page.first_byte_ns = min(page.first_byte_ns or own.first_byte_ns, own.first_byte_ns)
            page.last_byte_ns = max(page.last_byte_ns, own.last_byte_ns)
            progress.report(page.received_bytes)

    try:
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            list(pool.map(one, objects_bytes))
        result.complete = page.received_bytes >= total
    except OSError as error:
        result.error = str(error)
    _finish(result, page, progress)
    return result


def upload(
    name: str,
    ue: int,
    server: str,
    port: int,
    request: Request,
    deadline: Deadline,
    on_progress: ProgressCallback = _print_progress,
) -> FlowResult:
    """Upload what `request` asks for; the server measures and reports back. Progress is the bytes the server's
    TCP acknowledged (TCP_INFO bytes_acked)."""
    result = FlowResult(name, "upload", ue, request.bytes, request.cc, start_ns=time.time_ns())
    receipt = Receipt()
    progress = _Progress(result, on_progress)
    try:
        with _connect(server, port, deadline) as connection:
            result.connected_ns = time.time_ns()
            deadline.arm(connection)  # bounds every send and the wait for the server's receipt
            _use_congestion_control(connection, request.cc)
            connection.sendall(request.encode())
            stop = threading.Event()
            sent_before = len(request.encode())
            reporter = threading.Thread(
                target=_report_acked, args=(connection, sent_before, progress, stop), daemon=True
            )
            reporter.start()
            try:
                _send(connection, request)
                connection.shutdown(socket.SHUT_WR)
                answer = connection.makefile("rb").readline(4096)
            finally:
                stop.set()
                reporter.join()
        receipt = Receipt(**json.loads(answer))
        result.complete = request.bytes == 0 or receipt.received_bytes >= request.bytes
    except (OSError, ValueError, TypeError) as error:
        result.error = str(error) or type(error).__name__
    _finish(result, receipt, progress)
    return result


def _report_acked(connection: socket.socket, request_bytes: int, progress: _Progress, stop: threading.Event) -> None:
    while not stop.wait(PROGRESS_INTERVAL_S):
        try:
            acked = tcp_info(connection).bytes_acked
        except OSError:
            return
        progress.report(max(acked - request_bytes, 0))


def _finish(result: FlowResult, receipt: Receipt, progress: _Progress) -> None:
    result.received_bytes = receipt.received_bytes
    result.first_byte_ns, result.last_byte_ns = receipt.first_byte_ns, receipt.last_byte_ns
    progress.report(receipt.received_bytes, final=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rnf_experiments.traffic", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    server = commands.add_parser("server")
    server.add_argument("--port", type=int, required=True)
    server.add_argument("--host", default="0.0.0.0")
    client = commands.add_parser("client")
    client.add_argument("kind", choices=["bulk", "upload", "web"])
    client.add_argument("--name", default="flow")
    client.add_argument("--ue", type=int, default=1, help="The UE's 1-based index, recorded in the result.")
    client.add_argument("--server", required=True)
    client.add_argument("--port", type=int, required=True)
    client.add_argument("--bytes", type=int, default=0)
    client.add_argument("--duration", type=float, default=0.0)
    client.add_argument("--objects", default="", help="Web: object sizes in bytes, comma-separated.")
    client.add_argument("--parallel", type=int, default=6, help="Web: connections at once.")
    client.add_argument("--pages", type=int, default=1, help="Web: pages, one after the other.")
    client.add_argument("--think", type=float, default=0.0, help="Web: seconds between pages.")
    client.add_argument("--cc", default="cubic")
    client.add_argument("--delay", type=float, default=0.0, help="Seconds to wait before connecting.")
    client.add_argument(
        "--until", type=float, required=True, help="Seconds from now to the arm's end: transfers stop there."
    )
    client.add_argument("--out", type=Path, required=True, help="Result file; web pages add -page<N>.")
    args = parser.parse_args(argv)
    if args.command == "server":
        serve(args.port, args.host)
        return
    deadline = Deadline(args.until)
    time.sleep(args.delay)
    if args.kind == "web":
        objects = [int(size) for size in args.objects.split(",") if size]
        for page in range(args.pages):
            if page:
                time.sleep(args.think)
            name = f"{args.name}-page{page + 1}"
            result = fetch_page(name, args.ue, args.server, args.port, objects, args.parallel, args.cc, deadline)
            args.out.with_name(f"{name}.json").write_text(json.dumps(asdict(result)))
        return
    request = Request(args.bytes, args.duration, args.cc, "up" if args.kind == "upload" else "down")
    transfer = upload if args.kind == "upload" else fetch
    result = transfer(args.name, args.ue, args.server, args.port, request, deadline)
    args.out.write_text(json.dumps(asdict(result)))


if __name__ == "__main__":
    main()
