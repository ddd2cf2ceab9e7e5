"""The UE address plan srsepc, the virtual cell and the proxy share: UE N (1-based) is 172.16.0.N+1 behind the
SGi gateway 172.16.0.1, so a UE's index follows from its address on either stack."""

from __future__ import annotations

import ipaddress

UE_POOL = ipaddress.IPv4Network("172.16.0.0/24")
UE_POOL_GATEWAY = ipaddress.IPv4Address("172.16.0.1")


def ue_index(ue_ip: str) -> str:
    """The UE's 1-based index as srsepc and the virtual cell number them (172.16.0.N+1 is UE N); else the IP."""
    address = ipaddress.IPv4Address(ue_ip)
    return str(int(address) - int(UE_POOL_GATEWAY)) if address in UE_POOL else ue_ip
