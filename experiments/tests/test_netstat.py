"""TCP counters from /proc/net/snmp and /proc/net/netstat."""

import asyncio
import subprocess
import uuid

import pytest
from rnf_experiments import netstat

SNMP = """Ip: Forwarding DefaultTTL
Ip: 1 64
Tcp: RtoAlgorithm RtoMin OutSegs RetransSegs
Tcp: 1 200 1500 12
Udp: InDatagrams
Udp: 7
TcpExt: SyncookiesSent TCPTimeouts TCPSpuriousRTOs
TcpExt: 0 3 1
"""


def test_the_counters_are_read_by_name_from_their_tables():
    assert netstat.parse(SNMP) == {"out_segments": 1500, "retrans_segments": 12, "rto": 3, "spurious_rto": 1}


def test_difference_is_what_happened_in_between():
    before = {"out_segments": 1500, "retrans_segments": 12, "rto": 3, "spurious_rto": 1}
    after = {"out_segments": 2500, "retrans_segments": 20, "rto": 3, "spurious_rto": 1}
    assert netstat.difference(before, after) == {
        "out_segments": 1000,
        "retrans_segments": 8,
        "rto": 0,
        "spurious_rto": 0,
    }


@pytest.mark.root
def test_a_fresh_namespace_has_every_counter_at_zero():
    name = "ns" + uuid.uuid4().hex[:8]
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        assert asyncio.run(netstat.read(name)) == dict.fromkeys(netstat.COUNTERS.values(), 0)
    finally:
        subprocess.run(["ip", "netns", "del", name], check=True)


def test_a_missing_namespace_is_an_error_naming_it():
    with pytest.raises(RuntimeError, match="no-such-namespace"):
        asyncio.run(netstat.read("no-such-namespace"))
