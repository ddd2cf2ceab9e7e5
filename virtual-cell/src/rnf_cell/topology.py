"""The virtual cell's network: namespaces, veth and TUN devices, built with iproute2 and removed after.

```
 P-server             P-wire                       P-core                      P-ueN
 [eth0 10.20.0.2] =veth= [wire-srv] (datapath) [wire-core] =veth= [wan0 10.20.0.1]
                                                [srs_spgw_sgi 172.16.0.1/24] <-(datapath)-> [tun_srsue 172.16.0.N]
```

Device names follow srsRAN (`srs_spgw_sgi` in the core like srsepc, `tun_srsue` in each UE like srsue), so
tools written for a srsRAN setup work unchanged. `plan` is pure; `Topology` runs it and undoes it.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rnf_foundation.errors import UserError

SERVER_IP = ipaddress.IPv4Address("10.20.0.2")
CORE_WAN_IP = ipaddress.IPv4Address("10.20.0.1")
SGI_IP = ipaddress.IPv4Address("172.16.0.1")
UE_SUBNET = ipaddress.IPv4Network("172.16.0.0/24")
SGI_IFNAME = "srs_spgw_sgi"
UE_IFNAME = "tun_srsue"
SERVER_IFNAME = "eth0"
CORE_WAN_IFNAME = "wan0"
WIRE_SERVER_IFNAME = "wire-srv"
WIRE_CORE_IFNAME = "wire-core"
NETNS_DIR = Path("/run/netns")
RUN_DIR = Path("/run/rnf")
log = logging.getLogger("rnf.cell")


@dataclass(frozen=True)
class Names:
    """Namespace names of one virtual cell."""

    prefix: str
    ue_count: int

    @property
    def server(self) -> str:
        return f"{self.prefix}-server"

    @property
    def wire(self) -> str:
        return f"{self.prefix}-wire"

    @property
    def core(self) -> str:
        return f"{self.prefix}-core"

    def ue(self, index: int) -> str:
        return f"{self.prefix}-ue{index + 1}"

    @property
    def all(self) -> list[str]:
        return [self.server, self.wire, self.core, *(self.ue(i) for i in range(self.ue_count))]


Command = list[str]


def plan(names: Names, ue_ips: Sequence[ipaddress.IPv4Address]) -> list[Command]:
    """The iproute2/ethtool/sysctl commands that build the topology, in order."""
    if any(ip not in UE_SUBNET or ip == SGI_IP for ip in ue_ips):
        raise UserError(f"UE addresses must be in {UE_SUBNET} and not {SGI_IP}: {[str(ip) for ip in ue_ips]}")
    server, wire, core = names.server, names.wire, names.core
    commands: list[Command] = [["ip", "netns", "add", ns] for ns in names.all]
    commands += [["ip", "-n", ns, "link", "set", "lo", "up"] for ns in names.all]
    commands += [
        [
            "ip",
            "link",
            "add",
            SERVER_IFNAME,
            "netns",
            server,
            "type",
            "veth",
            "peer",
            WIRE_SERVER_IFNAME,
            "netns",
            wire,
        ],
        ["ip", "link", "add", WIRE_CORE_IFNAME, "netns", wire, "type", "veth", "peer", CORE_WAN_IFNAME, "netns", core],
        ["ip", "-n", server, "addr", "add", f"{SERVER_IP}/24", "dev", SERVER_IFNAME],
        ["ip", "-n", core, "addr", "add", f"{CORE_WAN_IP}/24", "dev", CORE_WAN_IFNAME],
        ["ip", "-n", core, "tuntap", "add", "dev", SGI_IFNAME, "mode", "tun"],
        ["ip", "-n", core, "addr", "add", f"{SGI_IP}/{UE_SUBNET.prefixlen}", "dev", SGI_IFNAME],
    ]
    # The wired link is bridged frame by frame in user space: frames must not exceed the MTU (no TSO/GSO/GRO),
    # and must carry complete checksums (no TX checksum offload), or TCP drops them after the bridge.
    for ns, device in (
        (server, SERVER_IFNAME),
        (wire, WIRE_SERVER_IFNAME),
        (wire, WIRE_CORE_IFNAME),
        (core, CORE_WAN_IFNAME),
    ):
        commands.append(
            ["ip", "netns", "exec", ns, "ethtool", "-K", device, "tx", "off", "tso", "off", "gso", "off", "gro", "off"]
        )
        commands.append(["ip", "-n", ns, "link", "set", device, "up"])
    commands += [
        ["ip", "-n", core, "link", "set", SGI_IFNAME, "up"],
        ["ip", "-n", server, "route", "add", str(UE_SUBNET), "via", str(CORE_WAN_IP)],
        ["ip", "netns", "exec", core, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"],
    ]
    for index, ip in enumerate(ue_ips):
        ue = names.ue(index)
        commands += [
            ["ip", "-n", ue, "tuntap", "add", "dev", UE_IFNAME, "mode", "tun"],
            ["ip", "-n", ue, "addr", "add", f"{ip}/{UE_SUBNET.prefixlen}", "dev", UE_IFNAME],
            ["ip", "-n", ue, "link", "set", UE_IFNAME, "up"],
            ["ip", "-n", ue, "route", "add", "default", "dev", UE_IFNAME],
        ]
    for ns in names.all:
        for key in ("all", "default"):
            commands.append(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", f"net.ipv4.conf.{key}.rp_filter=0"])
    return commands


def run(command: Command) -> None:
    try:
        subprocess.run(command, check=True, capture_output=True, text=True)
    except FileNotFoundError:
        raise UserError(f"`{command[0]}` is not installed; run `make setup` (as root)") from None
    except subprocess.CalledProcessError as error:
        raise UserError(f"`{' '.join(command)}` failed: {error.stderr.strip() or error.returncode}") from None


def namespace_pids(namespace: str) -> list[int]:
    result = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
    return [int(pid) for pid in result.stdout.split()]


def remove_namespaces(namespaces: Sequence[str], own_pid: int | None = None) -> None:
    """Kill what still runs inside the namespaces, then delete them. Never raises."""
    present = [ns for ns in namespaces if (NETNS_DIR / ns).exists()]
    pids = {pid for ns in present for pid in namespace_pids(ns)} - {own_pid or os.getpid()}
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 2.0
    while pids and time.monotonic() < deadline:
        pids = {pid for pid in pids if Path(f"/proc/{pid}").exists()}
        time.sleep(0.02)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for ns in present:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def leftovers(prefix: str) -> list[str]:
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(f"{prefix}-"))


class Topology:
    """Builds the namespaces on entry and removes them on exit, with a pid file guarding against two cells."""

    def __init__(self, names: Names, ue_ips: Sequence[ipaddress.IPv4Address]) -> None:
        self.names = names
        self.commands = plan(names, ue_ips)
        self.pid_file = RUN_DIR / f"{names.prefix}.pid"

    def __enter__(self) -> Topology:
        if os.geteuid() != 0:
            raise UserError("the virtual cell builds network namespaces and needs root")
        self._claim()
        found = leftovers(self.names.prefix)
        if found:
            log.warning("removing leftovers of an earlier run: %s", ", ".join(found))
            remove_namespaces(found)
        try:
            for command in self.commands:
                run(command)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        remove_namespaces(self.names.all)
        self.pid_file.unlink(missing_ok=True)

    def _claim(self) -> None:
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        try:
            other = int(self.pid_file.read_text())
        except (FileNotFoundError, ValueError):
            other = None
        if other is not None and other != os.getpid() and Path(f"/proc/{other}").exists():
            raise UserError(
                f"a virtual cell with namespace prefix {self.names.prefix!r} is already running (pid {other}); "
                "stop it or set another namespace_prefix"
            )
        self.pid_file.write_text(str(os.getpid()))
