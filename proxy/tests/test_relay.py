"""The relay through the transparent proxy: byte-exact data, half-close, reset and vanished peers."""

import asyncio
import concurrent.futures
import socket
import struct
import time

import pytest
from rnf_proxy import Proxy, ProxyConfig
from rnf_proxy.fixed import FixedConfig
from rnf_proxy.itcp import ItcpConfig

pytestmark = pytest.mark.root

SIZES = [0, 1, 1447, 1448, 65_535, 65_536, 65_537, 1_000_003, 8_388_608]


def config(net, **changes) -> ProxyConfig:
    base = {"namespace": net.core, "controller": ItcpConfig(), "telemetry": {"endpoint": "tcp://127.0.0.1:1"}}
    return ProxyConfig.model_validate(base | changes)


def run_with_proxy(proxy_config: ProxyConfig, work):
    async def scenario():
        async with Proxy(proxy_config) as proxy:
            result = await asyncio.to_thread(work)
            return result, proxy.stats()

    return asyncio.run(scenario())


def exchange_handler(net):
    """Request: an 8-byte download size, then an upload until the client's FIN. Reply: the download, the
    sha256 of the upload, then FIN."""

    def exchange(connection: socket.socket, peer) -> None:
        size = struct.unpack("!Q", connection.recv(8, socket.MSG_WAITALL))[0]
        connection.sendall(net.payload(size))
        upload = net.recv_all(connection)
        connection.sendall(bytes.fromhex(net.digest(upload)))

    return exchange


def client_round(net, port: int, download: int, upload: int, seed: int) -> None:
    with net.connect(port) as client:
        client.sendall(struct.pack("!Q", download))
        body = net.payload(upload, seed)

        def send() -> None:
            client.sendall(body)
            client.shutdown(socket.SHUT_WR)

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            sent = pool.submit(send)
            received = net.recv_all(client)
            sent.result()
    assert len(received) == download + 32
    assert net.digest(received[:download]) == net.digest(net.payload(download)), f"download of {download} B differs"
    assert received[download:].hex() == net.digest(body), f"upload of {upload} bytes differs"


@pytest.mark.parametrize(
    "controller",
    [ItcpConfig(), FixedConfig(mode="window", bytes=200_000), FixedConfig(mode="quota", bytes=200_000)],
    ids=["itcp", "window", "quota"],
)
def test_sha256_end_to_end_over_many_sizes_both_ways(net, serve, controller):
    server = serve(exchange_handler(net))

    def work():
        for index, size in enumerate(SIZES):
            client_round(net, server.port, download=size, upload=SIZES[-1 - index] // 4, seed=index)

    _, stats = run_with_proxy(config(net, controller=controller), work)
    assert not server.errors
    assert stats["flows_opened"] == len(SIZES)
    assert stats["bytes_down"] >= sum(SIZES)


def test_concurrent_flows_stay_byte_exact(net, serve):
    server = serve(exchange_handler(net))

    def work():
        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            rounds = [pool.submit(client_round, net, server.port, 300_000 + 7919 * i, 50_000 + i, i) for i in range(64)]
            for done in rounds:
                done.result()

    _, stats = run_with_proxy(config(net), work)
    assert stats["flows_opened"] == 64 and not server.errors


def test_server_and_ue_see_each_other_not_the_proxy(net, serve):
    seen = {}

    def handler(connection, peer):
        seen["server_sees"] = peer[0]
        connection.sendall(b"hello")

    server = serve(handler)

    def work():
        with net.connect(server.port) as client:
            assert client.recv(5) == b"hello"
            return client.getpeername()

    peer, stats = run_with_proxy(config(net), work)
    assert seen["server_sees"] == net.ue_ip(1)
    assert peer == ("10.20.0.2", server.port)
    assert stats["flows_opened"] == 1  # it did go through the proxy


def test_half_close_from_the_ue_keeps_the_download_going(net, serve):
    def handler(connection, peer):
        assert net.recv_all(connection) == b"request"  # the UE's FIN reached the server
        time.sleep(0.2)
        connection.sendall(net.payload(500_000))  # and the server can still send after it

    server = serve(handler)

    def work():
        with net.connect(server.port) as client:
            client.sendall(b"request")
            client.shutdown(socket.SHUT_WR)
            return net.recv_all(client)

    data, _ = run_with_proxy(config(net), work)
    assert data == net.payload(500_000) and not server.errors


def test_half_close_from_the_server_keeps_the_upload_going(net, serve):
    received = {}

    def handler(connection, peer):
        connection.sendall(b"banner")
        connection.shutdown(socket.SHUT_WR)
        received["upload"] = net.recv_all(connection)

    server = serve(handler)

    def work():
        with net.connect(server.port) as client:
            assert net.recv_all(client) == b"banner"  # the server's FIN reached the UE
            client.sendall(net.payload(300_000))  # and the UE can still send after it
            client.shutdown(socket.SHUT_WR)
            time.sleep(0.5)

    run_with_proxy(config(net), work)
    assert received["upload"] == net.payload(300_000)


def test_reset_by_the_server_reaches_the_ue(net, serve):
    def handler(connection, peer):
        connection.recv(1)
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    server = serve(handler)

    def work():
        with net.connect(server.port) as client:
            client.sendall(b"x")
            with pytest.raises(ConnectionResetError):
                while client.recv(1024):
                    pass

    _, stats = run_with_proxy(config(net), work)
    assert stats["flows_reset"] == 1


def test_reset_by_the_ue_reaches_the_server(net, serve):
    outcome = {}

    def handler(connection, peer):
        try:
            while connection.recv(1024):
                pass
            outcome["server"] = "fin"
        except ConnectionResetError:
            outcome["server"] = "reset"

    server = serve(handler)

    def work():
        client = net.connect(server.port)
        client.sendall(b"some data")
        time.sleep(0.1)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
        time.sleep(0.5)

    _, stats = run_with_proxy(config(net), work)
    assert outcome["server"] == "reset" and stats["flows_reset"] == 1


def test_connection_to_a_closed_port_is_reset_for_the_ue(net):
    def work():
        # nothing listens there: the proxy accepted, the server refuses, the UE is reset (as soon as connect)
        with pytest.raises(ConnectionResetError), net.connect(9) as client:
            client.recv(1)

    _, stats = run_with_proxy(config(net), work)
    assert stats["connect_failures"] == 1


def test_a_vanished_ue_is_freed_within_the_peer_timeout(net, serve):
    def handler(connection, peer):
        try:
            while True:
                connection.sendall(b"x" * 65_536)
        except OSError:
            pass

    serve_port = serve(handler).port

    async def scenario():
        async with Proxy(config(net, peer_timeout_s=2.0)) as proxy:
            client = await asyncio.to_thread(net.connect, serve_port)
            await asyncio.sleep(0.3)
            net.link_down(net.ue(1), "ue0")  # the UE disappears: nothing answers any more
            started = time.monotonic()
            while proxy.stats()["flows_active"] and time.monotonic() - started < 8:
                await asyncio.sleep(0.1)
            client.close()
            return proxy.stats(), time.monotonic() - started

    stats, elapsed = asyncio.run(scenario())
    assert stats["flows_active"] == 0 and stats["flows_reset"] == 1
    assert elapsed < 4.0
