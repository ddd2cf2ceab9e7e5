"""Keeping the kernel's congestion control out of the controller's way, on the proxy's UE-side sockets.

When a controller owns the window (every kind but `itcp`), the proxy releases bytes into a UE-side socket
only as the decision allows, and the kernel must send them at once. Linux offers no userspace cwnd, so the
proxy makes the kernel's cwnd a loose upper bound that never binds in normal operation:

- route attributes `initcwnd` and `initrwnd` (1000 segments by default) on the routes toward the UE networks
  in the proxy's namespace: a new connection starts with a large cwnd, so there is no slow start;
- `net.ipv4.tcp_slow_start_after_idle = 0`: no cwnd reset after an idle period or an outage (RFC 2861 cwnd
  validation would otherwise shrink it);
- `net.ipv4.tcp_no_metrics_save = 1`: no ssthresh carried over from an earlier connection to the same UE;
- per socket, `TCP_CONGESTION = cubic` (not the default BBR of this kernel: BBR would cap in-flight at twice
  its own BDP estimate and pace at its own rate, fighting q0 > 0 and quotas), and `TCP_RTO_MAX_MS` (1 s) so an
  outage that loses packets costs at most a second of back-off after the link returns. Loss recovery stays on
  (three duplicate ACKs still retransmit, as paper 000 keeps it); after a loss CUBIC lowers its cwnd by 30 %
  from a value far above the controller's window and regrows quickly, so it acts only as a backstop.

`itcp` leaves all of this at the kernel's defaults: it is the plain split baseline.
Values are restored on teardown.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from rnf_proxy import netns

SYSCTLS = {"net.ipv4.tcp_slow_start_after_idle": "0", "net.ipv4.tcp_no_metrics_save": "1"}
_ROUTE_KEYS = (("gateway", "via"), ("protocol", "proto"), ("scope", "scope"), ("prefsrc", "src"), ("metric", "metric"))
log = logging.getLogger("rnf.proxy")


def route_command(route: dict[str, Any], extra: list[str]) -> list[str]:
    """`ip route replace` re-creating a route as `ip -j route show` printed it, plus `extra` attributes."""
    argv = ["ip", "route", "replace", str(route["dst"]), "dev", str(route["dev"])]
    for key, word in _ROUTE_KEYS:
        if key in route:
            argv += [word, str(route[key])]
    return argv + extra


@dataclass
class KernelTuning:
    namespace: str | None
    ue_networks: tuple[str, ...]
    initcwnd_segments: int
    _sysctls: dict[str, str] = field(default_factory=dict)
    _routes: list[dict[str, Any]] = field(default_factory=list)

    def apply(self) -> None:
        for key, value in SYSCTLS.items():
            self._sysctls[key] = netns.run(self.namespace, ["sysctl", "-n", key]).stdout.strip()
            netns.run(self.namespace, ["sysctl", "-q", "-w", f"{key}={value}"])
        window = str(self.initcwnd_segments)
        for network in self.ue_networks:
            shown = netns.run(self.namespace, ["ip", "-j", "route", "show", network]).stdout
            routes = json.loads(shown or "[]")
            if not routes:
                log.warning("no route to %s in the proxy's namespace: initcwnd left at the default", network)
            for route in routes:
                route = {**route, "dst": network}
                netns.run(self.namespace, route_command(route, ["initcwnd", window, "initrwnd", window]))
                self._routes.append(route)

    def restore(self) -> None:
        """Put the routes and sysctls back; silent about what is gone (a namespace already removed)."""
        for route in self._routes:
            netns.run(self.namespace, route_command(route, []), check=False)
        for key, value in self._sysctls.items():
            netns.run(self.namespace, ["sysctl", "-q", "-w", f"{key}={value}"], check=False)
        self._routes.clear()
        self._sysctls.clear()
