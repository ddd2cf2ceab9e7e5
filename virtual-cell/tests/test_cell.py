"""The virtual cell end to end: real namespaces, real Linux TCP (iperf3), real ZeroMQ telemetry."""

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from rnf_cell import traces
from rnf_cell.cell import VirtualCell
from rnf_cell.config import CellConfig, parse_cell
from rnf_cell.topology import SGI_IFNAME, UE_IFNAME, leftovers
from rnf_telemetry.record import NullRecorder
from rnf_telemetry.transport import Subscriber

pytestmark = pytest.mark.root
EXAMPLES = Path(__file__).parents[1] / "examples"
PACKET_RECORD = np.dtype(  # packets.bin, INTERFACE.md "Packet log", read without the project's readers
    [("ue", "<u2"), ("length", "<u2"), ("reserved", "<u4"), ("arrival_ns", "<u8"), ("delivery_ns", "<u8")]
)


async def iperf_download(cell: VirtualCell, seconds: float) -> asyncio.subprocess.Process:
    await asyncio.create_subprocess_exec(
        "ip", "netns", "exec", cell.names.server, "iperf3", "-s", "-1", stdout=asyncio.subprocess.DEVNULL
    )
    await asyncio.sleep(0.3)
    client = await asyncio.create_subprocess_exec(
        "ip",
        "netns",
        "exec",
        cell.names.ue(0),
        "iperf3",
        "-c",
        "10.20.0.2",
        "-R",
        "-t",
        str(seconds),
        "-C",
        "cubic",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    return client


def lateness_ms(cell: VirtualCell) -> float:
    """The most a TTI of the run started after its deadline, as the datapath measured it, ms."""
    assert cell.summary is not None, "the datapath wrote no summary"
    lateness = cell.summary["tti_lateness_ns"]
    assert isinstance(lateness, dict)
    return float(lateness["max"]) / 1e6


def ping_from_the_ue(
    config: CellConfig, workdir: Path, *options: str, settle_s: float = 0, warm: bool = True
) -> tuple[str, VirtualCell]:
    """Pings the server from UE 1 through a cell of `config` with ping's `options`, `settle_s` after the cell started
    and, when `warm`, after one ping that resolves the server's gateway (ARP over the wired path would add its delay
    to the first); ping's output and the cell, stopped (its datapath's summary). Every delay on the path is the
    datapath's, counted in TTIs: a TTI run late, and those run back to back after it, shift a packet's wall-clock
    times by up to that lateness."""

    async def scenario() -> tuple[str, VirtualCell]:
        cell = VirtualCell(config, workdir, NullRecorder())
        async with cell:
            await asyncio.sleep(settle_s)
            if warm:
                warm_up = ["ip", "netns", "exec", cell.names.ue(0), "ping", "-n", "-c", "1", "-W", "2", "10.20.0.2"]
                await (await asyncio.create_subprocess_exec(*warm_up, stdout=asyncio.subprocess.DEVNULL)).wait()
            ping = await asyncio.create_subprocess_exec(
                "ip", "netns", "exec", cell.names.ue(0), "ping", "-n", *options, "-W", "2", "10.20.0.2",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            out, err = await ping.communicate()
            assert ping.returncode == 0, err.decode()
        return out.decode(), cell

    return asyncio.run(scenario())


def test_tcp_download_gets_the_mahimahi_trace_capacity_while_backlogged(cell_data, tmp_path, tun_rx_bytes):
    cell_data["ues"][0]["trace"] = {"file": str(EXAMPLES / "traces" / "steps.down"), "format": "mahimahi"}
    config = parse_cell(cell_data, "test")
    reports = []

    async def scenario() -> tuple[int, int, int, int]:
        cell = VirtualCell(config, tmp_path, NullRecorder())
        async with cell:
            original = cell._record
            cell._record = lambda report, message: (reports.append(report), original(report, message))  # type: ignore[method-assign]
            client = await iperf_download(cell, 7)
            await asyncio.sleep(2.5)  # past slow start: the RLC queue is full from here on
            t1, rx1 = time.time_ns(), tun_rx_bytes(cell.names.ue(0))
            await asyncio.sleep(4.0)
            t2, rx2 = time.time_ns(), tun_rx_bytes(cell.names.ue(0))
            assert await client.wait() == 0, (await client.stderr.read()).decode()
        return t1, rx1, t2, rx2

    t1, rx1, t2, rx2 = asyncio.run(scenario())
    window = [r for r in reports if t1 <= r.time_ns <= t2]
    assert window and all(r.backlogged_ttis == 10 for r in window), "the queue ran empty: not backlogged"
    # Trace capacity between t1 and t2 on the datapath's TTI clock (TTI k ends at start + (k+1) ms).
    start_ns = reports[0].time_ns - (reports[0].tti_end + 1) * 1_000_000
    capacity = traces.usable_bytes(traces.read_mahimahi(EXAMPLES / "traces" / "steps.down"))
    first, last = (t1 - start_ns) / 1e6, (t2 - start_ns) / 1e6
    looped = np.tile(capacity, int(last // len(capacity)) + 2)
    expected = looped[int(first) : int(last)].sum()
    delivered = rx2 - rx1
    assert delivered == pytest.approx(expected, rel=0.01), f"delivered {delivered} B, trace {expected} B"


@pytest.mark.parametrize("awake", [True, False], ids=["awake", "may-halt"])
def test_while_the_cell_runs_an_idle_class_thread_on_each_cpu_keeps_it_from_halting(cell_data, tmp_path, awake):
    # A halted vCPU woke the TTI loop 10-20 ms late (docs/benchmarks.md): one spinner per CPU the datapath may use,
    # pinned there, at SCHED_IDLE, so that every other task comes first
    config = parse_cell(dict(cell_data, keep_cpus_awake=awake), "test")

    async def scenario() -> list[tuple[str, int, set[int]]]:
        async with VirtualCell(config, tmp_path, NullRecorder()) as cell:
            assert cell._datapath is not None
            tasks = Path(f"/proc/{cell._datapath._process.pid}/task")
            return [
                (
                    (task / "comm").read_text().strip(),
                    os.sched_getscheduler(int(task.name)),
                    os.sched_getaffinity(int(task.name)),
                )
                for task in tasks.iterdir()
            ]

    threads = asyncio.run(scenario())
    spinners = [(policy, cpus) for name, policy, cpus in threads if name.startswith("rnf-cell-dp-awa")]
    if not awake:
        assert spinners == []
        return
    assert all(policy == os.SCHED_IDLE and len(cpus) == 1 for policy, cpus in spinners)
    assert sorted(cpu for _, cpus in spinners for cpu in cpus) == sorted(os.sched_getaffinity(0))


def test_the_discard_timer_bounds_every_delivered_packets_wait_and_counts_what_it_discarded(cell_data, tmp_path):
    # 16 Mbit/s of UDP into an 8 Mbit/s link for 3 s, a 1 MB queue (it would hold a second of data) and a 50 ms
    # discard timer: every packet delivered waited at most 50 ms in the queue, plus the 10 ms backhaul and the
    # few TTIs that finish the SDU being segmented when the timer runs out (2 ms at 1000 B per TTI). The bound is in
    # TTIs; the packet log stamps wall-clock time, and a TTI run late (the datapath's own lateness, which it
    # reports) stretches a wait by as much
    ue = cell_data["ues"][0]
    ue.update(queue_limit_bytes=1_000_000, discard_timer_ms=50)
    config = parse_cell(cell_data, "test")
    reports = []

    async def scenario() -> VirtualCell:
        cell = VirtualCell(config, tmp_path, NullRecorder())
        async with cell:
            original = cell._record
            cell._record = lambda report, message: (reports.append(report), original(report, message))  # type: ignore[method-assign]
            server = await asyncio.create_subprocess_exec(
                "ip", "netns", "exec", cell.names.server, "iperf3", "-s", "-1", stdout=asyncio.subprocess.DEVNULL
            )
            await asyncio.sleep(0.3)
            client = await asyncio.create_subprocess_exec(
                "ip", "netns", "exec", cell.names.ue(0), "iperf3", "-c", "10.20.0.2", "-R", "-u", "-b", "16M",
                "-l", "1400", "-t", "3", stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            assert await client.wait() == 0, (await client.stderr.read()).decode()
            await server.wait()
            await asyncio.sleep(0.2)
        return cell

    late_ms = lateness_ms(asyncio.run(scenario()))
    packets = np.fromfile(tmp_path / "packets.bin", PACKET_RECORD)
    waits_ms = (packets["delivery_ns"].astype(np.int64) - packets["arrival_ns"].astype(np.int64)) / 1e6
    longest = waits_ms.max()
    assert packets.size > 1500 and longest <= 10 + 50 + 5 + late_ms, f"{packets.size} packets, longest {longest} ms"
    discarded = sum(r.discarded_sdus for r in reports)
    arrived, delivered = sum(r.arrived_sdus for r in reports), sum(r.delivered_sdus for r in reports)
    # about half of what arrived: 8 of the 16 Mbit/s
    assert 0.3 * arrived < discarded and sum(r.dropped_sdus for r in reports) == 0
    assert arrived - discarded - delivered <= reports[-1].queue_sdus + 1


def test_with_scheduling_requests_the_ues_packets_leave_in_one_bunch_per_occasion(cell_data, tmp_path):
    # pings from the UE every 7 ms for 0.7 s, scheduling requests every 100 ms: each echo request waits for the next
    # occasion, then 8 ms (grant, PUSCH) and the 10 ms uplink delay; the wired path (5 ms each way) and the 10 ms
    # backhaul bring the reply. So every RTT is at most 8 + 10 + 5 + 5 + 10 = 38 ms plus 100 ms (and a TTI), and
    # the replies come back in bunches 100 ms apart, each of the requests sent within one period. A request that
    # arrives after an occasion but before that occasion's grant reaches the UE (4 ms) goes with it (uplink.rs), so
    # the least RTT is 4 + 30 = 34 ms; without the scheduling requests it would be 30 (37.6 ms seen, 2026-11-29). These
    # are TTIs; in wall-clock time a TTI run late, and those run back to back after it, shift each by up to the
    # datapath's lateness, which it reports. When the replies came is the packet log's: ping's -D stamps when ping
    # prints, and a loaded host makes that late (one print split a bunch with a 4-80 ms gap, CI 2026-11-30)
    cell_data["ues"][0]["uplink_sr_period_ms"] = 100
    config = parse_cell(cell_data, "test")

    async def scenario() -> tuple[str, VirtualCell]:
        cell = VirtualCell(config, tmp_path, NullRecorder())
        async with cell:
            ping = await asyncio.create_subprocess_exec(
                "ip", "netns", "exec", cell.names.ue(0), "ping", "-n", "-i", "0.007", "-c", "100", "-W", "1",
                "10.20.0.2", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            out, err = await ping.communicate()
            assert ping.returncode == 0, err.decode()
        return out.decode(), cell

    output, cell = asyncio.run(scenario())
    late = lateness_ms(cell)
    replies = sorted((int(seq), float(rtt)) for seq, rtt in re.findall(r"icmp_seq=(\d+) .* time=([\d.]+) ms", output))
    assert len(replies) == 100, output
    rtts = np.array([rtt for _, rtt in replies])
    # the cell's queue is first in, first out: the replies reached the UE's TUN in the order of their requests
    packets = np.sort(np.fromfile(tmp_path / "packets.bin", PACKET_RECORD), order="delivery_ns")
    assert packets.size == 100, packets.size
    returned = packets["delivery_ns"].astype(np.int64) / 1e6
    assert 34 - late <= rtts.min() and rtts.max() <= 38 + 100 + 2 + late, (late, sorted(rtts))
    gaps = np.diff(returned)
    assert np.all((gaps < 4 + late) | (gaps > 80 - late)), gaps  # replies come back together, or an occasion apart
    bunches = np.split(returned - rtts, np.flatnonzero(gaps > 80 - late) + 1)  # the requests' send times, per bunch
    assert len(bunches) >= 6  # at least 700 ms of requests
    assert all(np.ptp(sent) <= 100 + 2 + late for sent in bunches), [np.ptp(sent) for sent in bunches]


def test_with_an_uplink_trace_the_ues_packets_leave_in_its_transmissions_within_their_limits(cell_data, tmp_path):
    # transmissions every 20 ms, each carrying at most one echo request (84 bytes: IP, ICMP and 56 bytes of data);
    # a request leaves in the first one at least the 10 ms uplink delay after it was written, then the wired path
    # (5 ms each way) and the 10 ms backhaul bring the reply. Requests three at a time (ping's preload) every 50 ms:
    # each reply comes 20 ms (and up to a TTI) after its request's transmission, on the 20 ms grid, no two requests
    # share one, and every RTT is at least 30 ms (after a first ping has resolved the server's gateway: ARP over the
    # wired path would add 10 ms). The replies' times are the packet log's (ping's -D stamps when ping prints, and
    # a loaded host makes that late), up to the datapath's lateness late in wall-clock time
    rows = "".join(f"{k * 0.02:.2f},84\n" for k in range(500))
    (tmp_path / "uplink.csv").write_text(f"time_s,bytes\n{rows}10.0,\n")
    cell_data["ues"][0]["uplink_trace"] = {"file": str(tmp_path / "uplink.csv")}
    config = parse_cell(cell_data, "test")
    output, cell = ping_from_the_ue(config, tmp_path, "-l", "3", "-i", "0.05", "-c", "20")
    late = lateness_ms(cell)
    rtts = [float(rtt) for rtt in re.findall(r"time=([\d.]+) ms", output)]
    assert len(rtts) == 20 and min(rtts) >= 30, output
    packets = np.fromfile(tmp_path / "packets.bin", PACKET_RECORD)
    assert packets.size == 21, packets.size  # the warm-up's reply first, 10 ms off the grid (its ARP)
    delivered_ns = np.sort(packets["delivery_ns"].astype(np.int64))[1:]
    transmissions = (delivered_ns - delivered_ns[0]) / 1e6 - 20
    phase = (transmissions - transmissions[0] + 10) % 20 - 10  # each one's distance from the grid of the first
    assert np.all((phase > -1.5 - late) & (phase < 1.5 + late)), (late, phase)
    assert np.all(np.diff(transmissions) > 18 - late), (late, np.diff(transmissions))


def test_the_delivery_delay_holds_each_packet_after_the_queue_before_the_ues_tun(cell_data, tmp_path):
    # no backhaul, a 30 ms delivery delay: an echo reply is served in the first TTI after it reaches the cell, then
    # waits 30 ms; with the 10 ms uplink and the wired path (5 ms each way) every RTT is 50 ms and at most a TTI
    # and the host's scheduling more (ping's own, on a loaded host, more than the cell's: at least half of them
    # within 4 ms), and the packet log has each reply 30-31 ms from the SGi to the UE's TUN, in wall-clock time up
    # to the datapath's lateness more
    cell_data["ues"][0] |= {"backhaul_delay_ms": 0, "delivery_delay_ms": 30}
    output, cell = ping_from_the_ue(parse_cell(cell_data, "test"), tmp_path, "-i", "0.05", "-c", "10")
    late = lateness_ms(cell)
    rtts = [float(rtt) for rtt in re.findall(r"time=([\d.]+) ms", output)]
    assert len(rtts) == 10 and min(rtts) >= 50 and np.median(rtts) < 54, output
    packets = np.fromfile(tmp_path / "packets.bin", PACKET_RECORD)
    waits_ms = (packets["delivery_ns"].astype(np.int64) - packets["arrival_ns"].astype(np.int64)) / 1e6
    assert packets.size == 11, packets.size  # the warm-up's reply too
    assert np.all((waits_ms >= 30) & (waits_ms < 32 + late)), (late, waits_ms)


def test_a_trace_that_starts_at_the_first_packet_lays_its_outage_from_the_ues_first_request(cell_data, tmp_path):
    # an outage 0.5-1.0 s into the trace (the constant trace unrolled to 1 s and looped: again at 1.5-2.0 s), pings
    # every 50 ms from 1.5 s after the cell started, the first of them the UE's first packet. The trace's t = 0 is
    # the start of the TTI after the cell read it, as the datapath reports it (`trace_started_ns`). That report is
    # checked against the first reply: its request was read at least 30 ms before it (uplink 10, wired 5 each way,
    # ARP over the wired path 10; the kernel's turnarounds only add), and a TTI later at most, so t = 0 is at most
    # 29 ms before the reply's read; not much earlier either (the kernel's turnarounds, well under 5 ms), where the
    # cell's start was 1.5 s before. Then each reply reaches the queue 10 ms after its read (backhaul) and leaves in
    # the first TTI due from then, on t = 0's 1 ms grid, or at the outage's end when that TTI is in an outage: up to
    # the datapath's lateness `late` and the TTI's own work later in wall-clock time, never earlier. A reply that
    # reaches the queue within the clocks' offset (realtime against monotonic, µs) of a TTI may take either TTI.
    # With the trace started with the cell, the first ping would meet an outage.
    cell_data["ues"][0] |= {"trace_start": "first_packet", "outages": [{"start_s": 0.5, "duration_s": 0.5}]}
    config = parse_cell(cell_data, "test")
    output, cell = ping_from_the_ue(config, tmp_path, "-i", "0.05", "-c", "30", settle_s=1.5, warm=False)
    late = lateness_ms(cell)
    assert "30 received" in output, output
    packets = np.sort(np.fromfile(tmp_path / "packets.bin", PACKET_RECORD), order="arrival_ns")
    assert packets.size == 30, packets.size
    assert cell.summary is not None
    trace_started_ns = cell.summary["trace_started_ns"][0]
    first_reply_after_start_ms = (int(packets["arrival_ns"][0]) - trace_started_ns) / 1e6
    assert 29 <= first_reply_after_start_ms < 35, first_reply_after_start_ms
    queued = (packets["arrival_ns"].astype(np.int64) - trace_started_ns) / 1e6 + 10
    left = (packets["delivery_ns"].astype(np.int64) - trace_started_ns) / 1e6

    def leaves(queued_ms: np.ndarray) -> np.ndarray:
        tti = np.ceil(queued_ms)
        return np.where(tti % 1000 >= 500, (tti // 1000 + 1) * 1000, tti)

    offset_ms = 0.05
    earliest, latest = leaves(queued - offset_ms), leaves(queued + offset_ms)
    assert np.sum(latest - queued > 50) >= 8, latest  # the outage was met
    within = (left >= earliest) & (left < latest + 0.5 + late)
    assert np.all(within), (late, [(k, left[k].round(2), latest[k]) for k in np.flatnonzero(~within)])


def test_published_telemetry_matches_what_the_ue_kernel_received(cell_data, tmp_path, tun_rx_bytes):
    config = parse_cell(cell_data, "test")

    async def scenario() -> tuple[list, int, dict]:
        cell = VirtualCell(config, tmp_path, NullRecorder())
        async with cell:
            subscriber = Subscriber(config.telemetry.endpoint)
            messages = []

            async def collect() -> None:
                async for message in subscriber:
                    messages.append(message)

            collector = asyncio.create_task(collect())
            await asyncio.sleep(0.5)  # subscription established before traffic starts
            rx_before = tun_rx_bytes(cell.names.ue(0))
            client = await iperf_download(cell, 3)
            await client.wait()
            await asyncio.sleep(1.5)  # the queue drains
            rx_after = tun_rx_bytes(cell.names.ue(0))
            collector.cancel()
            errors = dict(subscriber.tracker.errors) | {"lost": subscriber.tracker.lost}
            subscriber.close()
        return messages, rx_after - rx_before, errors

    messages, received, errors = asyncio.run(scenario())
    assert errors == {"lost": 0}
    assert [m.seq for m in messages] == list(range(messages[0].seq, messages[0].seq + len(messages)))
    scheduled = sum(m.dl_sched_new_bytes + m.dl_sched_retx_bytes for m in messages)
    assert max(m.queue_bytes for m in messages) > 100_000, "the download never filled the queue"
    assert messages[-1].queue_bytes == 0
    # Pure ACK/SYN packets of the handshake count on both sides alike; nothing else reaches the UE.
    assert scheduled == received
    assert all(m.ue_ip == "172.16.0.2" and m.rnti == 0x46 for m in messages)


def children(parent: int, name: str) -> list[int]:
    """Pids of the processes called `name` whose parent is `parent` (from /proc/PID/stat)."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except FileNotFoundError:
            continue
        command = stat[stat.index("(") + 1 : stat.rindex(")")]
        parent_pid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if command == name and parent_pid == parent:
            found.append(int(entry))
    return found


def rnf(*args: str) -> list[str]:
    return [sys.executable, "-m", "rnf_cli", *args]


def test_killed_cell_leaves_nothing_that_stops_the_next_run(cell_data, tmp_path):
    cell_file = tmp_path / "cell.toml"
    prefix = cell_data["namespace_prefix"]
    endpoint = cell_data["telemetry"]["endpoint"]
    cell_file.write_text(
        f'namespace_prefix = "{prefix}"\n[telemetry]\nendpoint = "{endpoint}"\n'
        '[[ues]]\ntrace = { generator = "constant", rate_mbps = 5 }\n'
    )
    first = subprocess.Popen(rnf("cell", str(cell_file)), stdout=subprocess.PIPE, text=True)
    assert "virtual cell up" in first.stdout.readline()
    datapaths = children(first.pid, "rnf-cell-dp")
    assert datapaths, "the cell runs its datapath as a child process"
    first.send_signal(signal.SIGKILL)
    first.wait()
    deadline = time.monotonic() + 3
    while any(Path(f"/proc/{pid}").exists() for pid in datapaths) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(Path(f"/proc/{pid}").exists() for pid in datapaths), "the datapath outlived its parent"
    assert leftovers(prefix), "a killed cell leaves its namespaces behind (its datapath dies with it)"
    time.sleep(0.3)
    second = subprocess.run(rnf("cell", str(cell_file), "--duration", "1"), capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    assert "removing leftovers" in second.stderr
    assert leftovers(prefix) == []


def test_ctrl_c_stops_cleanly(cell_data, tmp_path):
    cell_file = tmp_path / "cell.toml"
    prefix = cell_data["namespace_prefix"]
    cell_file.write_text(
        f'namespace_prefix = "{prefix}"\n[telemetry]\nendpoint = "{cell_data["telemetry"]["endpoint"]}"\n'
        '[[ues]]\ntrace = { generator = "constant", rate_mbps = 5 }\n'
    )
    process = subprocess.Popen(rnf("cell", str(cell_file)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert "virtual cell up" in process.stdout.readline()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=15)
    assert process.returncode == 0, err
    assert "virtual cell totals" in out
    assert leftovers(prefix) == []


def test_user_errors_are_one_line_not_tracebacks(cell_data, tmp_path):
    missing = tmp_path / "cell.toml"
    missing.write_text('[[ues]]\ntrace = { file = "nowhere.down", format = "mahimahi" }\n')
    result = subprocess.run(rnf("cell", str(missing)), capture_output=True, text=True)
    assert result.returncode == 2 and "nowhere.down: no such trace file" in result.stderr
    assert "Traceback" not in result.stderr

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        (tmp_path / "busy.toml").write_text(
            f'namespace_prefix = "{cell_data["namespace_prefix"]}"\n[telemetry]\nendpoint = "tcp://127.0.0.1:{port}"\n'
            '[[ues]]\ntrace = { generator = "constant", rate_mbps = 5 }\n'
        )
        result = subprocess.run(rnf("cell", str(tmp_path / "busy.toml")), capture_output=True, text=True)
    assert result.returncode == 2 and f"cannot bind telemetry publisher to tcp://127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_ack_regulator_keeps_a_download_under_the_queue_limit_through_a_rate_step(
    cell_data, tmp_path, interface_counter, tun_rx_bytes
):
    # CUBIC with ECN downloads for 8 s over 20 Mbit/s that falls to 2 Mbit/s at 4 s, into a 150 kB RLC queue; path
    # round trip 40 ms (10 ms backhaul, 10 ms uplink, 5 ms wired each way): 100 kB in flight at 20 Mbit/s, so slow
    # start overshoots the queue, and after the step the 10x lower rate must drain what is queued and on its way.
    # Without the regulator the queue overflows; with it, never, and every ACK the UE sent reaches the core.
    trace = tmp_path / "step.csv"
    trace.write_text("time_s,rate_mbps\n0,20\n4,2\n60,2\n")
    cell_data["ues"][0].update(trace={"file": str(trace)}, queue_limit_bytes=150_000)

    def download(regulated: bool, attempt: int = 0) -> tuple[list, int, int, float]:
        ue = dict(cell_data["ues"][0], ack_regulator={} if regulated else None)
        prefix = cell_data["namespace_prefix"][:6] + ("r" if regulated else "p") + str(attempt)  # 8 characters
        config = parse_cell(dict(cell_data, namespace_prefix=prefix, ues=[ue]), "test")
        reports: list = []
        folder = tmp_path / prefix
        folder.mkdir()

        async def scenario() -> tuple[int, int, float]:
            cell = VirtualCell(config, folder, NullRecorder())
            async with cell:
                original = cell._record
                cell._record = lambda report, message: (reports.append(report), original(report, message))  # type: ignore[method-assign]
                for namespace in (cell.names.ue(0), cell.names.server):
                    subprocess.run(
                        ["ip", "netns", "exec", namespace, "sysctl", "-qw", "net.ipv4.tcp_ecn=1"], check=True
                    )
                client = await iperf_download(cell, 8)
                assert await client.wait() == 0, (await client.stderr.read()).decode()
                # the connections' last packets: up to a round trip and a hold later; 2 s covers both many times
                for _ in range(20):
                    await asyncio.sleep(0.1)
                    sent = interface_counter(cell.names.ue(0), UE_IFNAME, "tx_packets")
                    received = interface_counter(cell.names.core, SGI_IFNAME, "rx_packets")
                    if sent == received:
                        break
            assert isinstance(cell.summary, dict)
            return sent, received, cell.summary["tti_lateness_ns"]["max"] / 1e6

        return reports, *asyncio.run(scenario())

    plain, *_ = download(regulated=False)
    assert sum(r.dropped_sdus for r in plain) > 0, "the scenario does not overflow the queue: it tests nothing"
    # A cell that fell behind its TTI clock measured the host: its vCPU stood still (an idle vCPU's wake-up, or
    # another guest), and then it ran the TTIs it owed at once, serving 40-65 kB in 5 ms at 20 Mbit/s. The UE's ACKs
    # for that burst meet a queue the burst emptied. The queue overflowed in 3 of 9 runs whose cell stood still
    # for 10-40 ms, and in none of 25 runs without such stalls (experiments/results/baselines.md). A regulated run
    # whose cell was over 5 ms late is run again, up to 5 runs in all; a cell late every time is judged on its
    # least late run.
    late_ms, attempts = 5.0, 5
    runs = []
    for attempt in range(attempts):
        runs.append(download(regulated=True, attempt=attempt))
        if runs[-1][3] <= late_ms:
            break
    regulated, sent, received, _ = min(runs, key=lambda run: run[3])
    drops = sum(r.dropped_sdus for r in regulated)
    longest = max(r.queue_new_bytes + r.queue_retx_bytes for r in regulated)
    assert drops == 0 and longest < 150_000, f"{drops} RLC drops, queue up to {longest} B"
    assert sent == received, f"the UE sent {sent} packets, {received} reached the core"
    # the link's use from the transfer's first delivered byte to its last: iperf3 starts some 0.2 s after the cell,
    # later on a loaded host (a whole run counted 0.82 in one CI run), and the wait above follows its end. Slow
    # start from 10 segments fills the 100 kB in flight in 3-4 round trips, about 250 kB short of 11.4 MB (2 %)
    serving = [i for i, report in enumerate(regulated) if report.delivered_bytes > 0]
    transfer = regulated[serving[0] : serving[-1] + 1]
    delivered, capacity = (sum(getattr(r, key) for r in transfer) for key in ("delivered_bytes", "capacity_bytes"))
    assert delivered >= 0.9 * capacity, f"delivered {delivered} of {capacity} B: the regulator starves the link"
    assert sum(r.ece_marked_acks for r in regulated) > 0, "the sender's window was not bounded by ECE"
