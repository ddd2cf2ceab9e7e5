"""TCP_INFO of a connected socket, as the proxy and the traffic generators read it (Linux 6.7 fields where the
kernel has them)."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

# struct tcp_info (include/uapi/linux/tcp.h) up to tcpi_total_rto_time: 8 u8, 24 u32, 4 u64, 6 u32, 4 u64,
# 2 u32, 2 u64, 2 u32, 2 u32, 2 u32, 2 u16, 1 u32.
_TCP_INFO = struct.Struct("=8B24I4Q6I4Q2I2Q2I2I2I2HI")
_TCP_INFO_OLD = struct.Struct("=8B24I4Q6I4Q2I2Q2I2I")  # before Linux 6.7: no rehash or RTO counters


@dataclass(frozen=True, slots=True)
class TcpInfo:
    """The fields of TCP_INFO the proxy and the traffic generators use. Times in seconds, sizes in bytes."""

    state: int
    ca_state: int
    snd_mss: int
    unacked_segments: int
    rtt_s: float
    min_rtt_s: float
    snd_cwnd_segments: int
    total_retrans: int
    bytes_acked: int
    bytes_sent: int
    notsent_bytes: int
    pacing_rate: int
    total_rto: int  # retransmission timeouts since the connection started (0 on kernels before 6.7)


def tcp_info(sock: socket.socket) -> TcpInfo:
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO.size)
    if len(raw) >= _TCP_INFO.size:
        fields = _TCP_INFO.unpack_from(raw)
        total_rto = fields[56]
    else:
        fields = _TCP_INFO_OLD.unpack_from(raw.ljust(_TCP_INFO_OLD.size, b"\0"))
        total_rto = 0
    return TcpInfo(
        state=fields[0],
        ca_state=fields[1],
        snd_mss=fields[10],
        unacked_segments=fields[12],
        rtt_s=fields[23] * 1e-6,
        min_rtt_s=fields[39] * 1e-6,
        snd_cwnd_segments=fields[26],
        total_retrans=fields[31],
        bytes_acked=fields[34],
        bytes_sent=fields[48],
        notsent_bytes=fields[38],
        pacing_rate=fields[32],
        total_rto=total_rto,
    )
