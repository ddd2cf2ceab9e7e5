"""rnf-nic-tuning, the script the uhd role's rnf-nic-tuning@IFACE.service runs for a 10 GbE interface, on a real
interface: a veth pair in a network namespace of the test's own. veth has no ring buffers, so this covers the MTU
and the script's refusal to touch rings it was not asked to change; the ring buffers need a real NIC.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "roles" / "uhd" / "files" / "rnf-nic-tuning"


@pytest.fixture
def namespace() -> Iterator[str]:
    name = f"nic{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "-n", name, "link", "add", "usrp0", "type", "veth", "peer", "name", "usrp1"], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def tune(namespace: str, **settings: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MTU": "", "RX_RING": "", "TX_RING": "", **settings}
    return subprocess.run(
        ["ip", "netns", "exec", namespace, "sh", str(SCRIPT), "usrp0"], env=env, capture_output=True, text=True
    )


def mtu(namespace: str) -> int:
    return int(subprocess.run(["ip", "netns", "exec", namespace, "cat", "/sys/class/net/usrp0/mtu"],
                              capture_output=True, text=True, check=True).stdout)  # fmt: skip


@pytest.mark.root
def test_the_mtu_is_set_and_setting_it_again_changes_nothing(namespace: str) -> None:
    first = tune(namespace, MTU="9000")
    assert first.returncode == 0, first.stderr
    assert mtu(namespace) == 9000
    assert first.stdout.strip() == "usrp0: mtu 9000, ring changes: none"
    again = tune(namespace, MTU="9000")
    assert again.returncode == 0 and mtu(namespace) == 9000, again.stderr


@pytest.mark.root
def test_rings_asked_of_an_interface_without_rings_fail_loudly(namespace: str) -> None:
    result = tune(namespace, MTU="9000", RX_RING="4096")
    assert result.returncode != 0  # the unit fails, and systemctl status shows why
    assert result.stderr.strip() == "netlink error: Operation not supported", result.stderr
