"""The topology plan (pure) and the real namespaces it builds."""

import ipaddress
import subprocess
import uuid

import pytest
from rnf_cell.topology import Names, Topology, leftovers, plan
from rnf_foundation.errors import UserError

UES = [ipaddress.IPv4Address("172.16.0.2"), ipaddress.IPv4Address("172.16.0.3")]


def test_plan_names_devices_like_srsran():
    commands = [" ".join(c) for c in plan(Names("t", 2), UES)]
    assert "ip -n t-core tuntap add dev srs_spgw_sgi mode tun" in commands
    assert "ip -n t-ue2 addr add 172.16.0.3/24 dev tun_srsue" in commands
    assert "ip -n t-server route add 172.16.0.0/24 via 10.20.0.1" in commands


def test_ue_outside_the_subnet_is_refused():
    with pytest.raises(UserError, match=r"must be in 172\.16\.0\.0/24"):
        plan(Names("t", 1), [ipaddress.IPv4Address("10.0.0.2")])


@pytest.mark.root
def test_namespaces_are_built_and_removed_and_leftovers_cleared():
    prefix = "t" + uuid.uuid4().hex[:6]
    names = Names(prefix, 1)
    subprocess.run(["ip", "netns", "add", f"{prefix}-server"], check=True)  # a crashed run's leftover
    with Topology(names, UES[:1]):
        assert leftovers(prefix) == sorted(names.all)
        ping = subprocess.run(
            ["ip", "netns", "exec", names.core, "ping", "-c1", "-W1", "10.20.0.1"], capture_output=True
        )
        assert ping.returncode == 0
    assert leftovers(prefix) == []
