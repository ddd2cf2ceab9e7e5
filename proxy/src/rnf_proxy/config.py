"""The proxy's configuration: one validated structure, read from TOML, errors naming the file and the field.

```toml
namespace = "rnf-core"            # where the proxy relays (the cell's core); none: the current namespace
mode = "transparent"              # or "explicit": listen = "127.0.0.1:8080", server = "10.20.0.2:5201"
ue_networks = ["172.16.0.0/24"]

[controller]                      # smvs | rnf | itcp | clamp | ewma | fixed, with their parameters
kind = "smvs"
b_max_bytes = 300000

[telemetry]
endpoint = "tcp://127.0.0.1:5555"

[buffers]                         # the proxy's memory: per connection, per UE, in total
connection_bytes = 524288
```
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator
from rnf_foundation.config import Strict, read_toml, validate
from rnf_foundation.endpoints import ConnectEndpoint, HostPort, parse_address
from rnf_telemetry.transport import DEFAULT_ENDPOINT, CurveKeys

from rnf_proxy.clamp import ClampConfig
from rnf_proxy.ewma import EwmaConfig
from rnf_proxy.fixed import FixedConfig
from rnf_proxy.itcp import ItcpConfig
from rnf_proxy.rnf import RnfConfig
from rnf_proxy.smvs import SmvsConfig

ControllerConfig = Annotated[
    SmvsConfig | RnfConfig | ItcpConfig | ClampConfig | EwmaConfig | FixedConfig, Field(discriminator="kind")
]


class TelemetryConfig(Strict):
    """Where the eNB publishes (telemetry/SPEC.md), which bearer carries the UE's traffic, CURVE keys."""

    endpoint: ConnectEndpoint = DEFAULT_ENDPOINT
    cell_id: int | None = Field(default=None, ge=0, description="only this cell; default: every cell")
    lcid: int = Field(default=3, ge=0, le=255, description="the data radio bearer (3 in srsRAN)")
    curve_public_key: str | None = None
    curve_secret_key: str | None = None
    curve_server_key: str | None = None

    @model_validator(mode="after")
    def _curve_complete(self) -> TelemetryConfig:
        keys = (self.curve_public_key, self.curve_secret_key, self.curve_server_key)
        if any(keys) and not all(keys):
            raise ValueError("CURVE needs curve_public_key, curve_secret_key and curve_server_key together")
        return self

    def curve(self) -> CurveKeys | None:
        if not self.curve_public_key:
            return None
        assert self.curve_secret_key and self.curve_server_key
        return CurveKeys(self.curve_public_key.encode(), self.curve_secret_key.encode(), self.curve_server_key.encode())


class TrafficClass(Strict):
    """Connections to these server ports (none: any) get this priority (lower first) and these tickets."""

    ports: list[int] = Field(default_factory=list)
    priority: int = Field(default=1, ge=0)
    tickets: int = Field(default=100, ge=1)


class SchedulingConfig(Strict):
    """How a UE's allowance is shared among its connections (paper 004: stride scheduling and priority)."""

    quantum_bytes: int = Field(default=16_384, ge=1)
    classes: list[TrafficClass] = Field(default_factory=list)

    def classify(self, server_port: int) -> TrafficClass:
        for traffic_class in self.classes:
            if not traffic_class.ports or server_port in traffic_class.ports:
                return traffic_class
        return TrafficClass()


class BufferConfig(Strict):
    """The proxy's memory for data in transit (pipes and receive windows), bytes."""

    connection_bytes: int = Field(default=512 * 1024, ge=16 * 1024, description="per connection and direction")
    ue_bytes: int = Field(default=4 * 1024 * 1024, ge=16 * 1024, description="all connections of one UE")
    total_bytes: int = Field(default=256 * 1024 * 1024, ge=16 * 1024, description="the whole proxy")
    free_notsent_bytes: int = Field(
        default=256 * 1024, ge=4096, description="itcp: unsent bytes kept in a socket (TCP_NOTSENT_LOWAT)"
    )


class KernelConfig(Strict):
    """What the proxy sets in its namespace when a controller owns the window (every kind but itcp)."""

    tune: bool = True
    initcwnd_segments: int = Field(default=1000, ge=10, description="route initcwnd toward the UEs")
    rto_max_s: float = Field(default=1.0, ge=1.0, le=120.0, description="TCP_RTO_MAX_MS on UE sockets")
    congestion: Literal["cubic", "reno"] = "cubic"


class ProxyConfig(Strict):
    namespace: str | None = None
    mode: Literal["transparent", "explicit"] = "transparent"
    listen: HostPort = Field(default="127.0.0.1:15001", description="listener; transparent: the TPROXY target")
    server: HostPort | None = Field(default=None, description="explicit mode: where every connection goes")
    ue_networks: list[str] = Field(default_factory=lambda: ["172.16.0.0/24"])
    ports: list[int] = Field(default=[], description="server ports to intercept; empty: all")
    controller: ControllerConfig = SmvsConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    scheduling: SchedulingConfig = SchedulingConfig()
    buffers: BufferConfig = BufferConfig()
    kernel: KernelConfig = KernelConfig()
    relay_threads: int = Field(default=1, ge=1, le=64, description="the relay engine's worker threads")
    realtime_priority: int = Field(
        default=5, ge=0, le=99, description="SCHED_FIFO priority of the loop thread (steps, release); 0: normal"
    )
    pump_interval_s: float = Field(default=0.001, gt=0, le=0.1, description="window refill when window-limited")
    peer_timeout_s: float = Field(default=60.0, ge=1.0, description="a vanished peer is dropped after this")
    allow_broken_params: bool = Field(default=False, description="warn instead of refusing (rnf params check)")

    @field_validator("ue_networks")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        return [str(ipaddress.ip_network(net, strict=False)) for net in value]

    @model_validator(mode="after")
    def _mode_fields(self) -> ProxyConfig:
        if self.mode == "explicit":
            if self.server is None:
                raise ValueError("explicit mode needs server = 'host:port'")
        elif self.server is not None:
            raise ValueError("server is only for explicit mode")
        return self

    @property
    def listen_address(self) -> tuple[str, int]:
        return parse_address(self.listen)

    @property
    def server_address(self) -> tuple[str, int] | None:
        return parse_address(self.server) if self.server else None

    @property
    def controller_step_s(self) -> float | None:
        """The controller's step Ts, one per telemetry report; None for a controller without one (itcp)."""
        step = getattr(self.controller, "ts_s", None)
        return None if step is None else float(step)

    @property
    def tick_s(self) -> float:
        """The proxy's step: the controller's Ts (the telemetry period), 10 ms when it has none."""
        step = self.controller_step_s
        return 0.01 if step is None else step

    @property
    def owns_window(self) -> bool:
        """Every controller but itcp decides what leaves; the kernel must not second-guess it."""
        return self.controller.kind != "itcp"


def parse(data: dict[str, Any], source: str) -> ProxyConfig:
    return validate(ProxyConfig, data, source)


def load(path: Path) -> ProxyConfig:
    """Read and validate a proxy configuration file."""
    return parse(read_toml(path), str(path))
