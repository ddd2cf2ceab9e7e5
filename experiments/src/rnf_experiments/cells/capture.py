"""Packet captures for the one-way delay through a srsRAN cell: tcpdump on one device inside a network namespace,
its statistics (what the kernel dropped, what was never read), and the pcap files it writes, read back.

tcpdump (Debian's, in `make setup`'s packages) and not a Python capture loop: it runs as a process of its own, so
the proxy and the recorder in the runner's process lose no time to it; libpcap's memory-mapped ring takes the
kernel's timestamps (`CLOCK_REALTIME`, nanoseconds) and counts the packets the ring had no room for. The pcap
format is simple enough to read with `struct`, so no capture library joins the dependencies (docs/architecture.md).
"""

from __future__ import annotations

import re
import shutil
import signal
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rnf_foundation.errors import UserError

# An IPv4 header (60 bytes at most) and the first 64 bytes of its payload: a TCP header with options and the start
# of the data, what the matcher hashes (owd.HASH_BYTES); libpcap keeps a few bytes less than it is asked for (124 of
# 128 on a TUN device), hence the margin. Small records keep the files of a long run small.
SNAPLEN = 144
BUFFER_KIB = 8192  # the kernel ring: some 30000 packets of SNAPLEN, seconds of a CPU-starved tcpdump
READY_S = 10.0
STOP_S = 10.0

PCAP_MAGIC = {  # magic number as read little-endian -> (byte order, nanosecond stamps)
    0xA1B2C3D4: ("<", False),
    0xA1B23C4D: ("<", True),
    0xD4C3B2A1: (">", False),
    0x4D3CB2A1: (">", True),
}
LINKTYPE_RAW = 101  # raw IP: what tcpdump writes for a TUN device
LINKTYPE_IPV4 = 228
RECORD_HEADER = 16
FILE_HEADER = 24


class CaptureError(RuntimeError):
    """tcpdump did not start; the message quotes what it said."""


@dataclass(frozen=True)
class CaptureStats:
    """tcpdump's counts at its exit. `received` passed the filter, the kernel's drops included (libpcap's ps_recv on
    Linux); `dropped` found the ring full; `captured` were written to the file."""

    captured: int
    received: int
    dropped: int

    @property
    def unread(self) -> int:
        """Packets that reached the ring but were still in it when tcpdump stopped."""
        return max(self.received - self.dropped - self.captured, 0)

    @property
    def lost(self) -> int:
        """Packets the capture saw pass and did not write."""
        return self.dropped + self.unread


def parse_stats(text: str) -> CaptureStats | None:
    """The counts tcpdump prints on stderr when it stops; None when it printed none (it was killed)."""
    counts = {}
    for name, pattern in (
        ("captured", r"(\d+) packets? captured"),
        ("received", r"(\d+) packets? received by filter"),
        ("dropped", r"(\d+) packets? dropped by kernel"),
    ):
        found = re.findall(pattern, text)
        if not found:
            return None
        counts[name] = int(found[-1])
    return CaptureStats(**counts)


class Capture:
    """tcpdump on `interface` in `namespace` writing the packets of one `direction` ("in": received by the device,
    "out": sent through it) that match the filter `expression` to `path`, its messages to `log`; from `start()` to
    `stop()`.

    The expression must itself select the direction (by addresses): `-Q` is applied by libpcap after the kernel
    counted a packet as received, so packets of the other direction would count as lost (6 ICMP errors a UE sent, in
    a test); and with `inbound` or `outbound` in the filter, tcpdump 4.99.3 / libpcap 1.10.3 counted the first packet
    as received and never wrote it."""

    def __init__(
        self, namespace: str, interface: str, direction: Literal["in", "out"], expression: str, path: Path, log: Path
    ) -> None:
        self.namespace = namespace
        self.interface = interface
        self.direction = direction
        self.expression = expression
        self.path = path
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        tcpdump = shutil.which("tcpdump")
        if tcpdump is None:
            raise UserError("tcpdump: not found (apt-get install tcpdump): the srsRAN cells measure delay with it")
        return [
            "ip", "netns", "exec", self.namespace, tcpdump,
            "-i", self.interface, "-Q", self.direction, "-n", "-p",
            "-s", str(SNAPLEN), "-B", str(BUFFER_KIB),
            # every packet handed over at once: none waits in a half-filled block when tcpdump is stopped
            "--immediate-mode",
            "--time-stamp-precision=nano",
            "-Z", "root",  # Debian's tcpdump drops to user tcpdump, who cannot write into a run folder of root's
            "-w", str(self.path),
            self.expression,
        ]  # fmt: skip

    def start(self) -> None:
        """Starts tcpdump and returns once it captures; CaptureError with its message when it does not."""
        command = self.command()
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + READY_S
        while "listening on" not in self.log.read_text(errors="replace"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                output = self.log.read_text(errors="replace").strip()
                raise CaptureError(f"tcpdump on {self.interface} in {self.namespace} did not start: {output}")
            time.sleep(0.05)

    def stop(self) -> CaptureStats | None:
        """Stops tcpdump as Ctrl-C does (it flushes the file and prints its counts); None when it printed no counts
        (it had to be killed, or failed)."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                return None
        return parse_stats(self.log.read_text(errors="replace"))


@dataclass(frozen=True)
class Frame:
    """One captured packet: the kernel's stamp, the bytes captured (an IP packet, up to the snap length) and the
    packet's length on the wire."""

    time_ns: int
    data: bytes
    length: int


@dataclass(frozen=True)
class PcapFile:
    """A pcap file read whole; `truncated` when it ends inside a record (its writer was killed)."""

    frames: list[Frame]
    truncated: bool


def read_pcap(path: Path) -> PcapFile:
    """The frames of a raw-IP pcap file (as tcpdump writes for a TUN device), or a UserError naming the file."""
    try:
        content = path.read_bytes()
    except OSError as error:
        raise UserError(f"{path}: cannot read: {error.strerror}") from None
    if len(content) < FILE_HEADER:
        raise UserError(f"{path}: not a pcap file (shorter than its {FILE_HEADER}-byte header)")
    magic = struct.unpack_from("<I", content)[0]
    if magic not in PCAP_MAGIC:
        raise UserError(f"{path}: not a pcap file (magic 0x{magic:08x})")
    order, nanoseconds = PCAP_MAGIC[magic]
    link_type = struct.unpack_from(order + "I", content, 20)[0] & 0x0FFFFFFF  # upper bits: FCS length
    if link_type not in (LINKTYPE_RAW, LINKTYPE_IPV4):
        raise UserError(f"{path}: link type {link_type}: expected raw IP (a capture on a TUN device)")
    scale = 1 if nanoseconds else 1000
    frames: list[Frame] = []
    offset = FILE_HEADER
    header = struct.Struct(order + "IIII")
    while offset + RECORD_HEADER <= len(content):
        seconds, fraction, captured, length = header.unpack_from(content, offset)
        offset += RECORD_HEADER
        if offset + captured > len(content):
            return PcapFile(frames, truncated=True)
        frames.append(Frame(seconds * 1_000_000_000 + fraction * scale, content[offset : offset + captured], length))
        offset += captured
    return PcapFile(frames, truncated=offset != len(content))
