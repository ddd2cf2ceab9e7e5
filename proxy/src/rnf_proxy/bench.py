"""Benchmarks of the proxy, each with its reference measured in the same run (docs/benchmarks.md).

    python -m rnf_proxy.bench                 # everything (needs root for the relay part: a namespace)
    python -m rnf_proxy.bench --only relay    # relay throughput, proxy against socat and a direct path
    python -m rnf_proxy.bench --only step     # controller step cost, 1000 UEs
    python -m rnf_proxy.bench --only latency  # telemetry-to-decision latency on loopback

- relay: iperf3 (reverse mode: the server sends) through each relay, in a namespace of its own on its loopback:
  1 flow and 100 flows, for the direct path, `socat` (the reference) and the proxy (explicit mode, `itcp`, so
  the relay alone is measured, and a `fixed` window so the controlled path is too). Every flow comes from
  127.0.0.1, one UE to the proxy, so the proxy rows give that UE the buffer of as many UEs as there are flows
  (`ue_bytes` = flows x `connection_bytes`, the per-connection bound binds), and the window row a window of
  that size, so that neither bound, rather than the relay, sets the throughput; at 100 flows one more row
  keeps the default per-UE budget (4 MiB, 41 kB per connection), which then limits the throughput.
- step: one telemetry burst of 1000 UEs turned into 1000 decisions (`feedback.step_many`, vectorized per bank)
  for smvs and rnf; CPU time of the thread (what the step costs on one core) and wall time.
- latency: a publisher thread sends one UE's telemetry every 10 ms over ZeroMQ on loopback; the latency is from
  the message's timestamp to the end of the proxy's handling of it (decision applied). The reference, in the
  same run: the same publisher and a bare pyzmq SUB socket receiving in a thread of its own (the transport
  alone).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial

import zmq
from rich.console import Console
from rich.table import Table
from rnf_telemetry.message import TelemetryMessage, decode_multipart
from rnf_telemetry.transport import Publisher

from rnf_proxy import netns
from rnf_proxy.config import BufferConfig, KernelConfig, ProxyConfig, TelemetryConfig
from rnf_proxy.control import RanSample
from rnf_proxy.feedback import RanController, step_many
from rnf_proxy.fixed import FixedConfig
from rnf_proxy.itcp import ItcpConfig
from rnf_proxy.proxy import Proxy
from rnf_proxy.rnf import Rnf, RnfBank, RnfConfig
from rnf_proxy.smvs import Smvs, SmvsBank, SmvsConfig

console = Console(highlight=False)
IPERF_PORT = 5201
RELAY_PORT = 5301


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


# -- relay throughput ------------------------------------------------------------------------------------


async def _iperf(namespace: str, port: int, flows: int, seconds: float) -> float:
    """Receiver-side throughput, Gbit/s, of an iperf3 download (-R) through `port`."""
    argv = ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-R", "-P", str(flows), "-t", str(seconds), "-J"]
    process = await asyncio.create_subprocess_exec(
        *netns.command(namespace, argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await process.communicate()
    report = json.loads(out or b"{}")
    if "end" not in report or "error" in report:
        raise RuntimeError(f"iperf3 failed: {report.get('error') or err.decode().strip()}")
    return float(report["end"]["sum_received"]["bits_per_second"]) / 1e9


async def _with_proxy(
    namespace: str, controller: ItcpConfig | FixedConfig, ue_bytes: int | None, run: Callable[[], object]
) -> float:
    buffers = BufferConfig() if ue_bytes is None else BufferConfig(ue_bytes=ue_bytes)
    config = ProxyConfig(
        namespace=namespace,
        mode="explicit",
        listen=f"127.0.0.1:{RELAY_PORT}",
        server=f"127.0.0.1:{IPERF_PORT}",
        ue_networks=["127.0.0.0/8"],
        controller=controller,
        telemetry=TelemetryConfig(endpoint="tcp://127.0.0.1:1"),
        kernel=KernelConfig(tune=False),
        buffers=buffers,
    )
    async with Proxy(config):
        result: float = await run()  # type: ignore[misc]
    return result


async def _with_socat(namespace: str, run: Callable[[], object]) -> float:
    argv = ["socat", f"TCP-LISTEN:{RELAY_PORT},bind=127.0.0.1,reuseaddr,fork", f"TCP:127.0.0.1:{IPERF_PORT}"]
    socat = subprocess.Popen(netns.command(namespace, argv), stderr=subprocess.DEVNULL)
    try:
        await _listening(namespace, RELAY_PORT)
        result: float = await run()  # type: ignore[misc]
    finally:
        socat.terminate()
        socat.wait()
    return result


async def _listening(namespace: str, port: int, timeout_s: float = 10.0) -> None:
    """Wait until something listens on `port` in `namespace` (a loaded machine starts socat slowly)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        listing = netns.run(namespace, ["ss", "-Hltn", f"sport = :{port}"], check=False)
        if listing.stdout.strip():
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {timeout_s:g} s")


async def relay(seconds: float, repetitions: int) -> list[tuple[str, int, float, float, float, float]]:
    """(path, flows, median Gbit/s, median ratio to socat, lowest and highest ratio to the socat of the same
    repetition) for direct, socat and the proxy, interleaved."""
    namespace = f"pxb-{uuid.uuid4().hex[:6]}"
    netns.run(None, ["ip", "netns", "add", namespace])
    server = None
    try:
        netns.run(namespace, ["ip", "link", "set", "lo", "up"])
        server = subprocess.Popen(
            netns.command(namespace, ["iperf3", "-s", "-p", str(IPERF_PORT)]), stdout=subprocess.DEVNULL
        )
        await asyncio.sleep(0.5)
        results: dict[tuple[str, int], list[float]] = {}
        connection_bytes = BufferConfig().connection_bytes
        for flows in (1, 100):
            budget = flows * connection_bytes
            window = FixedConfig(mode="window", bytes=budget)
            paths: list[tuple[str, Callable[[Callable[[], object]], object]]] = [
                ("direct", lambda run: run()),
                ("socat", lambda run: _with_socat(namespace, run)),
                ("proxy itcp", partial(_with_proxy, namespace, ItcpConfig(), budget)),
                ("proxy window", partial(_with_proxy, namespace, window, budget)),
            ]
            if flows > 1:
                paths.append(("proxy itcp, 4 MiB/UE", partial(_with_proxy, namespace, ItcpConfig(), None)))
            for _ in range(repetitions):
                for name, wrap in paths:
                    port = IPERF_PORT if name == "direct" else RELAY_PORT
                    measured = await wrap(lambda port=port, flows=flows: _iperf(namespace, port, flows, seconds))  # type: ignore[misc]
                    results.setdefault((name, flows), []).append(float(measured))  # type: ignore[arg-type]
                    await asyncio.sleep(0.3)
        rows = []
        for (name, flows), values in results.items():
            median = statistics.median(values)
            socat = results[("socat", flows)]
            ratios = [value / reference for value, reference in zip(values, socat, strict=True)]
            rows.append((name, flows, median, median / statistics.median(socat), min(ratios), max(ratios)))
        return rows
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        netns.run(None, ["ip", "netns", "del", namespace], check=False)


# -- controller step cost --------------------------------------------------------------------------------


def step_cost(ues: int, steps: int) -> list[tuple[str, float, float, float]]:
    """(controller, CPU p50 ms, CPU p99 ms, wall p99 ms) of one telemetry burst of `ues` UEs."""
    rng = random.Random(1)
    rows = []
    for name, make in (
        (
            "smvs",
            lambda: (lambda bank: [Smvs(bank=bank) for _ in range(ues)])(SmvsBank(SmvsConfig(b_max_bytes=300_000))),
        ),
        ("rnf", lambda: (lambda bank: [Rnf(bank=bank) for _ in range(ues)])(RnfBank(RnfConfig()))),
    ):
        controllers: Sequence[RanController] = make()
        bursts = [
            [RanSample(rng.randrange(300_000), rng.randrange(40_000), 0.01, rng.random() < 0.01) for _ in range(ues)]
            for _ in range(20)
        ]
        cpu, wall = [], []
        for k in range(steps):
            started_cpu, started = time.thread_time_ns(), time.perf_counter_ns()
            step_many(controllers, bursts[k % len(bursts)], k * 0.01)
            cpu.append((time.thread_time_ns() - started_cpu) / 1e6)
            wall.append((time.perf_counter_ns() - started) / 1e6)
        rows.append((name, percentile(cpu, 0.5), percentile(cpu, 0.99), percentile(wall, 0.99)))
    return rows


def idle_step_cost(steps: int) -> list[tuple[str, float, float]]:
    """(case, wall p50 ms, wall p99 ms) of one `smvs` step for one UE, back to back and after 10 ms idle (as
    each telemetry period leaves the proxy's thread): what cold caches add to telemetry-to-decision."""
    rows = []
    for name, idle in (("back to back", 0.0), ("after 10 ms idle", 0.01)):
        controllers = [Smvs(bank=SmvsBank(SmvsConfig(b_max_bytes=300_000)))]
        sample = [RanSample(120_000, 25_000, 0.01, False, 300_000)]
        wall = []
        for k in range(steps + 100):
            if idle:
                time.sleep(idle)
            started = time.perf_counter_ns()
            step_many(controllers, sample, k * 0.01)
            if k >= 100:  # after the warm-up
                wall.append((time.perf_counter_ns() - started) / 1e6)
        rows.append((name, percentile(wall, 0.5), percentile(wall, 0.99)))
    return rows


# -- telemetry to decision ---------------------------------------------------------------------------------


def _publish(publisher: Publisher, ues: int, stop: threading.Event) -> None:
    """Every 10 ms, one message per UE, stamped when it is made."""
    seq = 0
    while not stop.is_set():
        for ue in range(ues):
            publisher.send(
                TelemetryMessage(
                    cell_id=1,
                    rnti=0x46 + ue,
                    lcid=3,
                    timestamp_ns=time.time_ns(),
                    tti=seq * 10,
                    seq=seq,
                    period_us=10_000,
                    dl_queue_new_bytes=120_000,
                    dl_queue_limit_bytes=300_000,
                    dl_sched_new_bytes=25_000,
                    ue_ip=f"172.16.{ue // 250}.{ue % 250 + 2}",
                )
            )
        seq += 1
        time.sleep(0.01)


def transport(messages: int) -> tuple[float, float, float]:
    """The reference: (p50, p99, max) ms from a message's timestamp to its arrival at a bare SUB socket that
    receives, blocking, in a thread of its own."""
    publisher = Publisher("tcp://127.0.0.1:0")
    subscriber: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.SUB)
    subscriber.setsockopt(zmq.SUBSCRIBE, b"")
    subscriber.connect(publisher.endpoint)
    stop = threading.Event()
    thread = threading.Thread(target=_publish, args=(publisher, 1, stop), daemon=True)
    thread.start()
    settle = time.monotonic() + 0.5
    delays: list[float] = []
    while len(delays) < messages:
        frames = subscriber.recv_multipart()
        done = time.time_ns()
        if time.monotonic() > settle:
            delays.append((done - decode_multipart(frames).timestamp_ns) / 1e6)
    stop.set()
    thread.join()
    subscriber.close()
    publisher.close()
    return percentile(delays, 0.5), percentile(delays, 0.99), max(delays)


async def latency(messages: int, ues: int) -> tuple[float, float, float]:
    """(p50, p99, max) ms from a message's timestamp to the end of its handling by the proxy."""
    publisher = Publisher("tcp://127.0.0.1:0")
    config = ProxyConfig(
        mode="explicit",
        listen="127.0.0.1:0",
        server="127.0.0.1:9",
        controller=SmvsConfig(b_max_bytes=300_000),
        telemetry=TelemetryConfig(endpoint=publisher.endpoint),
        kernel=KernelConfig(tune=False),
    )
    delays: list[float] = []
    stop = threading.Event()
    async with Proxy(config) as proxy:
        handle = proxy.on_telemetry

        def timed(batch: list[TelemetryMessage], now: float) -> None:
            handle(batch, now)
            done = time.time_ns()
            delays.extend((done - message.timestamp_ns) / 1e6 for message in batch)

        proxy.on_telemetry = timed  # type: ignore[method-assign,assignment]
        thread = threading.Thread(target=_publish, args=(publisher, ues, stop), daemon=True)
        thread.start()
        await asyncio.sleep(0.5)
        delays.clear()  # the subscription settling is not part of the measurement
        while len(delays) < messages * ues:
            await asyncio.sleep(0.05)
        stop.set()
        thread.join()
    publisher.close()
    return percentile(delays, 0.5), percentile(delays, 0.99), max(delays)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=["relay", "step", "latency"])
    parser.add_argument("--seconds", type=float, default=5.0, help="iperf3 duration per measurement")
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args()
    if args.only in (None, "step"):
        table = Table(
            "controller", "UEs", "CPU p50 ms", "CPU p99 ms", "wall p99 ms", title="controller step, Ts = 10 ms"
        )
        for name, p50, p99, wall in step_cost(1000, 1000):
            table.add_row(name, "1000", f"{p50:.2f}", f"{p99:.2f}", f"{wall:.2f}")
        console.print(table)
        table = Table("smvs, 1 UE", "wall p50 ms", "wall p99 ms", title="controller step, one UE")
        for name, p50, p99 in idle_step_cost(500):
            table.add_row(name, f"{p50:.3f}", f"{p99:.3f}")
        console.print(table)
    if args.only in (None, "latency"):
        table = Table("path", "UEs per burst", "p50 ms", "p99 ms", "max ms", title="telemetry to decision, loopback")
        for name, ues, (p50, p99, worst) in (
            ("bare SUB socket, own thread (reference)", 1, transport(2000)),
            ("proxy: decision applied", 1, asyncio.run(latency(2000, 1))),
            ("proxy: decision applied", 1000, asyncio.run(latency(100, 1000))),
        ):
            table.add_row(name, str(ues), f"{p50:.3f}", f"{p99:.3f}", f"{worst:.3f}")
        console.print(table)
    if args.only in (None, "relay"):
        table = Table(
            "path",
            "flows",
            "Gbit/s (median)",
            "x socat (medians)",
            "x socat, each repetition",
            title=f"relay throughput, iperf3 -R {args.seconds:g} s, {args.repetitions} repetitions",
        )
        for name, flows, gbps, ratio, low, high in asyncio.run(relay(args.seconds, args.repetitions)):
            table.add_row(name, str(flows), f"{gbps:.2f}", f"{ratio:.2f}", f"{low:.2f}-{high:.2f}")
        console.print(table)


if __name__ == "__main__":
    main()
