"""Helpers for tests that move samples between fake srsRAN radios through a real bridge."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zmq
from rnf_bridge.fake_radio import FakeRadio, Waveform, ramp
from rnf_bridge.plan import Plan, UePlan
from rnf_bridge.schedule import Schedule

REPOSITORY = Path(__file__).resolve().parents[2]
ANY_PORT = "tcp://127.0.0.1:0"


@pytest.fixture
def context() -> Iterator[zmq.Context[Any]]:
    context: zmq.Context[Any] = zmq.Context()
    yield context
    context.destroy(linger=0)


@dataclass
class Radios:
    """One fake srsenb and its fake srsue, bound and not yet started."""

    enb: FakeRadio
    ues: list[FakeRadio]

    def all(self) -> list[FakeRadio]:
        return [self.enb, *self.ues]

    def start(self, enb_rx: str, ue_rx: dict[str, str]) -> None:
        self.enb.start(enb_rx)
        for ue in self.ues:
            ue.start(ue_rx[ue.name])

    def join(self, timeout_s: float = 30.0) -> None:
        for radio in self.all():
            radio.join(timeout_s)

    def close(self) -> None:
        for radio in self.all():
            radio.close()


UE_WAVEFORMS = (ramp(1), ramp(1j))  # ue1 on the real axis, ue2 on the imaginary axis: their sum keeps both


@pytest.fixture
def make_radios(context: zmq.Context[Any]) -> Iterator[Any]:
    made: list[Radios] = []

    def make(
        ues: int = 2,
        *,
        block: int = 1000,
        subframes: int = 200,
        period_s: float | None = None,
        enb_waveform: Waveform | None = None,
    ) -> Radios:
        def radio(name: str, waveform: Waveform) -> FakeRadio:
            return FakeRadio(name, context, ANY_PORT, block=block, subframes=subframes, waveform=waveform)

        enb = FakeRadio(
            "srsenb",
            context,
            ANY_PORT,
            block=block,
            subframes=subframes,
            waveform=enb_waveform or ramp(1),
            lead=4,
            period_s=period_s,
        )
        radios = Radios(enb, [radio(f"ue{i + 1}", UE_WAVEFORMS[i]) for i in range(ues)])
        made.append(radios)
        return radios

    yield make
    for radios in made:
        radios.close()


def plan_for(radios: Radios, schedules: list[Schedule], sample_rate: float = 1e6, **fields: Any) -> Plan:
    """A plan for these radios: the bridge binds on free ports, each UE gets its schedule."""
    ues = tuple(
        UePlan(ue.name, ue.tx_endpoint, ANY_PORT, schedule) for ue, schedule in zip(radios.ues, schedules, strict=True)
    )
    return Plan(sample_rate, radios.enb.tx_endpoint, ANY_PORT, ues, control=ANY_PORT, **fields)


def indices(received: np.ndarray, amplitude: float | np.ndarray) -> np.ndarray:
    """Which ramp sample each received sample was, undoing the gain; exact while the ramp stays below 2**22."""
    return np.rint(received / amplitude).astype(np.int64)


@pytest.fixture
def rnf() -> Path:
    """The venv's `rnf` (the CLI runs in the venv, the flowgraph under /usr/bin/python3)."""
    path = REPOSITORY / ".venv" / "bin" / "rnf"
    if not path.exists():
        pytest.fail(f"{path} is missing: `make setup` builds the venv these tests drive the CLI through")
    return path
