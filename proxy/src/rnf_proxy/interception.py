"""Transparent interception: nftables TPROXY plus policy routing, the way production PEPs do it.

In the namespace where the proxy relays (the cell's core):

```
table ip rnf_proxy {
    chain prerouting {
        type filter hook prerouting priority mangle; policy accept;
        meta l4proto tcp socket transparent 1 meta mark set 0x1 accept      # packets of proxy sockets
        ip saddr { 172.16.0.0/24 } meta l4proto tcp tproxy to 127.0.0.1:15001 meta mark set 0x1 accept
    }
}
ip rule add fwmark 0x1 lookup 100
ip route add local 0.0.0.0/0 dev lo table 100
```

A UE's SYN toward any server is diverted to the proxy's `IP_TRANSPARENT` listener, which sees the
server's address as its local address; the proxy then connects to the server from the UE's address with
another `IP_TRANSPARENT` socket. The server's replies, addressed to the UE, match that socket (`socket
transparent 1`) and are delivered locally instead of forwarded. Neither end is configured, and each sees the
other's address. `teardown` removes exactly what `setup` added.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass

from rnf_proxy import netns

log = logging.getLogger("rnf.proxy")


@dataclass(frozen=True)
class Interception:
    namespace: str | None
    listener: tuple[str, int]  # the transparent listener, 127.0.0.1 by default: only diverted packets reach it
    ue_networks: tuple[str, ...]
    ports: tuple[int, ...] = ()  # server ports to intercept; empty: every TCP port
    mark: int = 0x1
    route_table: int = 100
    nft_table: str = "rnf_proxy"

    def ruleset(self) -> str:
        """The nftables script that `setup` loads."""
        networks = ", ".join(str(ipaddress.ip_network(net, strict=False)) for net in self.ue_networks)
        ports = f" tcp dport {{ {', '.join(str(p) for p in self.ports)} }}" if self.ports else ""
        mark = f"0x{self.mark:x}"
        host, port = self.listener
        return (
            f"table ip {self.nft_table} {{\n"
            "  chain prerouting {\n"
            "    type filter hook prerouting priority mangle; policy accept;\n"
            f"    meta l4proto tcp socket transparent 1 meta mark set {mark} accept\n"
            f"    ip saddr {{ {networks} }} meta l4proto tcp{ports}"
            f" tproxy to {host}:{port} meta mark set {mark} accept\n"
            "  }\n"
            "}\n"
        )

    def _rule(self, action: str) -> list[str]:
        return ["ip", "rule", action, "fwmark", f"0x{self.mark:x}", "lookup", str(self.route_table)]

    def _route(self, action: str) -> list[str]:
        return ["ip", "route", action, "local", "0.0.0.0/0", "dev", "lo", "table", str(self.route_table)]

    def setup(self) -> None:
        self.teardown()  # leftovers of a proxy that was killed
        try:
            netns.run(self.namespace, ["nft", "-f", "-"], stdin=self.ruleset())
            netns.run(self.namespace, self._rule("add"))
            netns.run(self.namespace, self._route("add"))
        except BaseException:
            self.teardown()
            raise
        log.info("intercepting TCP from %s to %s:%d", ", ".join(self.ue_networks), *self.listener)

    def teardown(self) -> None:
        """Remove the table, rule and route; silent about what is already gone."""
        netns.run(self.namespace, ["nft", "delete", "table", "ip", self.nft_table], check=False)
        while netns.run(self.namespace, self._rule("del"), check=False).returncode == 0:
            pass
        netns.run(self.namespace, self._route("del"), check=False)
