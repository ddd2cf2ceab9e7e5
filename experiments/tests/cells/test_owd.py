"""The one-way delay matcher held against captures with known delays: hand-made IPv4 packets in hand-written pcap
files, stamped as the kernel would stamp them at the SGi device and at two UEs' TUNs, with reordering, an IP ID
wrap, a duplicate, a packet lost in the cell, a lost packet whose identical twin leaves 11 s later, an arrival the
SGi capture missed and a frame that is not IPv4. Every expected delay is written out by hand below."""

import math
import struct

import numpy as np
from rnf_experiments import analysis
from rnf_experiments.cells import owd
from rnf_experiments.cells.capture import SNAPLEN, CaptureStats

T0 = 1_764_064_800 * 10**9  # ns, an arbitrary wall-clock instant
MS = 1_000_000
SERVER = bytes([10, 20, 0, 2])
TCP_DATA = bytes(range(256)) * 5 + bytes(120)  # 1400 bytes: every packet of a flow starts its data the same way


def ue_address(ue):  # 1-based, as srsepc numbers them
    return bytes([172, 16, 0, ue + 1])


def ipv4(ue, ident, protocol, payload):
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, 0x4000, 63, protocol, 0,
                         SERVER, ue_address(ue))  # fmt: skip
    return header + payload


def tcp(ue, ident, seq):
    segment = struct.pack("!HHIIBBHHH", 5201, 40000, seq, 1, 5 << 4, 0x10, 65535, 0, 0) + TCP_DATA
    return ipv4(ue, ident, 6, segment)


def udp(ue, ident, payload):
    return ipv4(ue, ident, 17, struct.pack("!HHHH", 9000, 9000, 8 + len(payload), 0) + payload)


def write_pcap(path, stamped):
    """A nanosecond pcap of raw IP, cut at tcpdump's snap length, the records in the order given."""
    content = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, SNAPLEN, 101)
    for time_ns, packet in stamped:
        captured = packet[:SNAPLEN]
        seconds, fraction = divmod(time_ns, 10**9)
        content += struct.pack("<IIII", seconds, fraction, len(captured), len(packet)) + captured
    path.write_bytes(content)


def at(ms):
    return T0 + round(ms * MS)


# The packets (a to h, the probe, the missed one), and when each left the SGi device and reached a UE, in ms after T0.
A = tcp(1, 65534, 1)
B = tcp(1, 65535, 1401)
C = tcp(1, 0, 2801)  # the IP ID wrapped
D = tcp(2, 65535, 1401)  # to UE 2, whose client has the same port: b's IP ID and payload
E = tcp(1, 1, 4201)  # lost in the cell
F = tcp(1, 2, 5601)
G = tcp(1, 3, 7001)  # sent twice, byte for byte (a retransmission that kept its IP ID), delivered twice
H = tcp(1, 65534, 1 + 65536 * 1400)  # a's IP ID again, one wrap later: only the payload tells them apart
PROBE = udp(2, 7, b"probe" * 20)  # lost; 11 s later an identical packet leaves (the same ID after wraps, same payload)
MISSED = udp(2, 99, b"missed" * 10)  # reaches UE 2, but the SGi capture missed it
IPV6 = bytes([0x60]) + bytes(39)

SGI = [(at(0), A), (at(1), B), (at(2), C), (at(2.5), D), (at(3), E), (at(4), F), (at(5), G), (at(8), H),
       (at(20), G), (at(30), PROBE), (at(11_030), PROBE)]  # fmt: skip
UE1 = [(at(12), H), (at(13), A), (at(14), F), (at(14.5), B), (at(17), C), (at(21), G), (at(30), G), (at(40), IPV6)]
UE2 = [(at(9), D), (at(50), MISSED), (at(11_042), PROBE)]

# (ue, 0-based; length; left SGi ms; reached the UE ms), in order of arrival
EXPECTED = [
    (1, 1440, 2.5, 9),  # d: 6.5 ms, before any of UE 1's, and not 8 ms from b, the same but to UE 1
    (0, 1440, 8, 12),  # h: 4 ms, and not 12 ms from a, which has the same IP ID and still waits
    (0, 1440, 0, 13),  # a: 13 ms
    (0, 1440, 4, 14),  # f: 10 ms, before b and c that left earlier
    (0, 1440, 1, 14.5),  # b: 13.5 ms
    (0, 1440, 2, 17),  # c: 15 ms, IP ID 0 after 65535
    (0, 1440, 5, 21),  # g's first copy: 16 ms, the first departure of its bytes
    (0, 1440, 20, 30),  # g's second copy: 10 ms
    (1, 128, 11_030, 11_042),  # the probe's twin: 12 ms, not 11012 ms from the lost probe, given up after 10 s
]
DELAYS_MS = [6.5, 4, 13, 10, 13.5, 15, 16, 10, 12]


def captured(tmp_path):
    write_pcap(tmp_path / "sgi.pcap", SGI)
    write_pcap(tmp_path / "ue1.pcap", UE1)
    write_pcap(tmp_path / "ue2.pcap", UE2)
    return tmp_path / "sgi.pcap", [tmp_path / "ue1.pcap", tmp_path / "ue2.pcap"]


def test_each_delivered_packet_is_matched_to_its_own_departure(tmp_path):
    sgi, ues = captured(tmp_path)
    owd.measure(sgi, ues, tmp_path / "packets.bin")
    records = np.fromfile(tmp_path / "packets.bin", analysis.PACKET_RECORD)
    found = [(int(r["ue"]), int(r["length"]), int(r["arrival_ns"]), int(r["delivery_ns"])) for r in records]
    assert found == [(ue, length, at(left), at(reached)) for ue, length, left, reached in EXPECTED]
    assert ((records["delivery_ns"] - records["arrival_ns"]) / MS).tolist() == DELAYS_MS
    assert records["flags"].tolist() == [0] * len(EXPECTED)


def test_what_was_not_matched_is_counted(tmp_path):
    sgi, ues = captured(tmp_path)
    stats = {"sgi": CaptureStats(11, 11, 0), "ue1": CaptureStats(8, 8, 0), "ue2": CaptureStats(3, 3, 0)}
    counts = owd.measure(sgi, ues, tmp_path / "packets.bin", stats)
    assert counts["departures"] == 11
    assert counts["arrivals"] == 10  # the IPv6 frame is no arrival
    assert counts["matched"] == 9
    assert counts["unmatched_departures"] == 2  # e, lost in the cell; the probe, given up
    assert counts["unmatched_arrivals"] == 1  # the missed one
    assert counts["repeated_departures"] == 2  # g's second copy while the first waited; the probe's twin likewise
    assert counts["captures"]["ue1"]["not_ipv4"] == 1
    assert counts["lost"] == 0


def test_the_analysis_reads_the_delays_as_a_virtual_cells(tmp_path):
    sgi, ues = captured(tmp_path)
    owd.measure(sgi, ues, tmp_path / "packets.bin")
    flow = {"flow": "f", "kind": "bulk", "ue": 1, "start_ns": T0, "last_byte_ns": at(12_000), "received_bytes": 1,
            "requested_bytes": 0, "complete": True, "error": "", "progress": [[at(12_000), 1]]}  # fmt: skip
    run = analysis.ArmRun(
        description={"arm": "cubic", "repetition": 0, "sweep": None},
        directory=tmp_path,
        ues={},
        controllers={},
        flows=[flow],
        packets=np.fromfile(tmp_path / "packets.bin", analysis.PACKET_RECORD),
        netstat={},
        cell_summary={"delay": {"lost": 0}},
    )
    summary = analysis.summarize(run)
    # sorted: 4, 6.5, 10, 10, 12, 13, 13.5, 15, 16; p95 interpolates between the 8th and 9th (numpy's default)
    assert summary["delay_p50_ms"] == 12
    assert math.isclose(summary["delay_p95_ms"], 15 + 0.6 * (16 - 15))
    assert summary["delay_sdus"] == 9
    assert summary["delay_records_lost"] == 0


def test_packets_the_captures_did_not_write_are_lost_and_unknown_counts_say_so(tmp_path):
    sgi, ues = captured(tmp_path)
    # the SGi capture's ring overflowed twice and 1 packet was still in it at the stop; UE 2's tcpdump was killed
    stats = {"sgi": CaptureStats(captured=11, received=14, dropped=2), "ue1": CaptureStats(8, 8, 0), "ue2": None}
    counts = owd.measure(sgi, ues, tmp_path / "packets.bin", stats)
    assert (counts["captures"]["sgi"]["dropped"], counts["captures"]["sgi"]["unread"]) == (2, 1)
    assert counts["captures"]["sgi"]["lost"] == 3
    assert counts["captures"]["ue2"]["lost"] is None
    assert counts["lost"] is None
    stats["ue2"] = CaptureStats(3, 3, 0)
    assert owd.measure(sgi, ues, tmp_path / "packets.bin", stats)["lost"] == 3


def test_a_record_cut_off_at_the_end_of_a_capture_counts_as_lost(tmp_path):
    sgi, ues = captured(tmp_path)
    content = ues[1].read_bytes()
    ues[1].write_bytes(content[:-50])  # the probe's twin cut in the middle: tcpdump counted it, the file lacks it
    stats = {"sgi": CaptureStats(11, 11, 0), "ue1": CaptureStats(8, 8, 0), "ue2": CaptureStats(3, 3, 0)}
    counts = owd.measure(sgi, ues, tmp_path / "packets.bin", stats)
    assert counts["captures"]["ue2"]["truncated"] is True
    assert counts["lost"] == 1
    assert counts["matched"] == 8


# The uplink: ACKs leaving two UEs' TUNs, reaching the core's SGi device. UE 2's ACK has UE 1's IP ID and ports (the
# same bytes but for its source address) and must not match UE 1's departure; one of UE 1's ACKs is lost.
def ack(ue, ident, ack_number):
    segment = struct.pack("!HHIIBBHHH", 40000, 5201, 1, ack_number, 5 << 4, 0x10, 65535, 0, 0)
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(segment), ident, 0x4000, 64, 6, 0,
                         ue_address(ue), SERVER)  # fmt: skip
    return header + segment


ACK1, ACK2, ACK3, LOST = ack(1, 10, 1401), ack(1, 11, 2801), ack(2, 10, 1401), ack(1, 12, 4201)
UE1_UP = [(at(0), ACK1), (at(3), ACK2), (at(4), LOST)]
UE2_UP = [(at(1), ACK3)]
SGI_UP = [(at(10.5), ACK3), (at(11), ACK1), (at(11), ACK2)]  # one bunch at the grant
# (ue, left the UE, reached the core): UE 1's ACKs in arrival order, then UE 2's
UPLINK = [(0, 0, 11), (0, 3, 11), (1, 1, 10.5)]


def test_each_uplink_packet_is_matched_to_its_own_ues_departure(tmp_path):
    write_pcap(tmp_path / "sgi-up.pcap", SGI_UP)
    write_pcap(tmp_path / "ue1-up.pcap", UE1_UP)
    write_pcap(tmp_path / "ue2-up.pcap", UE2_UP)
    counts = owd.measure_uplink(
        [tmp_path / "ue1-up.pcap", tmp_path / "ue2-up.pcap"], tmp_path / "sgi-up.pcap", tmp_path / "up.bin"
    )
    records = np.fromfile(tmp_path / "up.bin", analysis.PACKET_RECORD)
    found = [(int(r["ue"]), int(r["arrival_ns"]), int(r["delivery_ns"])) for r in records]
    assert found == [(ue, at(left), at(reached)) for ue, left, reached in UPLINK]
    assert (counts["departures"], counts["arrivals"], counts["matched"]) == (4, 3, 3)
    assert (counts["unmatched_departures"], counts["unmatched_arrivals"]) == (1, 0)
    # delays 11, 8 and 9.5 ms: numpy's linear quantiles, 0.1 % = 8 + 0.002 x 1.5, 95 % = 9.5 + 0.9 x 1.5
    assert counts["delay"] == {"p0.1_ms": 8.003, "p50_ms": 9.5, "p95_ms": 10.85}
