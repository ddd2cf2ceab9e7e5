"""Socket knobs on real loopback TCP: TCP_INFO fields, send queue occupancy, pacing, receive buffer."""

import socket
import time

from rnf_proxy import sockets


def connected_pair():
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    listener.close()
    return client, server


def test_tcp_info_counts_acknowledged_bytes_and_rtt():
    client, server = connected_pair()
    client.sendall(b"x" * 100_000)
    received = 0
    while received < 100_000:
        received += len(server.recv(1 << 20))
    time.sleep(0.05)
    info = sockets.tcp_info(client)
    assert info.bytes_acked >= 100_000 and info.bytes_sent >= 100_000
    assert 0 < info.min_rtt_s < 0.1 and info.snd_mss > 0
    assert sockets.send_queue(client.fileno()) == 0 and sockets.not_sent(client.fileno()) == 0
    client.close()
    server.close()


def test_send_queue_holds_what_the_peer_has_not_read():
    client, server = connected_pair()
    sockets.set_receive_buffer(server, 8192)
    client.setblocking(False)
    try:
        while True:
            client.send(b"y" * 65_536)
    except BlockingIOError:
        pass
    queued, unsent = sockets.send_queue(client.fileno()), sockets.not_sent(client.fileno())
    assert queued > 0 and 0 < unsent <= queued
    client.close()
    server.close()


def test_pacing_cap_shows_in_tcp_info():
    client, server = connected_pair()
    sockets.set_pacing(client, 1_000_000)
    assert sockets.tcp_info(client).pacing_rate <= 1_000_000
    sockets.set_pacing(client, 0)
    client.close()
    server.close()


def test_receive_buffer_bounds_what_a_fast_sender_can_push():
    import fcntl
    import struct
    import termios

    client, server = connected_pair()
    sockets.set_receive_buffer(client, 64_000)
    server.setblocking(False)
    try:
        while True:
            server.send(bytes(65_536))
    except BlockingIOError:
        pass
    time.sleep(0.2)
    waiting = struct.unpack("i", fcntl.ioctl(client.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]
    assert 0 < waiting <= 66_000
    client.close()
    server.close()
