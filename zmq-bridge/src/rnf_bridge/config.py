"""The bridge's configuration: one validated structure, loaded from TOML with errors naming the file and field.

It also derives what the radios on either side need: the plan the flowgraph runs (every trace resolved to a gain
schedule) and the `device_args` srsenb and each srsue must be started with.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)
from rnf_foundation.config import Strict, file_or_generator, read_toml, resolve_paths, validate
from rnf_foundation.endpoints import check_endpoint
from rnf_foundation.errors import UserError

from rnf_bridge import traces
from rnf_bridge.plan import Fading, Plan, UePlan
from rnf_bridge.schedule import Schedule, ScheduleError, Timeline

DEFAULT_CONTROL = "tcp://127.0.0.1:5560"
SEARCH_RATE = 1.92e6  # srsue searches cells at 1.92 MHz; srsRAN's ZeroMQ radio needs base_srate divisible by it
PRB_RATES = {6: 1.92e6, 15: 3.84e6, 25: 5.76e6, 50: 11.52e6, 75: 15.36e6, 100: 23.04e6}  # srsRAN's default rates
SCHEMES = ("tcp", "ipc")  # what srsRAN's ZeroMQ radio takes


def _bind(value: str) -> str:
    return check_endpoint(value, schemes=SCHEMES)


def _connect(value: str) -> str:
    return check_endpoint(value, connect=True, schemes=SCHEMES)


Endpoint = Annotated[str, AfterValidator(_bind)]
ConnectEndpoint = Annotated[str, AfterValidator(_connect)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Decibels = Annotated[float, Field(allow_inf_nan=False)]
# GNU Radio's channel blocks take their seed as a C int, and a UE's noise adds its index to the bridge's seed.
Seed = Annotated[int, Field(ge=0, le=2**31 - 1 - 64, description="a random generator's seed, 0 or more")]


class TraceFile(Strict):
    """A `time_s,gain_db` CSV file (relative to the configuration file)."""

    file: Path
    loop: bool = True


class PiecewiseTrace(Strict):
    """Paper 000 Fig. 11, in dB: a gain drawn uniformly in [min_db, max_db] every `period_s`, held in between."""

    generator: Literal["piecewise"]
    min_db: Decibels
    max_db: Decibels
    period_s: PositiveFloat
    duration_s: PositiveFloat = 60.0
    seed: Seed = 1

    @model_validator(mode="after")
    def _ordered(self) -> PiecewiseTrace:
        if self.min_db > self.max_db:
            raise ValueError("min_db is above max_db")
        if self.period_s > self.duration_s:
            raise ValueError("period_s is longer than duration_s")
        return self


class OnOffTrace(Strict):
    """`on_s` at `on_db`, then `off_s` at `off_db`; the default `off_db` is -inf, an outage with no signal at all."""

    generator: Literal["onoff"]
    on_s: PositiveFloat
    off_s: PositiveFloat
    on_db: Decibels = 0.0
    off_db: float = Field(default=-math.inf, lt=math.inf, allow_inf_nan=True)

    @field_validator("off_db", mode="before")
    @classmethod
    def _not_nan(cls, value: Any) -> Any:
        if isinstance(value, float) and math.isnan(value):  # before `lt`, which would call it too large
            raise ValueError("nan is not a gain: a number of dB, or -inf for no signal")
        return value


TraceSpec = Annotated[
    Annotated[TraceFile, Tag("file")]
    | Annotated[PiecewiseTrace, Tag("piecewise")]
    | Annotated[OnOffTrace, Tag("onoff")],
    Discriminator(
        file_or_generator,
        custom_error_type="trace_kind",
        custom_error_message="a trace needs `file = ...` or `generator = piecewise|onoff`",
    ),
]
TRACE_TAGS = ("file", "piecewise", "onoff")


class FadingConfig(Strict):
    """Flat fading from GNU Radio's sum-of-sinusoids model. For 3GPP EPA/EVA/ETU, use srsue's [channel.dl.fading]."""

    model: Literal["rayleigh", "rician"]
    doppler_hz: PositiveFloat
    k_factor: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    sinusoids: int = Field(default=8, ge=1, le=64)
    seed: Seed = 1

    @model_validator(mode="after")
    def _k_for_rician(self) -> FadingConfig:
        if self.model == "rician" and self.k_factor <= 0:
            raise ValueError("rician fading needs k_factor > 0 (the specular over the scattered power)")
        if self.model == "rayleigh" and self.k_factor != 0:
            raise ValueError("k_factor applies to rician fading only")
        return self


class EnbConfig(Strict):
    """srsenb's ports: `tx` is srsenb's tx_port (the bridge connects), `rx` the bridge binds for srsenb's rx_port."""

    tx: ConnectEndpoint = "tcp://127.0.0.1:2000"
    rx: Endpoint = "tcp://127.0.0.1:2001"
    noise_dbfs: Decibels | None = None


class UeConfig(Strict):
    """One srsue: its ports (default 2n01 for tx and 2n00 for rx for the n-th UE), its gain, noise and fading."""

    name: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_-]{0,15}$")
    tx: ConnectEndpoint | None = None
    rx: Endpoint | None = None
    gain_db: Decibels | None = None
    trace: TraceSpec | None = None
    noise_dbfs: Decibels | None = None
    fading: FadingConfig | None = None

    @model_validator(mode="after")
    def _one_gain(self) -> UeConfig:
        if self.gain_db is not None and self.trace is not None:
            raise ValueError("set gain_db or trace, not both")
        return self


class BridgeConfig(Strict):
    sample_rate: PositiveFloat
    control: Endpoint = DEFAULT_CONTROL
    peer_timeout_s: PositiveFloat = 5.0
    seed: Seed = 1
    enb: EnbConfig = EnbConfig()
    ues: list[UeConfig] = Field(min_length=1, max_length=16)

    @field_validator("sample_rate")
    @classmethod
    def _srsran_rate(cls, sample_rate: float) -> float:
        multiple = sample_rate / SEARCH_RATE
        if abs(multiple - round(multiple)) > 1e-9:
            rates = ", ".join(f"{rate / 1e6:g}e6 ({prb} PRB)" for prb, rate in PRB_RATES.items())
            raise ValueError(f"{sample_rate / 1e6:g}e6 is not a whole multiple of 1.92e6; srsRAN uses {rates}")
        return sample_rate

    @model_validator(mode="after")
    def _consistent(self) -> BridgeConfig:
        names = self.ue_names()
        if len(set(names)) != len(names):
            raise ValueError(f"two UEs share a name: {names}")
        endpoints = [self.control, self.enb.tx, self.enb.rx]
        for index in range(len(self.ues)):
            endpoints += self.ue_endpoints(index)
        used = [endpoint for endpoint in endpoints if not endpoint.endswith(":0")]
        if len(set(used)) != len(used):
            raise ValueError(f"two sockets share an endpoint: {sorted(e for e in used if used.count(e) > 1)[0]}")
        return self

    def ue_names(self) -> list[str]:
        return [ue.name or f"ue{index + 1}" for index, ue in enumerate(self.ues)]

    def ue_endpoints(self, index: int) -> tuple[str, str]:
        """(tx, rx) of the index-th UE: as configured, else tcp://127.0.0.1:2n01 and :2n00 (n = index + 1)."""
        ue = self.ues[index]
        base = 2000 + 100 * (index + 1)
        return ue.tx or f"tcp://127.0.0.1:{base + 1}", ue.rx or f"tcp://127.0.0.1:{base}"


def parse(data: dict[str, Any], source: str) -> BridgeConfig:
    return validate(BridgeConfig, data, source, TRACE_TAGS)


def load(path: Path) -> BridgeConfig:
    """A bridge file (TOML); trace files are relative to it."""
    return parse(resolve_paths(read_toml(path), path.parent), str(path))


def schedule_of(ue: UeConfig) -> Schedule:
    """The gain schedule a UE's configuration names (TraceError if its trace cannot be built)."""
    match ue.trace:
        case None:
            return Schedule.constant(ue.gain_db or 0.0)
        case TraceFile(file=file, loop=loop):
            return traces.read_csv(file, loop)
        case PiecewiseTrace(min_db=low, max_db=high, period_s=period, duration_s=duration, seed=seed):
            return traces.piecewise(low, high, period, duration, seed)
        case OnOffTrace(on_db=on_db, off_db=off_db, on_s=on_s, off_s=off_s):
            return traces.onoff(on_db, off_db, on_s, off_s)
    raise AssertionError(f"unhandled trace {ue.trace}")


def to_plan(config: BridgeConfig, source: str) -> Plan:
    """The plan the flowgraph runs; a trace that cannot be built is a UserError naming the file and field."""
    ues = []
    for index, (ue, name) in enumerate(zip(config.ues, config.ue_names(), strict=True)):
        try:
            schedule = schedule_of(ue)
            Timeline.starting_with(schedule, config.sample_rate)  # rows closer than one sample fail here
        except (traces.TraceError, ScheduleError) as error:
            raise UserError(f"{source}: ues[{index}].trace: {error}") from None
        tx, rx = config.ue_endpoints(index)
        fading = ue.fading
        ues.append(
            UePlan(
                name=name,
                tx=tx,
                rx=rx,
                schedule=schedule,
                noise_dbfs=ue.noise_dbfs,
                fading=Fading(fading.model, fading.doppler_hz, fading.k_factor, fading.sinusoids, fading.seed)
                if fading
                else None,
            )
        )
    return Plan(
        sample_rate=config.sample_rate,
        enb_tx=config.enb.tx,
        enb_rx=config.enb.rx,
        ues=tuple(ues),
        control=config.control,
        enb_noise_dbfs=config.enb.noise_dbfs,
        peer_timeout_s=config.peer_timeout_s,
        seed=config.seed,
    )


def _peer_side(endpoint: str) -> str:
    """The endpoint as the other side writes it: a wildcard bind address becomes loopback."""
    return re.sub(r"^tcp://(\*|0\.0\.0\.0):", "tcp://127.0.0.1:", endpoint)


def device_args(config: BridgeConfig) -> dict[str, str]:
    """The rf.device_args of srsenb (key "srsenb") and of each srsue (key: the UE's name) for this bridge."""
    rate = f"base_srate={round(config.sample_rate)}"
    args = {
        "srsenb": f"fail_on_disconnect=true,tx_port={config.enb.tx},rx_port={_peer_side(config.enb.rx)},id=enb,{rate}"
    }
    for index, name in enumerate(config.ue_names()):
        tx, rx = config.ue_endpoints(index)
        args[name] = f"tx_port={tx},rx_port={_peer_side(rx)},id={name},{rate}"
    return args
