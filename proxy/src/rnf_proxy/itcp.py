"""I-TCP: a plain split. The kernel's own congestion control sends toward the UE; no feedback is used.

The proxy leaves the UE-side route and sysctls at the kernel's defaults for this controller (initial window
10 segments, slow start after idle), so it is the split-connection baseline of paper 000's Table 3.
"""

from __future__ import annotations

from typing import Literal

from rnf_foundation.config import Strict

from rnf_proxy.control import FREE, Decision, Sample


class ItcpConfig(Strict):
    """`controller = {kind = "itcp", congestion = "cubic"}`."""

    kind: Literal["itcp"] = "itcp"
    congestion: Literal["cubic", "reno", "bbr"] = "cubic"


class Itcp:
    kind = "itcp"
    wants_acks = False

    def __init__(self, config: ItcpConfig | None = None) -> None:
        self.config = config or ItcpConfig()

    def update(self, sample: Sample, now: float) -> Decision:
        return FREE

    def state(self) -> None:
        return None
