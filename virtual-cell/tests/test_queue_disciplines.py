"""The queue disciplines end to end: a real Linux TCP download (iperf3, CUBIC) through the virtual cell over each
discipline, with ECN negotiated where it marks.

What is checked against what, each measured apart: the packets the server sent toward the UE and the ECE its kernel
receives on the UE's ACKs (a capture on its interface, whose offloads are off: one packet per capture record), the CE
marks the UE's kernel receives (a capture on its TUN) and the packets it counts, against the packet log's records
(packets.bin, INTERFACE.md "Packet log") and the telemetry's counters (contract 1.1, over ZeroMQ).
"""

import asyncio
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from rnf_cell.cell import VirtualCell
from rnf_cell.config import parse_cell
from rnf_cell.topology import SERVER_IFNAME, SERVER_IP, UE_IFNAME
from rnf_telemetry.message import TelemetryMessage
from rnf_telemetry.record import NullRecorder
from rnf_telemetry.transport import Subscriber

pytestmark = pytest.mark.root

UE_IP = "172.16.0.2"
# packets.bin as INTERFACE.md lays it out, read here without the project's readers
RECORD = np.dtype([("ue", "<u2"), ("length", "<u2"), ("flags", "u1"), ("reserved", "V3"), ("arrival_ns", "<u8"),
                   ("delivery_ns", "<u8")])  # fmt: skip
CE_MARKED, AQM_DROPPED = 0x01, 0x02
# tcpdump filters: IPv4 ECN field CE (both bits); TCP ECE set on a segment that is not a SYN (a SYN's ECE and CWR
# ask for ECN, they signal nothing)
CE_FILTER = "ip[1] & 3 == 3"
ECE_FILTER = f"src host {UE_IP} and tcp[13] & 0x42 == 0x40"


@dataclass
class Download:
    messages: list[TelemetryMessage]
    lost: int
    records: np.ndarray
    ce_at_ue: int  # CE-marked packets the UE's TUN received
    ece_at_server: int  # non-SYN segments from the UE with ECE the server's interface received
    ect_at_ue: int  # ECN-capable (ECT or CE) packets the UE's TUN received
    tun_rx_packets: int
    sent_to_ue: int  # packets toward the UE the server's interface sent: each enters the RLC queue

    def total(self, name: str) -> int:
        return sum(getattr(m, name) for m in self.messages)


async def _capture(namespace: str, device: str, path: Path) -> asyncio.subprocess.Process:
    process = await asyncio.create_subprocess_exec(
        "ip", "netns", "exec", namespace, "tcpdump", "-i", device, "-n", "-s", "96", "-U", "-w", str(path), "ip",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    line = await asyncio.wait_for(process.stderr.readline(), 10)  # "listening on ...": the capture runs
    assert b"listening on" in line, line
    return process


def _count(path: Path, expression: str) -> int:
    result = subprocess.run(["tcpdump", "-n", "-r", str(path), expression], capture_output=True, text=True, check=True)
    return len(result.stdout.splitlines())


def _sysctl(namespace: str, setting: str) -> None:
    subprocess.run(["ip", "netns", "exec", namespace, "sysctl", "-q", "-w", setting], check=True)


def download(cell_data: dict, tmp_path: Path, discipline: dict, ecn: bool, seconds: float = 6.0) -> Download:
    """A CUBIC download of `seconds` over one 8 Mbit/s UE with `discipline`; the queue drains before the end."""
    cell_data["ues"][0]["queue_discipline"] = discipline
    config = parse_cell(cell_data, "test")

    async def scenario() -> Download:
        cell = VirtualCell(config, tmp_path, NullRecorder())
        async with cell:
            ue, server = cell.names.ue(0), cell.names.server
            for namespace in (ue, server):
                _sysctl(namespace, f"net.ipv4.tcp_ecn={int(ecn)}")
            subscriber = Subscriber(config.telemetry.endpoint)
            messages: list[TelemetryMessage] = []

            async def collect() -> None:
                async for message in subscriber:
                    messages.append(message)

            collector = asyncio.create_task(collect())
            captures = [
                await _capture(ue, UE_IFNAME, tmp_path / "ue.pcap"),
                await _capture(server, SERVER_IFNAME, tmp_path / "server.pcap"),
            ]
            await asyncio.sleep(0.5)  # subscribed before any traffic
            rx_before = _interface_counter(ue, UE_IFNAME, "rx_packets")
            iperf_server = await asyncio.create_subprocess_exec(
                "ip", "netns", "exec", server, "iperf3", "-s", "-1", stdout=asyncio.subprocess.DEVNULL
            )
            await asyncio.sleep(0.3)
            client = await asyncio.create_subprocess_exec(
                "ip", "netns", "exec", ue, "iperf3", "-c", str(SERVER_IP), "-R", "-t", str(seconds), "-C", "cubic",
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            assert await client.wait() == 0, (await client.stderr.read()).decode()  # type: ignore[union-attr]
            await iperf_server.wait()
            await asyncio.sleep(1.5)  # the queue drains, the last periods are published
            rx_after = _interface_counter(ue, UE_IFNAME, "rx_packets")
            for capture in captures:
                capture.terminate()
                await capture.wait()
            collector.cancel()
            lost = subscriber.tracker.lost + sum(subscriber.tracker.errors.values())
            subscriber.close()
        records = np.fromfile(tmp_path / "packets.bin", RECORD)
        return Download(
            messages=messages,
            lost=lost,
            records=records,
            ce_at_ue=_count(tmp_path / "ue.pcap", CE_FILTER),
            ece_at_server=_count(tmp_path / "server.pcap", ECE_FILTER),
            ect_at_ue=_count(tmp_path / "ue.pcap", "ip[1] & 3 != 0"),
            tun_rx_packets=rx_after - rx_before,
            sent_to_ue=_count(tmp_path / "server.pcap", f"src host {SERVER_IP} and dst host {UE_IP}"),
        )

    return asyncio.run(scenario())


def _interface_counter(namespace: str, device: str, counter: str) -> int:
    path = f"/sys/class/net/{device}/statistics/{counter}"
    return int(subprocess.run(["ip", "netns", "exec", namespace, "cat", path], capture_output=True, check=True).stdout)


def check_log_against_telemetry(run: Download) -> None:
    """Every period published (no loss), the queue empty at the end, the telemetry's counters equal to the
    packet log's records (CE-marked SDUs, AQM-dropped SDUs and their bytes), and every packet the server sent
    toward the UE delivered, dropped by the discipline or dropped at the queue's tail."""
    assert run.lost == 0 and run.messages and run.messages[-1].queue_bytes == 0
    flags = run.records["flags"]
    dropped = run.records[(flags & AQM_DROPPED) != 0]
    assert run.total("dl_ce_marked_sdus") == int(np.count_nonzero(flags & CE_MARKED))
    assert run.total("dl_aqm_dropped_sdus") == dropped.size
    assert run.total("dl_aqm_dropped_bytes") == int(dropped["length"].sum())
    assert not np.any((flags & CE_MARKED) & (flags & AQM_DROPPED))
    assert not np.any(flags & ~np.uint8(CE_MARKED | AQM_DROPPED))
    # each delivered record is a packet the UE's kernel received (its own count)
    delivered = np.count_nonzero((flags & AQM_DROPPED) == 0)
    assert delivered == run.tun_rx_packets
    # the tail's drops are not in the log: what the server sent and the log does not hold, the telemetry counted
    assert run.sent_to_ue == delivered + dropped.size + run.total("dl_dropped_sdus")


@pytest.mark.parametrize(
    "discipline",
    [{"kind": "codel", "target_ms": 5, "interval_ms": 100}, {"kind": "mark", "threshold_ms": 15}],
    ids=["codel", "mark"],
)
def test_ce_marks_reach_the_receiver_and_the_sender_sees_ece(cell_data, tmp_path, discipline):
    run = download(cell_data, tmp_path, discipline, ecn=True)
    check_log_against_telemetry(run)
    marked = run.total("dl_ce_marked_sdus")
    assert marked > 0, "nothing was marked: the queue never stood above the discipline's target"
    # what the UE's kernel received marked CE is what the cell says it marked
    assert run.ce_at_ue == marked
    assert run.ect_at_ue > 10 * marked, "the data were not ECN-capable: ECN was not negotiated"
    # the receiver echoes each CE until the sender's CWR: at least one ECE reaches the sender per mark train
    assert run.ece_at_server > 0
    assert run.total("ul_ece_marked_acks") == 0  # the cell set no ECE itself
    if discipline["kind"] == "mark":
        assert run.total("dl_aqm_dropped_sdus") == 0  # mark never drops


def test_codel_without_ecn_drops_and_the_log_shows_every_drop(cell_data, tmp_path):
    run = download(cell_data, tmp_path, {"kind": "codel", "target_ms": 5, "interval_ms": 100}, ecn=False)
    check_log_against_telemetry(run)
    assert run.total("dl_aqm_dropped_sdus") > 0
    assert run.total("dl_ce_marked_sdus") == run.ce_at_ue == run.ect_at_ue == 0
    assert run.ece_at_server == 0
    # the dropped SDUs are whole IPv4 packets (a TCP header of 40 bytes at least, the 1500-byte MTU at most),
    # recorded with their arrival and drop times in order; CoDel drops at the head whatever stands there, so an
    # iperf3 control message (53 bytes, seen) may be among them, but the download's full-size segments make the
    # standing queue and most of the drops
    dropped = run.records[(run.records["flags"] & AQM_DROPPED) != 0]
    assert np.all((dropped["length"] >= 40) & (dropped["length"] <= 1500))
    assert np.count_nonzero(dropped["length"] == 1500) > dropped.size / 2
    assert np.all(dropped["delivery_ns"] >= dropped["arrival_ns"])


def test_mark_with_ack_ece_signals_on_the_acks_and_leaves_the_data_alone(cell_data, tmp_path):
    run = download(cell_data, tmp_path, {"kind": "mark", "threshold_ms": 15, "ack_ece": True}, ecn=True)
    check_log_against_telemetry(run)
    assert run.total("dl_ce_marked_sdus") == run.ce_at_ue == 0
    assert run.ect_at_ue > 1000
    # no CE reaches the receiver, so it never echoes: every ECE the sender sees is one the cell set
    signalled = run.total("ul_ece_marked_acks")
    assert signalled > 0
    assert run.ece_at_server == signalled


def test_tail_drop_marks_nothing_and_every_packet_it_loses_is_a_counted_tail_drop(cell_data, tmp_path):
    # 60 kB of queue over a 40 ms round trip at 8 Mbit/s (40 kB in flight): CUBIC's window outgrows the two
    cell_data["ues"][0]["queue_limit_bytes"] = 60_000
    run = download(cell_data, tmp_path, {"kind": "tail_drop"}, ecn=True)
    check_log_against_telemetry(run)
    assert run.total("dl_dropped_sdus") > 0, "the queue never overflowed: the tail's count was not tested"
    assert run.ect_at_ue > 1000  # ECN negotiated, and nothing marks
    assert run.total("dl_ce_marked_sdus") == run.ce_at_ue == 0
    assert run.total("dl_aqm_dropped_sdus") == 0
    assert run.total("ul_ece_marked_acks") == run.ece_at_server == 0


def test_the_ack_regulators_ece_is_what_the_sender_sees(cell_data, tmp_path):
    # the same overfull path: the regulator holds the ACKs, and an ACK held its longest leaves with ECE
    cell_data["ues"][0].update(queue_limit_bytes=60_000, ack_regulator={})
    run = download(cell_data, tmp_path, {"kind": "tail_drop"}, ecn=True)
    check_log_against_telemetry(run)
    assert run.total("dl_ce_marked_sdus") == run.ce_at_ue == 0  # no CE: the receiver has nothing to echo
    signalled = run.total("ul_ece_marked_acks")
    assert signalled > 0, "no ACK was held its longest: the regulator never signalled"
    assert run.ece_at_server == signalled
    assert run.total("dl_dropped_sdus") == 0
