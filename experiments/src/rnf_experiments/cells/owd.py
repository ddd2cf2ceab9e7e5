"""One-way delay through a srsRAN cell, per packet: downlink IPv4 packets captured leaving the core through its SGi
device (`srs_spgw_sgi`, outbound) and arriving at each UE's TUN (`tun_srsue`, inbound), both stamped by this
machine's kernel clock (`capture.py`), matched packet by packet, and written as the virtual cell's packet log
(`packets.bin`, virtual-cell/datapath/INTERFACE.md): the analysis's `delay_p50_ms` and `delay_p95_ms` and the plots
read a srsRAN run as they read a virtual-cell run.

Matching (`match`, pure). A packet's key is its addresses, protocol, IP ID, fragment field, total length and a hash
of the first HASH_BYTES of its payload (for TCP: ports, sequence and acknowledgement numbers, options and the start
of the data). The IP ID alone is not enough: it wraps after 65536 packets of a flow, and packets of different flows
share values; the hash tells such packets apart. Events are taken in time order, departures before arrivals at the
same nanosecond. A departure waits under its key. An arrival takes the earliest departure waiting under its key,
after giving up as lost every departure there older than MAX_DELAY_NS, so that a packet lost in the cell is never
matched to a later identical one. A duplicate (the same bytes leaving twice, a retransmission that kept its IP ID)
therefore matches the first unmatched departure: first in, first out, as the RLC delivers; if the first copy was lost
in the cell, the second copy's delay is counted from the first one's departure. Each departure and each arrival is
used at most once: an arrival with no departure waiting (the SGi capture missed it, or the cell delivered a packet
twice) is counted, not recorded.

The uplink likewise (`measure_uplink`): each UE's packets leaving its TUN (outbound) matched to the packets the core
receives on its SGi device (inbound) from that UE's address, written to `uplink-packets.bin` in the same records
(`arrival_ns` the departure from the UE's TUN, `delivery_ns` the arrival at the SGi device). Through srsue the uplink
is mostly TCP's ACKs, which wait for a scheduling-request occasion and a grant: the delays that `rnf calibrate`
fits the virtual cell's uplink to (`calibrate.py`).
"""

from __future__ import annotations

import hashlib
import ipaddress
import struct
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rnf_foundation.addresses import UE_POOL, UE_POOL_GATEWAY

from rnf_experiments.cells.capture import Capture, CaptureStats, Frame, read_pcap
from rnf_experiments.cells.stack import SGI_IFNAME, UE_IFNAME, ue_ip

HASH_BYTES = 64  # of the IP payload; capture.SNAPLEN keeps at least this much behind a 60-byte header
MAX_DELAY_NS = 10_000_000_000  # far above any queue the RLC holds (256 SDUs), even on a stack at 0.3 x real time
# virtual-cell/datapath/INTERFACE.md, "Packet log": ue (0-based), length, flags, arrival_ns, delivery_ns; the
# captures see no queue discipline's marks or drops, so their flags are 0
PACKET_RECORD = np.dtype(
    [("ue", "<u2"), ("length", "<u2"), ("flags", "<u4"), ("arrival_ns", "<u8"), ("delivery_ns", "<u8")]
)
IPV4_HEADER = struct.Struct("!BBHHHBBH4s4s")
DEPARTURE, ARRIVAL = 0, 1  # in this order at the same nanosecond


@dataclass(frozen=True)
class Packet:
    """An IPv4 packet seen by a capture: when, its key (see the module's docstring) and its total length."""

    time_ns: int
    key: tuple[bytes, bytes, int, int, int, int, bytes]
    length: int


def ipv4_packet(frame: Frame) -> Packet | None:
    """The packet a raw-IP frame holds; None when it is no complete IPv4 header."""
    if len(frame.data) < IPV4_HEADER.size:
        return None
    version_ihl, _, total, ident, fragment, _, protocol, _, source, destination = IPV4_HEADER.unpack_from(frame.data)
    header = (version_ihl & 0x0F) * 4
    if version_ihl >> 4 != 4 or header < IPV4_HEADER.size or len(frame.data) < header:
        return None
    payload = frame.data[header:total][:HASH_BYTES]
    digest = hashlib.blake2b(payload, digest_size=8).digest()
    return Packet(frame.time_ns, (source, destination, protocol, ident, fragment, total, digest), total)


@dataclass(frozen=True)
class Delivery:
    """A packet that left the SGi device at `departure_ns` and reached UE `ue`'s TUN (0-based) at `arrival_ns`."""

    ue: int
    length: int
    departure_ns: int
    arrival_ns: int


@dataclass(frozen=True)
class Matching:
    """The deliveries, in order of arrival, and what could not be matched.

    `unmatched_departures` never reached a UE's capture: lost in the cell, still in it when the captures stopped, or
    missed by the UE's capture; `unmatched_arrivals` had no departure waiting: missed by the SGi capture, or
    delivered twice; `repeated_departures` left while an identical packet still waited (duplicates)."""

    deliveries: list[Delivery]
    departures: int
    arrivals: int
    unmatched_departures: int
    unmatched_arrivals: int
    repeated_departures: int


def match(
    departures: Iterable[Packet], arrivals: Mapping[int, Iterable[Packet]], max_delay_ns: int = MAX_DELAY_NS
) -> Matching:
    """Departures at the SGi device matched to arrivals at each UE (by 0-based UE index), as the module says."""
    events: list[tuple[int, int, int, Packet]] = [(p.time_ns, DEPARTURE, -1, p) for p in departures]
    events += [(p.time_ns, ARRIVAL, ue, p) for ue, packets in arrivals.items() for p in packets]
    events.sort(key=lambda event: (event[0], event[1]))
    waiting: dict[tuple[bytes, bytes, int, int, int, int, bytes], deque[Packet]] = {}
    deliveries: list[Delivery] = []
    given_up = repeated = unmatched_arrivals = 0
    for time_ns, kind, ue, packet in events:
        queue = waiting.setdefault(packet.key, deque())
        if kind == DEPARTURE:
            repeated += bool(queue)
            queue.append(packet)
            continue
        while queue and time_ns - queue[0].time_ns > max_delay_ns:
            queue.popleft()
            given_up += 1
        if not queue:
            unmatched_arrivals += 1
            continue
        departure = queue.popleft()
        deliveries.append(Delivery(ue, packet.length, departure.time_ns, time_ns))
    n_departures = sum(1 for event in events if event[1] == DEPARTURE)
    return Matching(
        deliveries=deliveries,
        departures=n_departures,
        arrivals=len(events) - n_departures,
        unmatched_departures=given_up + sum(len(queue) for queue in waiting.values()),
        unmatched_arrivals=unmatched_arrivals,
        repeated_departures=repeated,
    )


def write_packets(path: Path, deliveries: list[Delivery]) -> None:
    """packets.bin: one 24-byte record per delivery; arrival_ns is the departure from the SGi device, delivery_ns
    the arrival at the UE's TUN; lengths above 65535 saturate, as the virtual cell's do."""
    records = np.zeros(len(deliveries), PACKET_RECORD)
    records["ue"] = [d.ue for d in deliveries]
    records["length"] = [min(d.length, 0xFFFF) for d in deliveries]
    records["arrival_ns"] = [d.departure_ns for d in deliveries]
    records["delivery_ns"] = [d.arrival_ns for d in deliveries]
    records.tofile(path)


def _packets(path: Path) -> tuple[list[Packet], dict[str, Any]]:
    """The IPv4 packets of a capture file, and what reading it found (frames, frames that are not IPv4, a cut-off
    last record)."""
    pcap = read_pcap(path)
    packets = [p for p in map(ipv4_packet, pcap.frames) if p is not None]
    read = {"frames": len(pcap.frames), "not_ipv4": len(pcap.frames) - len(packets), "truncated": pcap.truncated}
    return packets, read


def _uplink_quantiles(deliveries: list[Delivery]) -> dict[str, float] | None:
    """The uplink delays' 0.1 % quantile, median and 95th percentile in ms; None without any."""
    if not deliveries:
        return None
    delays_ms = np.array([d.arrival_ns - d.departure_ns for d in deliveries]) / 1e6
    low, median, high = np.percentile(delays_ms, [0.1, 50, 95])
    return {"p0.1_ms": round(float(low), 3), "p50_ms": round(float(median), 3), "p95_ms": round(float(high), 3)}


def _capture_counts(stats: CaptureStats | None, read: dict[str, Any]) -> dict[str, Any]:
    """One capture's counts; `lost` is None when tcpdump's own counts are unknown (it was killed)."""
    if stats is None:
        return read | {"captured": None, "received": None, "dropped": None, "unread": None, "lost": None}
    # frames tcpdump counted as captured that the file does not hold (a cut-off last record)
    unwritten = max(stats.captured - read["frames"], 0)
    counts = {"captured": stats.captured, "received": stats.received, "dropped": stats.dropped}
    return read | counts | {"unread": stats.unread, "lost": stats.lost + unwritten}


def _result(matching: Matching, captures: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A matching's counts and its captures' for the cell's summary; `lost` sums what the captures saw pass and did
    not record (None when some capture's counts are unknown)."""
    lost = [c["lost"] for c in captures.values()]
    return {
        "matched": len(matching.deliveries),
        "departures": matching.departures,
        "arrivals": matching.arrivals,
        "unmatched_departures": matching.unmatched_departures,
        "unmatched_arrivals": matching.unmatched_arrivals,
        "repeated_departures": matching.repeated_departures,
        "lost": None if None in lost else sum(lost),
        "captures": captures,
    }


def measure(
    sgi: Path, ues: list[Path], packets_path: Path, stats: dict[str, CaptureStats | None] | None = None
) -> dict[str, Any]:
    """Matches the SGi capture `sgi` against the UE captures `ues` (UE n+1 at index n), writes packets.bin at
    `packets_path` and returns the counts for the cell's summary: the matching's, each capture's (`captures`, with
    tcpdump's counts when `stats` gives them, by the names `sgi`, `ue1`, ...), and `lost`, the packets the captures
    saw pass and did not record, summed (None when some capture's counts are unknown)."""
    stats = stats or {}
    departures, sgi_read = _packets(sgi)
    captures = {"sgi": _capture_counts(stats.get("sgi"), sgi_read)}
    arrivals = {}
    for index, path in enumerate(ues):
        arrivals[index], ue_read = _packets(path)
        captures[f"ue{index + 1}"] = _capture_counts(stats.get(f"ue{index + 1}"), ue_read)
    matching = match(departures, arrivals)
    write_packets(packets_path, matching.deliveries)
    return _result(matching, captures)


def measure_uplink(
    ues: list[Path], sgi: Path, packets_path: Path, stats: dict[str, CaptureStats | None] | None = None
) -> dict[str, Any]:
    """Matches each UE's uplink capture in `ues` (UE n+1 at index n) against the core's, `sgi`, writes their
    deliveries (by UE, then by arrival) at `packets_path` and returns `measure`'s counts, the captures named
    `sgi`, `ue1`, ..., with the delays' quantiles (`delay`, None without any delivery)."""
    stats = stats or {}
    arrivals, sgi_read = _packets(sgi)
    captures = {"sgi": _capture_counts(stats.get("sgi"), sgi_read)}
    per_ue = []
    for index, path in enumerate(ues):
        departures, ue_read = _packets(path)
        captures[f"ue{index + 1}"] = _capture_counts(stats.get(f"ue{index + 1}"), ue_read)
        source = ipaddress.IPv4Address(ue_ip(index)).packed
        per_ue.append(match(departures, {index: [p for p in arrivals if p.key[0] == source]}))
    matching = Matching(
        deliveries=[d for m in per_ue for d in m.deliveries],
        departures=sum(m.departures for m in per_ue),
        # arrivals from no UE's address (none is expected: the filter takes the pool) are unmatched as well
        arrivals=len(arrivals),
        unmatched_departures=sum(m.unmatched_departures for m in per_ue),
        unmatched_arrivals=len(arrivals) - sum(len(m.deliveries) for m in per_ue),
        repeated_departures=sum(m.repeated_departures for m in per_ue),
    )
    write_packets(packets_path, matching.deliveries)
    return _result(matching, captures) | {"delay": _uplink_quantiles(matching.deliveries)}


class DelayCapture:
    """The captures of one srsRAN cell: downlink packets leaving `core_ns`'s SGi device and arriving at each UE's
    TUN (one namespace per UE), as `capture-sgi.pcap`, `capture-ue<n>.pcap` (with their tcpdump logs) in `workdir`,
    and the uplink's the other way, as `capture-sgi-up.pcap`, `capture-ue<n>-up.pcap`; `finish()` stops them and
    writes `packets.bin` and `uplink-packets.bin`."""

    def __init__(self, workdir: Path, core_ns: str, ue_namespaces: tuple[str, ...]) -> None:
        self.workdir = workdir
        # each direction by its addresses (capture.Capture): to (from) a UE of the pool, not the SGi address itself
        downlink = f"ip dst net {UE_POOL} and not ip dst host {UE_POOL_GATEWAY}"
        uplink = f"ip src net {UE_POOL} and not ip src host {UE_POOL_GATEWAY}"
        self.downlink = {"sgi": Capture(core_ns, SGI_IFNAME, "out", downlink, *self._files("sgi"))} | {
            f"ue{i + 1}": Capture(namespace, UE_IFNAME, "in", f"ip dst host {ue_ip(i)}", *self._files(f"ue{i + 1}"))
            for i, namespace in enumerate(ue_namespaces)
        }
        self.uplink = {"sgi": Capture(core_ns, SGI_IFNAME, "in", uplink, *self._files("sgi-up"))} | {
            f"ue{i + 1}": Capture(namespace, UE_IFNAME, "out", f"ip src host {ue_ip(i)}", *self._files(f"ue{i + 1}-up"))
            for i, namespace in enumerate(ue_namespaces)
        }

    def _files(self, name: str) -> tuple[Path, Path]:
        return self.workdir / f"capture-{name}.pcap", self.workdir / f"capture-{name}.log"

    def _all(self) -> list[Capture]:
        return [*self.downlink.values(), *self.uplink.values()]

    def start(self) -> None:
        """Every capture running, or none (CaptureError)."""
        try:
            for capture in self._all():
                capture.start()
        except BaseException:
            for capture in self._all():
                capture.stop()
            raise

    def finish(self) -> dict[str, Any]:
        """Stops the captures, writes packets.bin and uplink-packets.bin and returns `measure`'s counts, with
        `measure_uplink`'s as `uplink`."""
        down = {name: capture.stop() for name, capture in self.downlink.items()}
        up = {name: capture.stop() for name, capture in self.uplink.items()}
        ues = [capture.path for name, capture in self.downlink.items() if name != "sgi"]
        counts = measure(self.downlink["sgi"].path, ues, self.workdir / "packets.bin", down)
        ues_up = [capture.path for name, capture in self.uplink.items() if name != "sgi"]
        uplink = measure_uplink(ues_up, self.uplink["sgi"].path, self.workdir / "uplink-packets.bin", up)
        return counts | {"uplink": uplink}
