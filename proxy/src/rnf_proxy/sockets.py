"""Linux socket knobs a userspace TCP sender has: pacing, queue occupancy, TCP_INFO, windows, timeouts.

- `SO_MAX_PACING_RATE` caps the rate of a socket; TCP paces internally (no `fq` qdisc needed since 4.13),
  skb by skb, after the connection's first 10 segments.
- `SIOCOUTQ` is what sits in the send queue (sent and unacknowledged, plus not yet sent), `SIOCOUTQNSD` the
  part not yet sent; their difference is what is in flight.
- `TCP_INFO` gives the RTTs, bytes acknowledged and the retransmission and timeout counters.
- `SO_RCVBUF` bounds what a socket may hold received and unread, so the window it advertises: the proxy's
  buffer on the wired side. (`TCP_WINDOW_CLAMP` would say the same more directly, but on Linux 6.x the
  receive-buffer scaling replaces a clamp set on a socket whose receive buffer is locked; SO_RCVBUF holds, set
  before connect and lowered at any time after.)
- keepalive and `TCP_USER_TIMEOUT` bound how long a vanished peer holds a connection.
"""

from __future__ import annotations

import fcntl
import resource
import socket
import struct

from rnf_foundation.tcp import TcpInfo as TcpInfo  # re-exported: the proxy's socket knobs include TCP_INFO
from rnf_foundation.tcp import tcp_info as tcp_info

SO_MAX_PACING_RATE = 47
SIOCOUTQ = 0x5411  # TIOCOUTQ
SIOCOUTQNSD = 0x894B
TCP_RTO_MAX_MS = 44  # Linux 6.15; TCP_INFO's tcpi_total_rto (Linux 6.7) shares the era
UNLIMITED_RATE = (1 << 64) - 1
_INT = struct.Struct("i")
_U64 = struct.Struct("Q")


def _ioctl_int(fd: int, request: int) -> int:
    value: int = _INT.unpack(fcntl.ioctl(fd, request, b"\0\0\0\0"))[0]
    return value


def send_queue(fd: int) -> int:
    """Bytes in the send queue: in flight plus not yet sent."""
    return _ioctl_int(fd, SIOCOUTQ)


def not_sent(fd: int) -> int:
    """Bytes in the send queue that have not been sent yet."""
    return _ioctl_int(fd, SIOCOUTQNSD)


def set_pacing(sock: socket.socket, rate: float) -> None:
    """Cap the socket's sending rate at `rate` bytes/s; 0 removes the cap."""
    value = UNLIMITED_RATE if rate <= 0 else max(1, int(rate))
    sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, _U64.pack(value))


def set_receive_buffer(sock: socket.socket, size: int) -> None:
    """Let the socket hold about `size` bytes received and unread; its advertised window follows.
    (The kernel doubles SO_RCVBUF for its bookkeeping and advertises nearly all of the doubled value.)"""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, max(size // 2, 2048))


def set_peer_timeout(sock: socket.socket, timeout_s: float) -> None:
    """Abort the connection when the peer is gone for `timeout_s`: keepalive probes, and TCP_USER_TIMEOUT
    for data that stays unacknowledged."""
    idle = max(1, int(timeout_s / 2))
    interval = max(1, int(timeout_s / 8))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, idle)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, interval)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 4)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, int(timeout_s * 1000))


def set_rto_max(sock: socket.socket, rto_max_s: float) -> bool:
    """Bound the retransmission back-off (TCP_RTO_MAX_MS, 1 to 120 s); False where the kernel lacks it."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, TCP_RTO_MAX_MS, int(rto_max_s * 1000))
    except OSError:
        return False
    return True


def reset_on_close(sock: socket.socket) -> None:
    """Make close() send a RST instead of a FIN (SO_LINGER with a zero timeout)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def raise_open_files(limit: int) -> int:
    """Raise the soft (and, as root, hard) limit on open files to at least `limit`; the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= limit:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, max(hard, limit)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(limit, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
