"""Helpers for tests that run a real virtual cell: unique namespaces, free ports, kernel counters."""

import socket
import subprocess
import uuid

import pytest


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def unique_prefix() -> str:
    return "c" + uuid.uuid4().hex[:6]


def read_interface_counter(namespace: str, device: str, counter: str) -> int:
    """A kernel's own count for one of its interfaces (`rx_bytes`, `tx_packets`...): independent of the cell's."""
    result = subprocess.run(
        ["ip", "netns", "exec", namespace, "cat", f"/sys/class/net/{device}/statistics/{counter}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(result.stdout)


def read_tun_rx_bytes(namespace: str, device: str = "tun_srsue") -> int:
    """The UE kernel's own count of bytes received on its TUN."""
    return read_interface_counter(namespace, device, "rx_bytes")


@pytest.fixture
def tun_rx_bytes():
    return read_tun_rx_bytes


@pytest.fixture
def interface_counter():
    return read_interface_counter


@pytest.fixture
def cell_data():
    """A one-UE cell file as a dict, with a unique namespace prefix and telemetry port."""
    return {
        "namespace_prefix": unique_prefix(),
        "telemetry": {"endpoint": f"tcp://127.0.0.1:{free_port()}", "period_ms": 10},
        "wired": {"delay_ms": 5},
        "ues": [
            {
                "trace": {"generator": "constant", "rate_mbps": 8},
                "backhaul_delay_ms": 10,
                "uplink_delay_ms": 10,
                "queue_limit_bytes": 200_000,
            }
        ],
    }
