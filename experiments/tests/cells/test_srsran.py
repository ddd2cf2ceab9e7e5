"""A srsRAN cell on a machine without a patched build: it says why, before it touches the network."""

import asyncio

import pytest
from rnf_experiments.cells.spec import SrsranCellSpec, SrsranZmqCellSpec, ZmqUeSpec
from rnf_experiments.cells.srsran import SrsranCell
from rnf_foundation.errors import UserError
from rnf_telemetry.record import NullRecorder


@pytest.mark.parametrize(
    "spec",
    [SrsranCellSpec(kind="srsran"), SrsranZmqCellSpec(kind="srsran-zmq", ues=[ZmqUeSpec(gain_db=0)])],
    ids=["srsran", "srsran-zmq"],
)
def test_without_srsran_build_the_cell_names_the_variable(spec, tmp_path, monkeypatch):
    monkeypatch.delenv("SRSRAN_BUILD", raising=False)
    with pytest.raises(UserError, match=rf"cell kind '{spec.kind}': SRSRAN_BUILD is not set"):
        asyncio.run(SrsranCell(spec, tmp_path, NullRecorder()).__aenter__())


def test_a_build_tree_without_the_patch_series_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("SRSRAN_BUILD", str(tmp_path))
    with pytest.raises(UserError, match=r"no CMakeCache\.txt, not a cmake build tree"):
        asyncio.run(SrsranCell(SrsranCellSpec(kind="srsran"), tmp_path / "run", NullRecorder()).__aenter__())
