"""A small cell-like topology for proxy tests: UE namespaces, a core with the proxy, a server namespace.

```
 P-ue1 [ue0 172.16.0.2] =veth= [u1]-+ P-ran +-[c0] =veth= [sgi0 172.16.0.1/24] P-core [wan0 10.20.0.1] =veth=
 P-ue2 [ue0 172.16.0.3] =veth= [u2]-+  br0 -+                                               [eth0 10.20.0.2] P-srv
```

`P-ran` stands for the eNB: a bridge whose port toward each UE can carry a `tbf` bottleneck. The bottleneck
sits outside the proxy's namespace, as a real eNB does, so the proxy's sockets see it only as delay and queue
(a qdisc on the proxy's own host would hold its skbs and trigger TCP small queues instead).

Names carry a per-test prefix `pxt-<random>` and are removed after the test. Clients and servers are plain
blocking sockets created inside the namespaces (`rnf_proxy.netns.inside`) and run in threads, so a test's
asyncio loop is free to run the proxy. Tests get everything through the `net` and `serve` fixtures.
"""

from __future__ import annotations

import hashlib
import random
import socket
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from rnf_proxy import netns

SERVER_IP = "10.20.0.2"
UE_NETWORK = "172.16.0.0/24"


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)


@dataclass
class Net:
    prefix: str
    ues: int

    @property
    def core(self) -> str:
        return f"{self.prefix}-core"

    @property
    def server(self) -> str:
        return f"{self.prefix}-srv"

    def ue(self, index: int = 1) -> str:
        return f"{self.prefix}-ue{index}"

    def ue_ip(self, index: int = 1) -> str:
        return f"172.16.0.{index + 1}"

    @property
    def ran(self) -> str:
        return f"{self.prefix}-ran"

    @property
    def namespaces(self) -> list[str]:
        return [self.core, self.ran, self.server, *(self.ue(i) for i in range(1, self.ues + 1))]

    def build(self) -> None:
        for ns in self.namespaces:
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            for key in ("all", "default"):
                sh("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv4.conf.{key}.rp_filter=0")
        core, ran, server = self.core, self.ran, self.server
        sh("ip", "-n", ran, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", ran, "link", "set", "br0", "up")
        sh("ip", "link", "add", "sgi0", "netns", core, "type", "veth", "peer", "c0", "netns", ran)
        sh("ip", "-n", core, "addr", "add", "172.16.0.1/24", "dev", "sgi0")
        sh("ip", "-n", core, "link", "set", "sgi0", "up")
        sh("ip", "-n", ran, "link", "set", "c0", "master", "br0")
        sh("ip", "-n", ran, "link", "set", "c0", "up")
        for i in range(1, self.ues + 1):
            ue = self.ue(i)
            sh("ip", "link", "add", f"u{i}", "netns", ran, "type", "veth", "peer", "ue0", "netns", ue)
            sh("ip", "-n", ran, "link", "set", f"u{i}", "master", "br0")
            sh("ip", "-n", ran, "link", "set", f"u{i}", "up")
            sh("ip", "-n", ue, "addr", "add", f"{self.ue_ip(i)}/24", "dev", "ue0")
            sh("ip", "-n", ue, "link", "set", "ue0", "up")
            sh("ip", "-n", ue, "route", "add", "default", "via", "172.16.0.1")
        sh("ip", "link", "add", "wan0", "netns", core, "type", "veth", "peer", "eth0", "netns", server)
        sh("ip", "-n", core, "addr", "add", "10.20.0.1/24", "dev", "wan0")
        sh("ip", "-n", core, "link", "set", "wan0", "up")
        sh("ip", "-n", server, "addr", "add", f"{SERVER_IP}/24", "dev", "eth0")
        sh("ip", "-n", server, "link", "set", "eth0", "up")
        sh("ip", "-n", server, "route", "add", UE_NETWORK, "via", "10.20.0.1")
        sh("ip", "netns", "exec", core, "sysctl", "-qw", "net.ipv4.ip_forward=1")

    def bottleneck(self, rate_mbit: float, ue: int = 1, limit_bytes: int = 400_000) -> None:
        """A tbf rate limit (with a drop-tail queue) on the eNB's port toward a UE."""
        sh("ip", "netns", "exec", self.ran, "tc", "qdisc", "replace", "dev", f"u{ue}", "root", "tbf",
           "rate", f"{rate_mbit}mbit", "burst", "16kb", "limit", str(limit_bytes))  # fmt: skip

    def link_down(self, namespace: str, device: str) -> None:
        sh("ip", "-n", namespace, "link", "set", device, "down")

    def remove(self) -> None:
        for ns in self.namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def socket(self, namespace: str) -> socket.socket:
        with netns.inside(namespace):
            return socket.socket(socket.AF_INET, socket.SOCK_STREAM)

    def connect(self, port: int, ue: int = 1, timeout: float = 10.0) -> socket.socket:
        client = self.socket(self.ue(ue))
        client.settimeout(timeout)
        client.connect((SERVER_IP, port))
        return client

    @staticmethod
    def payload(size: int, seed: int = 0) -> bytes:
        return random.Random(seed * 1_000_003 + size).randbytes(size)

    @staticmethod
    def digest(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    @staticmethod
    def recv_all(sock: socket.socket) -> bytes:
        chunks = []
        while chunk := sock.recv(1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ues(n): the `net` topology has n UE namespaces (default 1)")


@pytest.fixture
def net(request: pytest.FixtureRequest) -> Iterator[Net]:
    marker = request.node.get_closest_marker("ues")
    topology = Net(f"pxt-{uuid.uuid4().hex[:6]}", marker.args[0] if marker else 1)
    try:
        topology.build()
        yield topology
    finally:
        topology.remove()


@dataclass
class Server:
    """A threaded TCP server in a namespace: `handler(connection, peer)` runs once per connection."""

    net: Net
    handler: Callable[[socket.socket, tuple[str, int]], None]
    port: int = 0
    peers: list[tuple[str, int]] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._listener = self.net.socket(self.net.server)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((SERVER_IP, self.port))
        self._listener.listen(256)
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, peer = self._listener.accept()
            except OSError:
                return
            self.peers.append(peer)
            threading.Thread(target=self._run, args=(connection, peer), daemon=True).start()

    def _run(self, connection: socket.socket, peer: tuple[str, int]) -> None:
        try:
            with connection:
                self.handler(connection, peer)
        except OSError as error:
            self.errors.append(error)

    def close(self) -> None:
        self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()


@pytest.fixture
def serve(net: Net) -> Iterator[Callable[[Callable[[socket.socket, tuple[str, int]], None]], Server]]:
    """Start threaded servers in the server namespace; they stop after the test."""
    servers: list[Server] = []

    def start(handler: Callable[[socket.socket, tuple[str, int]], None]) -> Server:
        servers.append(Server(net, handler))
        return servers[-1]

    yield start
    for server in servers:
        server.close()
