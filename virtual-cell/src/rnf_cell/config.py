"""The virtual cell's configuration: one validated structure, loaded from TOML with errors naming file and field."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, model_validator
from rnf_foundation.config import Strict, file_or_generator, read_toml, resolve_paths, validate
from rnf_foundation.endpoints import Endpoint
from rnf_foundation.numbers import Seed
from rnf_telemetry.transport import DEFAULT_ENDPOINT

# Bounds that keep a trace what the datapath reads: at most an hour of 1 ms TTIs, and bytes per TTI far below the
# uint32 outage marker (100 Gbit/s is 12.5 MB per TTI, above any cellular link; 34 Tbit/s would wrap to 0).
MAX_TRACE_S = 3600.0
MAX_RATE_MBPS = 100_000.0
MAX_DELAY_MS = 60_000.0
Rate = Annotated[float, Field(ge=0, le=MAX_RATE_MBPS, description="Mbit/s")]
PositiveRate = Annotated[float, Field(gt=0, le=MAX_RATE_MBPS, description="Mbit/s")]
TraceSeconds = Annotated[float, Field(ge=0.001, le=MAX_TRACE_S, description="s, 1 ms to an hour")]
Delay = Annotated[float, Field(ge=0, le=MAX_DELAY_MS, description="ms")]


class TraceFile(Strict):
    """A capacity trace read from a file (formats in virtual-cell/README.md)."""

    file: Path
    format: Literal["csv", "mahimahi", "telemetry"] = "csv"
    scale: float = Field(default=1.0, gt=0, le=1000)
    # a later stretch of a long drive trace, without a cut copy of the file; the trace then loops over the rest
    start_s: float = Field(default=0.0, ge=0, le=MAX_TRACE_S, description="s into the file")


class ConstantTrace(Strict):
    generator: Literal["constant"]
    rate_mbps: Rate


class PiecewiseTrace(Strict):
    """Paper 000 Fig. 11: a rate drawn uniformly in [min, max] held for `period_s`, then drawn again."""

    generator: Literal["piecewise"]
    min_mbps: Rate
    max_mbps: PositiveRate
    period_s: TraceSeconds
    duration_s: TraceSeconds = 60.0

    @model_validator(mode="after")
    def _ordered(self) -> PiecewiseTrace:
        if self.min_mbps > self.max_mbps:
            raise ValueError("min_mbps is above max_mbps")
        return self


class OnOffTrace(Strict):
    """A constant rate interrupted by outages: `on_s` at `rate_mbps`, then `off_s` of outage."""

    generator: Literal["onoff"]
    rate_mbps: PositiveRate
    on_s: TraceSeconds
    off_s: TraceSeconds


class MarkovTrace(Strict):
    """A two-state (good/bad) Markov channel with exponentially distributed sojourn times."""

    generator: Literal["markov"]
    good_mbps: Rate
    bad_mbps: Rate
    mean_good_s: TraceSeconds
    mean_bad_s: TraceSeconds
    duration_s: TraceSeconds = 60.0


class RayleighTrace(Strict):
    """Rayleigh fast fading at the Doppler of `speed_kmh` (Jakes' sum of sinusoids), around `mean_snr_db`, mapped
    to a rate over `bandwidth_mhz` by 3GPP TR 36.942's attenuated Shannon bound (0.6 log2(1 + SNR), nothing below
    -10 dB, at most 4.4 bit/s/Hz)."""

    generator: Literal["rayleigh"]
    mean_snr_db: float = Field(ge=-10, le=40)
    speed_kmh: float = Field(ge=0, le=1000)
    carrier_ghz: float = Field(default=2.0, gt=0, le=100)
    bandwidth_mhz: float = Field(default=5.0, gt=0, le=1000)
    duration_s: TraceSeconds = 60.0


TraceSpec = Annotated[
    Annotated[TraceFile, Tag("file")]
    | Annotated[ConstantTrace, Tag("constant")]
    | Annotated[PiecewiseTrace, Tag("piecewise")]
    | Annotated[OnOffTrace, Tag("onoff")]
    | Annotated[MarkovTrace, Tag("markov")]
    | Annotated[RayleighTrace, Tag("rayleigh")],
    Discriminator(
        file_or_generator,
        custom_error_type="trace_kind",
        custom_error_message="a trace needs `file = ...` or `generator = constant|piecewise|onoff|markov|rayleigh`",
    ),
]
TRACE_TAGS = ("file", "constant", "piecewise", "onoff", "markov", "rayleigh")


class Outage(Strict):
    """A radio outage laid over the UE's trace: no capacity and the outage flag, from `start_s` for `duration_s`,
    within the first hour (the trace is unrolled as far as the last outage reaches)."""

    start_s: float = Field(ge=0, le=MAX_TRACE_S)
    duration_s: TraceSeconds

    @model_validator(mode="after")
    def _within_an_hour(self) -> Outage:
        if self.start_s + self.duration_s > MAX_TRACE_S:
            raise ValueError(f"the outage ends after {MAX_TRACE_S:.0f} s")
        return self


# A discipline's times: at least the datapath's 1 us resolution, at most a delay's 60 s.
DisciplineTime = Annotated[float, Field(ge=0.001, le=MAX_DELAY_MS, description="ms")]


class TailDrop(Strict):
    """The RLC queue drops at its limits and nothing else (as srsenb's)."""

    kind: Literal["tail_drop"]


class CoDel(Strict):
    """RFC 8289 at the RLC queue, decided when an SDU starts being transmitted: ECN-capable packets are marked CE
    where CoDel would drop; defaults as the RFC's (its Sec. 4.2, 4.3)."""

    kind: Literal["codel"]
    target_ms: DisciplineTime = 5.0
    interval_ms: DisciplineTime = 100.0

    @model_validator(mode="after")
    def _target_below_interval(self) -> CoDel:
        if round(self.target_ms * 1000) >= round(self.interval_ms * 1000):
            raise ValueError("target_ms must be below interval_ms")
        return self


class Mark(Strict):
    """L4Span's (CoNEXT 2025) marking: an arriving ECN-capable packet whose predicted queueing delay (bytes queued
    ahead over the UE's served rate) is above `threshold_ms` is marked CE, or with `ack_ece` the UE's next ACK of
    its flow gets ECE. 15 ms: the queue CUBIC needs to stay busy after a decrease on the default 30 ms path."""

    kind: Literal["mark"]
    threshold_ms: DisciplineTime = 15.0
    ack_ece: bool = False


QueueDiscipline = Annotated[
    Annotated[TailDrop, Tag("tail_drop")] | Annotated[CoDel, Tag("codel")] | Annotated[Mark, Tag("mark")],
    Discriminator(
        lambda data: data.get("kind") if isinstance(data, dict) else getattr(data, "kind", None),
        custom_error_type="queue_discipline_kind",
        custom_error_message="a queue discipline needs `kind = tail_drop|codel|mark`",
    ),
]
DISCIPLINE_TAGS = ("tail_drop", "codel", "mark")


class AckRegulator(Strict):
    """Paper 003's ACK Regulator at the base station (datapath/src/ackreg.rs): holds the UE's uplink TCP ACKs while
    the data they would clock out, forecast one measured round trip ahead, would overflow the RLC queue less
    `headroom_bytes` (default a tenth of `queue_limit_bytes`); an ACK waits at most `max_hold_rtts` round trips, or,
    if its flow is ECN-capable, until what it clocks out fits under the limit itself."""

    headroom_bytes: int | None = Field(default=None, ge=0)
    max_hold_rtts: float = Field(default=1.0, gt=0, le=100, allow_inf_nan=False)
    initial_rtt_ms: float = Field(default=100.0, ge=0.001, le=MAX_DELAY_MS, allow_inf_nan=False)


class UplinkTrace(Strict):
    """A UE's uplink transmissions replayed from a capture (virtual-cell/README.md, "Uplink traces")."""

    file: Path


class UeConfig(Strict):
    trace: TraceSpec
    ip: ipaddress.IPv4Address | None = None
    rnti: int | None = Field(default=None, ge=1, le=0xFFF3)
    lcid: int = Field(default=3, ge=1, le=10)
    backhaul_delay_ms: Delay = 10.0
    delivery_delay_ms: Delay = 0.0
    uplink_delay_ms: Delay = 10.0
    uplink_sr_period_ms: float = Field(default=0.0, ge=0, le=1000, allow_inf_nan=False)
    uplink_grant_period_ms: float = Field(default=0.0, ge=0, le=1000, allow_inf_nan=False)
    uplink_grant_chain: float = Field(default=0.0, ge=0.0, lt=1.0)
    uplink_trace: UplinkTrace | None = None
    queue_limit_bytes: int = Field(default=300_000, ge=0)
    queue_limit_sdus: int = Field(default=0, ge=0)
    harq_bler: float = Field(default=0.0, ge=0.0, lt=1.0)
    harq_rtt_ms: float = Field(default=8.0, gt=0, le=MAX_DELAY_MS)
    discard_timer_ms: float = Field(default=0.0, ge=0, le=MAX_DELAY_MS, allow_inf_nan=False)
    queue_discipline: QueueDiscipline = TailDrop(kind="tail_drop")
    ack_regulator: AckRegulator | None = None
    outages: tuple[Outage, ...] = ()
    trace_start: Literal["cell", "first_packet"] = "cell"

    @model_validator(mode="after")
    def _has_a_limit(self) -> UeConfig:
        if self.queue_limit_bytes == 0 and self.queue_limit_sdus == 0:
            raise ValueError("the RLC queue needs a limit: set queue_limit_bytes or queue_limit_sdus")
        return self

    @model_validator(mode="after")
    def _chained_grants_have_their_periods(self) -> UeConfig:
        if self.uplink_grant_chain > 0 and (self.uplink_grant_period_ms == 0 or self.uplink_sr_period_ms == 0):
            raise ValueError("uplink_grant_chain needs uplink_grant_period_ms and uplink_sr_period_ms")
        return self

    @model_validator(mode="after")
    def _one_uplink_model(self) -> UeConfig:
        if self.uplink_trace is not None and self.uplink_sr_period_ms > 0:
            raise ValueError("uplink_trace replays the transmissions: it excludes uplink_sr_period_ms")
        return self

    @model_validator(mode="after")
    def _regulator_has_a_limit(self) -> UeConfig:
        regulator = self.ack_regulator
        if regulator is None:
            return self
        if self.queue_limit_bytes == 0:
            raise ValueError("ack_regulator needs queue_limit_bytes, the limit it keeps the queue under")
        if regulator.headroom_bytes is not None and regulator.headroom_bytes >= self.queue_limit_bytes:
            raise ValueError(
                f"ack_regulator.headroom_bytes must be below queue_limit_bytes ({self.queue_limit_bytes}),"
                f" got {regulator.headroom_bytes}"
            )
        return self


class WiredConfig(Strict):
    """The wired path between the server and the core (the proxy's wired side)."""

    rate_mbps: float = Field(default=1000.0, ge=0.001, le=MAX_RATE_MBPS, description="Mbit/s")
    delay_ms: Delay = 5.0
    queue_bytes: int = Field(default=2_000_000, gt=0)


class ImpairmentConfig(Strict):
    """Telemetry impairments, to test controllers' robustness. All off by default."""

    delay_ms: Delay = 0.0
    jitter_ms: Delay = 0.0
    loss: float = Field(default=0.0, ge=0.0, le=1.0)
    duplicate: float = Field(default=0.0, ge=0.0, le=1.0)
    stale: float = Field(default=0.0, ge=0.0, le=1.0)
    stale_periods: int = Field(default=5, ge=1)
    blackouts: tuple[Outage, ...] = ()


class TelemetryConfig(Strict):
    endpoint: Endpoint = DEFAULT_ENDPOINT
    period_ms: int = Field(default=10, ge=1, le=10_000)
    impairments: ImpairmentConfig = ImpairmentConfig()


class CellConfig(Strict):
    cell_id: int = Field(default=1, ge=0, le=0xFFFFFFFF)
    namespace_prefix: str = Field(default="rnf", pattern=r"^[a-z][a-z0-9]{0,7}$")
    scheduler: Literal["dedicated", "round_robin", "max_ci", "proportional_fair"] = "dedicated"
    pf_window_ttis: int = Field(default=100, ge=1)
    prb: int = Field(default=100, ge=6, le=100)
    seed: Seed = 1
    realtime_priority: int = Field(default=10, ge=0, le=99)
    keep_cpus_awake: bool = True
    packet_log: bool = True
    wired: WiredConfig = WiredConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    ues: list[UeConfig] = Field(min_length=1, max_length=64)

    @model_validator(mode="after")
    def _unique_ues(self) -> CellConfig:
        addresses = [str(ip) for ip in self.ue_ips()]
        if len(set(addresses)) != len(addresses):
            raise ValueError(f"two UEs share an IP address: {addresses}")
        rntis = self.rntis()
        if len(set(rntis)) != len(rntis):
            raise ValueError(f"two UEs share an RNTI: {rntis}")
        return self

    def ue_ips(self) -> list[ipaddress.IPv4Address]:
        """UE addresses: as configured, else 172.16.0.2, .3, ... as srsepc hands them out."""
        return [ue.ip or ipaddress.IPv4Address("172.16.0.2") + i for i, ue in enumerate(self.ues)]

    def rntis(self) -> list[int]:
        """RNTIs: as configured, else 0x46, 0x47, ... as srsenb assigns them."""
        return [ue.rnti or 0x46 + i for i, ue in enumerate(self.ues)]


def parse_cell(data: dict[str, Any], source: str) -> CellConfig:
    return validate(CellConfig, data, source, (*TRACE_TAGS, *DISCIPLINE_TAGS))


def load_cell(path: Path) -> CellConfig:
    """A cell file (TOML); trace files are relative to it."""
    return parse_cell(resolve_paths(read_toml(path), path.parent), str(path))
