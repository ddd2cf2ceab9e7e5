"""Scenario files (experiments/scenarios/*.toml): one validated structure, with `--set key=value` overrides."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from rnf_cli.config import format_validation_error, read_toml, resolve_paths
from rnf_cli.errors import UserError
from rnf_proxy.config import ProxyConfig

from rnf_experiments.cells.spec import HIDDEN_TAGS, CellSpec


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Traffic(Strict):
    """Bulk downloads, server to UE: `bytes` each (0: for the whole duration), `flows_per_ue` in parallel."""

    kind: Literal["bulk"] = "bulk"
    bytes: int = Field(default=0, ge=0)
    flows_per_ue: int = Field(default=1, ge=1, le=100)
    stagger_s: float = Field(default=0.0, ge=0.0, description="start flow k of a UE k*stagger_s after the first")


class Arm(Strict):
    """One thing compared.

    `e2e`: end-to-end TCP, the server's congestion control `cc`, no proxy. `proxy`: the split proxy in the core
    with `controller` (a controller table of proxy/README.md, e.g. `{ kind = "smvs" }`) and any further proxy
    settings in `proxy`; `cc` is then the server's algorithm on the wired side.
    """

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    kind: Literal["e2e", "proxy"] = "e2e"
    cc: Literal["cubic", "bbr", "reno"] = "cubic"
    controller: dict[str, Any] | None = None
    proxy: dict[str, Any] = {}

    @model_validator(mode="after")
    def _proxy_fields(self) -> Arm:
        if self.kind == "e2e" and (self.controller is not None or self.proxy):
            raise ValueError(f"arm {self.name!r}: controller and proxy settings need kind = 'proxy'")
        if self.kind == "proxy":
            if self.controller is None:
                raise ValueError(f"arm {self.name!r}: a proxy arm needs controller = {{ kind = ... }}")
            if {"namespace", "telemetry", "controller"} & set(self.proxy):
                raise ValueError(f"arm {self.name!r}: proxy.namespace/telemetry/controller are set by the runner")
            proxy_config(self, namespace=None, endpoint="tcp://127.0.0.1:5555")
        return self


def proxy_config(arm: Arm, namespace: str | None, endpoint: str) -> ProxyConfig:
    """The proxy of a proxy arm, in the cell's core namespace, subscribed to the cell's telemetry."""
    data = arm.proxy | {"namespace": namespace, "controller": arm.controller, "telemetry": {"endpoint": endpoint}}
    try:
        return ProxyConfig.model_validate(data)
    except ValidationError as error:
        raise ValueError(format_validation_error(f"arms.{arm.name}", error)) from None


class Scenario(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    duration_s: float = Field(gt=0, le=3600)
    repetitions: int = Field(default=1, ge=1, le=100)
    seed: int = 1
    cell: CellSpec
    traffic: Traffic = Traffic()
    arms: list[Arm] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_arm_names(self) -> Scenario:
        names = [arm.name for arm in self.arms]
        if len(set(names)) != len(names):
            raise ValueError(f"arm names must be unique: {names}")
        return self


def parse_override(text: str) -> tuple[list[str], Any]:
    """`a.b.c=value` with a TOML value (numbers, booleans, strings, arrays); bare words are strings."""
    if "=" not in text:
        raise UserError(f"--set {text!r}: expected key=value")
    key, raw = text.split("=", 1)
    path = key.strip().split(".")
    if not all(path):
        raise UserError(f"--set {text!r}: empty key component")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return path, value


def apply_override(data: dict[str, Any], path: list[str], value: Any, source: str) -> None:
    node: Any = data
    for depth, part in enumerate(path[:-1]):
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise UserError(f"--set {'.'.join(path)}: {'.'.join(path[: depth + 1])} is not an index of {source}")
            node = node[int(part)]
        else:
            node = node.setdefault(part, {})
    last = path[-1]
    if isinstance(node, list):
        if not last.isdigit() or int(last) >= len(node):
            raise UserError(f"--set {'.'.join(path)}: no such list index in {source}")
        node[int(last)] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise UserError(f"--set {'.'.join(path)}: {'.'.join(path[:-1])} is not a table in {source}")


def load_scenario(path: Path, overrides: list[str] = ()) -> tuple[Scenario, dict[str, Any]]:  # type: ignore[assignment]
    """The scenario and the raw data it came from (after overrides), for metadata.json."""
    data = read_toml(path)
    for text in overrides:
        key, value = parse_override(text)
        apply_override(data, key, value, str(path))
    data = resolve_paths(data, path.parent)
    try:
        return Scenario.model_validate(data), data
    except ValidationError as error:
        source = f"{path}" + (f" (with --set {', '.join(overrides)})" if overrides else "")
        raise UserError(format_validation_error(source, error, HIDDEN_TAGS)) from None
