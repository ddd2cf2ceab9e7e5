"""TCP counters of a network namespace (/proc/net/snmp, /proc/net/netstat): retransmissions, timeouts and ECN.

The runner reads them in every namespace that sends TCP (server, core, UEs) before and after an arm's traffic;
the difference is what the arm's senders did: retransmitted segments, retransmission timeouts, and the timeouts
the kernel later found spurious (F-RTO, RFC 5682), paper 000's culprit, and the segments its senders learnt were
delivered with CE (an ECE on the ACK that covered them; with DCTCP's per-segment echo, the cell's CE marks).
"""

from __future__ import annotations

import asyncio
import itertools

# (table, counter) -> key in netstat.json
COUNTERS = {
    ("Tcp", "OutSegs"): "out_segments",
    ("Tcp", "RetransSegs"): "retrans_segments",
    ("TcpExt", "TCPTimeouts"): "rto",
    ("TcpExt", "TCPSpuriousRTOs"): "spurious_rto",
    ("TcpExt", "TCPDeliveredCE"): "delivered_ce",
}


def parse(text: str) -> dict[str, int]:
    """The counters of COUNTERS from the concatenated text of /proc/net/snmp and /proc/net/netstat (each table
    is a header line of names and a line of values, both starting with `Table:`)."""
    lines = text.splitlines()
    values: dict[str, int] = {}
    for header, data in itertools.pairwise(lines):
        table, _, names = header.partition(":")
        data_table, _, numbers = data.partition(":")
        if table != data_table or not names or names.split()[0].lstrip("-").isdigit():
            continue
        for name, number in zip(names.split(), numbers.split(), strict=False):
            key = COUNTERS.get((table, name))
            if key is not None:
                values[key] = int(number)
    return values


def difference(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {key: after[key] - before.get(key, 0) for key in after}


async def read(namespace: str) -> dict[str, int]:
    process = await asyncio.create_subprocess_exec(
        "ip", "netns", "exec", namespace, "cat", "/proc/net/snmp", "/proc/net/netstat",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    output, error = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"reading TCP counters in {namespace}: {error.decode(errors='replace').strip()}")
    return parse(output.decode())
