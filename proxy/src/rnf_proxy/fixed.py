"""A constant decision, for calibrating enforcement on a new setup: a fixed window or a fixed quota per step.

With `mode = "quota"`, every tick of `ts_s` starts a new step with the same quota; with `mode = "window"`, the
window never changes. Comparing what left per step, or what was in flight, with `bytes` measures how well the
proxy turns decisions into bytes on the wire (`tests/test_enforce.py` does exactly that).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from rnf_foundation.config import Strict

from rnf_proxy.control import ControllerState, Decision, Mode, Sample, Tick


class FixedConfig(Strict):
    """`controller = {kind = "fixed", mode = "quota", bytes = 25000}`."""

    kind: Literal["fixed"] = "fixed"
    mode: Literal["window", "quota"] = "window"
    bytes: int = Field(gt=0)
    ts_s: float = Field(default=0.01, gt=0)
    cap_bytes: int = Field(default=0, ge=0, description="quota mode: what the sockets may hold in all (0: no cap)")


class Fixed:
    kind = "fixed"
    wants_acks = False

    def __init__(self, config: FixedConfig) -> None:
        self.config = config
        self.step = 0

    def update(self, sample: Sample, now: float) -> Decision:
        if self.config.mode == "window":
            return Decision(Mode.WINDOW, self.config.bytes)
        if isinstance(sample, Tick):
            self.step += 1
        return Decision(
            Mode.QUOTA, self.config.bytes, step=self.step, step_s=self.config.ts_s, cap=self.config.cap_bytes
        )

    def state(self) -> ControllerState:
        return ControllerState(w=float(self.config.bytes))
