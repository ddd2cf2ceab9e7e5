"""The flowgraph's input: a validated bridge configuration with every trace resolved to a gain schedule.

`rnf bridge run` (in the venv) validates the TOML configuration and writes a plan as JSON; the flowgraph (under
Debian's `/usr/bin/python3`, which has GNU Radio but not the venv's packages) reads it. The plan is plain data,
stdlib only, so both interpreters share this module. Tests and the benchmark build plans directly.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

from rnf_bridge.schedule import Schedule

FadingModel = Literal["rayleigh", "rician"]


@dataclass(frozen=True)
class Fading:
    """Flat Rayleigh or Rician fading (GNU Radio's `channels.fading_model`, sum of sinusoids)."""

    model: FadingModel
    doppler_hz: float
    k_factor: float = 0.0  # Rician K (linear): specular over scattered power
    sinusoids: int = 8
    seed: int = 1  # the downlink's; the uplink fades independently (FDD) with `seed + 1`


@dataclass(frozen=True)
class UePlan:
    """One srsue's side of the bridge. `tx` is the UE's transmit port (the bridge connects a REQ to it), `rx` the
    port the bridge binds for the UE's receiver (the UE connects its REQ)."""

    name: str
    tx: str
    rx: str
    schedule: Schedule
    noise_dbfs: float | None = None  # AWGN power at the UE's receiver, dB relative to a full-scale (|x| = 1) signal
    fading: Fading | None = None


@dataclass(frozen=True)
class Plan:
    """Everything the flowgraph needs. `enb_tx` is srsenb's transmit port (the bridge connects), `enb_rx` the port
    the bridge binds for srsenb's receiver. `control` is the control socket's bind endpoint."""

    sample_rate: float
    enb_tx: str
    enb_rx: str
    ues: tuple[UePlan, ...]
    control: str
    enb_noise_dbfs: float | None = None  # AWGN power at the eNB's receiver (after the UEs are summed)
    peer_timeout_s: float = 5.0
    seed: int = 1  # noise seeds: the eNB's is `seed`, UE i's is `seed + 1 + i`

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> Plan:
        data = json.loads(text)
        return cls(**{**data, "ues": tuple(_ue(ue) for ue in data["ues"])})


def _ue(data: dict[str, Any]) -> UePlan:
    schedule = data["schedule"]
    return UePlan(
        **{
            **data,
            "schedule": Schedule(tuple(schedule["times_s"]), tuple(schedule["gains_db"]), schedule["loop"]),
            "fading": Fading(**data["fading"]) if data["fading"] else None,
        }
    )
