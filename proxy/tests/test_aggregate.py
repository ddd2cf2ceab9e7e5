"""Enforcement: a fixed decision held constant, and what the wire carries (TCP_INFO, SIOCOUTQ) measured."""

import asyncio
import statistics
import threading

import pytest
from rnf_proxy import Proxy, ProxyConfig, sockets
from rnf_proxy.fixed import FixedConfig

pytestmark = pytest.mark.root


def config(net, controller) -> ProxyConfig:
    return ProxyConfig(namespace=net.core, controller=controller, telemetry={"endpoint": "tcp://127.0.0.1:1"})


def bulk(connection, peer) -> None:
    chunk = bytes(1 << 16)
    try:
        while True:
            connection.sendall(chunk)
    except OSError:
        pass


def start_download(net, port: int, streams: int = 1) -> threading.Event:
    """UE clients that read as fast as they can until the returned event is set."""
    stop = threading.Event()

    def read() -> None:
        try:
            with net.connect(port) as client:
                while not stop.is_set() and client.recv(1 << 20):
                    pass
        except OSError:  # the proxy or the namespace went away first
            pass

    for _ in range(streams):
        threading.Thread(target=read, daemon=True).start()
    return stop


async def wait_for_flows(proxy: Proxy, ue: str, count: int) -> list:
    for _ in range(200):
        aggregate = proxy.aggregates.get(ue)
        if aggregate is not None and len(aggregate.flows) == count:
            return list(aggregate.flows)
        await asyncio.sleep(0.01)
    raise AssertionError("the flows did not reach the proxy")


def test_window_bounds_what_is_in_flight_and_fills_it(net, serve):
    window = 150_000
    net.bottleneck(rate_mbit=20, limit_bytes=1_000_000)  # the queue, not the link, holds the window
    server = serve(bulk)

    async def scenario():
        async with Proxy(config(net, FixedConfig(mode="window", bytes=window))) as proxy:
            stop = start_download(net, server.port, streams=2)
            flows = await wait_for_flows(proxy, net.ue_ip(1), 2)
            await asyncio.sleep(1.0)
            samples = []
            for _ in range(300):
                queued = sum(sockets.send_queue(flow.ue_fd) for flow in flows)
                unsent = sum(sockets.not_sent(flow.ue_fd) for flow in flows)
                samples.append((queued, queued - unsent))
                await asyncio.sleep(0.005)
            stop.set()
            return samples

    samples = asyncio.run(scenario())
    assert max(queued for queued, _ in samples) <= window  # never more than the window
    in_flight = statistics.mean(flight for _, flight in samples)
    assert in_flight == pytest.approx(window, rel=0.05)


def test_quota_is_what_leaves_per_step(net, serve):
    quota, step = 25_000, 0.01  # 20 Mbit/s
    server = serve(bulk)

    async def scenario():
        async with Proxy(config(net, FixedConfig(mode="quota", bytes=quota, ts_s=step))) as proxy:
            stop = start_download(net, server.port, streams=2)
            flows = await wait_for_flows(proxy, net.ue_ip(1), 2)
            await asyncio.sleep(1.0)
            loop = asyncio.get_running_loop()
            start, sent_before = loop.time(), sum(sockets.tcp_info(flow.ue).bytes_sent for flow in flows)
            per_step, previous = [], sent_before
            for _ in range(150):
                await asyncio.sleep(step)
                sent = sum(sockets.tcp_info(flow.ue).bytes_sent for flow in flows)
                per_step.append(sent - previous)
                previous = sent
            elapsed = loop.time() - start
            stop.set()
            return (previous - sent_before) / (elapsed / step), per_step

    mean_per_step, per_step = asyncio.run(scenario())
    assert mean_per_step == pytest.approx(quota, rel=0.05)
    # steps of the test's own clock drift against the proxy's, so single steps scatter; the median does not
    assert statistics.median(per_step) == pytest.approx(quota, rel=0.1)


def test_a_quota_cap_bounds_what_the_sockets_hold(net, serve):
    # 50 kB per 10 ms step (40 Mbit/s) into a 20 Mbit/s bottleneck with a deep queue: without a cap the kernel's
    # queues would grow by 25 kB a step; with it, SIOCOUTQ (unacknowledged + unsent) stays at the cap
    quota, step, cap = 50_000, 0.01, 120_000
    net.bottleneck(rate_mbit=20, limit_bytes=1_000_000)
    server = serve(bulk)

    async def scenario():
        controller = FixedConfig(mode="quota", bytes=quota, ts_s=step, cap_bytes=cap)
        async with Proxy(config(net, controller)) as proxy:
            stop = start_download(net, server.port)
            flows = await wait_for_flows(proxy, net.ue_ip(1), 1)
            held = []
            for _ in range(200):
                await asyncio.sleep(step / 3)
                held.append(sum(sockets.send_queue(flow.ue.fileno()) for flow in flows))
            stop.set()
            return held

    held = asyncio.run(scenario())
    assert max(held) <= cap
    assert statistics.median(held[100:]) > 0.8 * cap  # the cap, not the quota or the link, binds


def test_quota_is_shared_among_the_connections_of_a_ue(net, serve):
    server = serve(bulk)

    async def scenario():
        async with Proxy(config(net, FixedConfig(mode="quota", bytes=30_000))) as proxy:
            stop = start_download(net, server.port, streams=3)
            flows = await wait_for_flows(proxy, net.ue_ip(1), 3)
            await asyncio.sleep(0.5)
            before = [sockets.tcp_info(flow.ue).bytes_sent for flow in flows]
            await asyncio.sleep(1.0)
            after = [sockets.tcp_info(flow.ue).bytes_sent for flow in flows]
            stop.set()
            return [b - a for a, b in zip(before, after, strict=True)]

    sent = asyncio.run(scenario())
    assert sum(sent) == pytest.approx(3_000_000, rel=0.05)  # 30 kB per 10 ms step, for one second
    assert min(sent) > 0.8 * max(sent)  # equal tickets, equal shares
