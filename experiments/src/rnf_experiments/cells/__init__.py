"""The cells an arm runs on, behind one interface: the virtual cell, srsRAN on its ZeroMQ radio, srsRAN through the
GNU Radio bridge (`spec.py` validates the scenario's `[cell]`, `open_cell` makes the cell of one arm)."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Protocol

from rnf_cell.cell import VirtualCell
from rnf_cell.config import CellConfig
from rnf_telemetry.record import Recorder

from rnf_experiments.cells.spec import CellSpec, VirtualCellSpec
from rnf_experiments.cells.srsran import SrsranCell


class CellNames(Protocol):
    """The namespaces an arm uses: the traffic server's, the core (where a proxy relays) and each UE's."""

    @property
    def server(self) -> str: ...

    @property
    def core(self) -> str: ...

    def ue(self, index: int) -> str: ...


class Cell(Protocol):
    """What the runner needs of a cell, inside `async with`: its namespaces and where its telemetry is published
    (reachable from the runner's process); the cell records `telemetry` and `cell` to the run's recorder."""

    @property
    def names(self) -> CellNames: ...

    @property
    def telemetry_endpoint(self) -> str: ...

    async def __aenter__(self) -> Cell: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


def open_cell(spec: CellSpec, workdir: Path, recorder: Recorder, seed: int) -> Cell:
    """The cell of one arm (not started: enter it with `async with`); `seed` seeds a virtual cell's traces."""
    if isinstance(spec, VirtualCellSpec):
        config = CellConfig.model_validate(spec.model_dump(exclude={"kind"}) | {"seed": seed})
        return VirtualCell(config, workdir, recorder)
    return SrsranCell(spec, workdir, recorder)
