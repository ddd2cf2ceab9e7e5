"""The `[cell]` table of a scenario: a union on `kind` ("virtual", "srsran", "srsran-zmq"), validated at load time.

A table without `kind` is a virtual cell. The srsRAN kinds need a patched build at run time (SRSRAN_BUILD), not to
validate: a scenario is checked whole before anything runs, on any machine.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Field, Tag, model_validator
from rnf_bridge import config as bridge
from rnf_bridge import traces as bridge_traces
from rnf_bridge.schedule import ScheduleError
from rnf_cell.config import DISCIPLINE_TAGS, CellConfig
from rnf_cell.config import TRACE_TAGS as CELL_TRACE_TAGS
from rnf_foundation.config import Strict

from rnf_experiments.cells.stack import SAMPLE_RATE

Prefix = Annotated[str, Field(pattern=r"^[a-z][a-z0-9]{0,7}$", description="namespaces are <prefix>-core etc.")]
Decibels = Annotated[float, Field(allow_inf_nan=False)]


class VirtualCellSpec(CellConfig):
    """`kind = "virtual"` plus a virtual cell's settings (virtual-cell/README.md)."""

    kind: Literal["virtual"] = "virtual"


class SrsranUeSpec(Strict):
    """One srsue on the direct radio (its USIM and address come from its position: UE n is 172.16.0.n+1)."""


class SrsranCellSpec(Strict):
    """`kind = "srsran"`: srsepc, the patched srsenb and one srsue wired together on srsRAN's ZeroMQ radio.

    `qci` is the default bearer's QCI: 9 (the default) maps to RLC AM in srsenb's rb.conf, 7 to RLC UM.
    """

    kind: Literal["srsran"]
    namespace_prefix: Prefix = "rnfs"
    n_prb: Literal[6, 15, 25, 50] = 25
    qci: Literal[7, 9] = 9
    telemetry_period_ms: int = Field(default=10, ge=1, le=1000)
    ues: list[SrsranUeSpec] = Field(default_factory=lambda: [SrsranUeSpec()], min_length=1, max_length=1)


class ZmqUeSpec(Strict):
    """One srsue behind the bridge: its path gain (constant or a trace), AWGN at its receiver, optional fading
    (zmq-bridge/README.md, `ues[n]`)."""

    gain_db: Decibels | None = None
    trace: bridge.TraceSpec | None = None
    noise_dbfs: Decibels | None = None
    fading: bridge.FadingConfig | None = None

    @model_validator(mode="after")
    def _buildable(self) -> ZmqUeSpec:
        if self.gain_db is not None and self.trace is not None:
            raise ValueError("set gain_db or trace, not both")
        try:
            bridge.schedule_of(bridge.UeConfig(gain_db=self.gain_db, trace=self.trace))
        except (bridge_traces.TraceError, ScheduleError) as error:
            raise ValueError(f"trace: {error}") from None
        return self


class SrsranZmqCellSpec(Strict):
    """`kind = "srsran-zmq"`: srsepc, the patched srsenb, the GNU Radio bridge and N srsue, each UE with the bridge's
    channel of `ues[n]`. `enb_noise_dbfs` is AWGN at srsenb's receiver."""

    kind: Literal["srsran-zmq"]
    namespace_prefix: Prefix = "rnfz"
    n_prb: Literal[6, 15, 25] = 15
    qci: Literal[7, 9] = 9
    telemetry_period_ms: int = Field(default=10, ge=1, le=1000)
    enb_noise_dbfs: Decibels | None = None
    ues: list[ZmqUeSpec] = Field(min_length=1, max_length=4)

    def bridge_config(self, control: str) -> bridge.BridgeConfig:
        """The bridge between srsenb and the UEs, on its default ports, its control socket at `control`."""
        ues = [ue.model_dump(exclude_none=True) for ue in self.ues]
        data: dict[str, Any] = {"sample_rate": SAMPLE_RATE[self.n_prb], "control": control, "ues": ues}
        if self.enb_noise_dbfs is not None:
            data["enb"] = {"noise_dbfs": self.enb_noise_dbfs}
        return bridge.BridgeConfig.model_validate(data)


def _kind(data: Any) -> str:
    if isinstance(data, BaseModel):
        return str(getattr(data, "kind", "virtual"))
    return str(data.get("kind", "virtual")) if isinstance(data, dict) else "virtual"


CellSpec = Annotated[
    Annotated[VirtualCellSpec, Tag("virtual")]
    | Annotated[SrsranCellSpec, Tag("srsran")]
    | Annotated[SrsranZmqCellSpec, Tag("srsran-zmq")],
    Discriminator(
        _kind,
        custom_error_type="cell_kind",
        custom_error_message="kind must be 'virtual', 'srsran' or 'srsran-zmq'",
    ),
]
# Union tags left out of error locations: `cell.n_prb`, not `cell.srsran.n_prb`.
HIDDEN_TAGS = (*CELL_TRACE_TAGS, *DISCIPLINE_TAGS, *bridge.TRACE_TAGS, "virtual", "srsran", "srsran-zmq")
