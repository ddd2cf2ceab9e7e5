"""Scenario files (experiments/scenarios/*.toml): one validated structure, with `--set key=value` overrides.

Two checks, both before anything starts or is written: `load_scenario` validates the structure (every field, every
sweep point) and reads nothing but the scenario file, so any machine can check any scenario; `check_inputs` reads
what a run needs from the machine: trace files (some are fetched, not committed) and a srsRAN build.
"""

from __future__ import annotations

import copy
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator
from rnf_cell import traces
from rnf_cell.config import AckRegulator, QueueDiscipline, TailDrop, TraceFile
from rnf_foundation.config import Strict, format_validation_error, read_toml, resolve_paths
from rnf_foundation.errors import UserError
from rnf_foundation.numbers import Seed
from rnf_proxy.config import ProxyConfig

from rnf_experiments.cells.spec import HIDDEN_TAGS as CELL_TAGS
from rnf_experiments.cells.spec import CellSpec, SrsranCellSpec, SrsranZmqCellSpec, VirtualCellSpec
from rnf_experiments.cells.stack import find_build

# Union tags left out of error locations: `traffic[0].start_s`, not `traffic[0].bulk.start_s`.
HIDDEN_TAGS = (*CELL_TAGS, "bulk", "upload", "web")


class TrafficBase(Strict):
    """What every traffic kind shares: which UEs (1-based; default all), when it starts, how many in parallel."""

    ues: list[int] | None = Field(default=None, min_length=1, description="1-based UE indices; default every UE")
    start_s: float = Field(default=0.0, ge=0.0, description="seconds after the arm's start")
    flows: int = Field(default=1, ge=1, le=100, description="parallel instances per UE")
    stagger_s: float = Field(default=0.0, ge=0.0, description="instance k of a UE starts k*stagger_s after the first")


class BulkTraffic(TrafficBase):
    """A download, server to UE, of `bytes` (0: for the rest of the arm's duration)."""

    kind: Literal["bulk"]
    bytes: int = Field(default=0, ge=0)


class UploadTraffic(TrafficBase):
    """An upload, UE to server, of `bytes` (0: for the rest of the arm's duration); measured at the server."""

    kind: Literal["upload"]
    bytes: int = Field(default=0, ge=0)


class WebTraffic(TrafficBase):
    """Web sessions: `pages` pages, each the objects of `objects_bytes` fetched over at most `parallel`
    connections at once, `think_s` between the end of a page and the next request (paper 001's web use case is
    one page of three objects)."""

    kind: Literal["web"]
    objects_bytes: list[Annotated[int, Field(gt=0)]] = Field(min_length=1)
    pages: int = Field(default=1, ge=1)
    parallel: int = Field(default=6, ge=1, le=32)
    think_s: float = Field(default=0.0, ge=0.0)


Traffic = Annotated[BulkTraffic | UploadTraffic | WebTraffic, Field(discriminator="kind")]


class SweepPoint(Strict):
    """One point of a sweep that sets several values at once (`set`: dotted key -> value, as for --set)."""

    label: str = Field(min_length=1)
    set: dict[str, Any] = Field(min_length=1)


class Sweep(Strict):
    """One parameter varied across runs: every arm runs once per point. Either `keys` (dotted paths, as for
    --set) all set to each of `values`, or `points`, each setting its own keys; `parameter` names it in tables
    and plots."""

    parameter: str = Field(min_length=1)
    keys: list[str] = Field(default_factory=list)
    values: list[Any] = Field(default_factory=list)
    points: list[SweepPoint] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_form(self) -> Sweep:
        if bool(self.points) == bool(self.keys or self.values):
            raise ValueError("give either keys and values, or points")
        if not self.points and not (self.keys and self.values):
            raise ValueError("keys and values go together")
        return self

    def settings(self) -> list[tuple[Any, dict[str, Any]]]:
        """(label, {dotted key: value}) per point, in the order given."""
        if self.points:
            return [(point.label, point.set) for point in self.points]
        return [(value, dict.fromkeys(self.keys, value)) for value in self.values]


class Arm(Strict):
    """One thing compared.

    `e2e`: end-to-end TCP, the server's congestion control `cc`, no proxy. `cc = "dctcp"` (end to end only) is
    RFC 8257's scalable sender, the kernel's or a BPF program where it has none (`rnf_experiments.congestion`); the
    UE's socket runs it too, to echo CE per segment. `proxy`: the split proxy in the core with `controller` (a
    controller table of proxy/README.md, e.g. `{ kind = "smvs" }`) and any further proxy settings in `proxy`; `cc`
    is then the server's algorithm on the wired side.

    `queue_discipline` (virtual cell only): the RLC queue discipline of every UE of the cell for this arm, as a
    UE's `queue_discipline` (virtual-cell/README.md); unset, each UE keeps the cell file's. `ecn`: TCP negotiates
    ECN (`net.ipv4.tcp_ecn` 1 in the server's, the core's and the UEs' namespaces, else 0); unset, on exactly when
    the arm's cell can mark (a discipline other than `tail_drop` on some UE, or an ACK Regulator, which sets ECE)
    or its `cc` is `dctcp`.
    `ack_regulator` (virtual cell only): paper 003's ACK Regulator on every UE for this arm, as a UE's
    `ack_regulator` (`{}` for its defaults).
    """

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    kind: Literal["e2e", "proxy"] = "e2e"
    cc: Literal["cubic", "bbr", "reno", "dctcp"] = "cubic"
    controller: dict[str, Any] | None = None
    proxy: dict[str, Any] = Field(default_factory=dict)
    queue_discipline: QueueDiscipline | None = None
    ecn: bool | None = None
    ack_regulator: AckRegulator | None = None

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


def proxy_config(
    arm: Arm, namespace: str | None, endpoint: str, telemetry_period_s: float | None = None
) -> ProxyConfig:
    """The proxy of a proxy arm, in the cell's core namespace, subscribed to the cell's telemetry. A controller
    with a step Ts (`ts_s`) that does not state one steps at `telemetry_period_s`, the cell's report period: it
    takes one step per report."""
    data = arm.proxy | {"namespace": namespace, "controller": arm.controller, "telemetry": {"endpoint": endpoint}}
    try:
        config = ProxyConfig.model_validate(data)
        if telemetry_period_s is not None and arm.controller is not None and "ts_s" not in arm.controller:
            if config.controller_step_s is not None:
                data["controller"] = arm.controller | {"ts_s": telemetry_period_s}
                config = ProxyConfig.model_validate(data)
    except ValidationError as error:
        raise ValueError(format_validation_error(f"arms.{arm.name}", error)) from None
    return config


def telemetry_period(cell: CellSpec) -> tuple[float, str]:
    """How often the cell reports each UE, in seconds, and the scenario key that sets it."""
    if isinstance(cell, VirtualCellSpec):
        return cell.telemetry.period_ms / 1000, "cell.telemetry.period_ms"
    return cell.telemetry_period_ms / 1000, "cell.telemetry_period_ms"


class Execution(Strict):
    """`[execution]`: where a scenario's blocks may run on a cluster (`rnf run --scheduler`). `require` names Dask
    worker resources a node must offer, e.g. `{ usrp = 1 }` for a radio; a local run ignores it."""

    require: dict[Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")], Annotated[float, Field(gt=0)]] = (
        Field(default_factory=dict)
    )


def _backlogged_download() -> Traffic:
    return BulkTraffic(kind="bulk")


class Scenario(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    duration_s: float = Field(gt=0, le=3600)
    repetitions: int = Field(default=1, ge=1, le=100)
    seed: Seed = 1
    cell: CellSpec
    traffic: list[Traffic] = Field(default_factory=lambda: [_backlogged_download()], min_length=1)
    arms: list[Arm] = Field(min_length=1)
    sweep: Sweep | None = None
    execution: Execution = Field(default_factory=Execution)

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        names = [arm.name for arm in self.arms]
        if len(set(names)) != len(names):
            raise ValueError(f"arm names must be unique: {names}")
        for index, traffic in enumerate(self.traffic):
            for ue in traffic.ues or []:
                if not 1 <= ue <= len(self.cell.ues):
                    raise ValueError(f"traffic[{index}].ues: UE {ue} is not one of the cell's {len(self.cell.ues)}")
            if traffic.start_s >= self.duration_s:
                raise ValueError(f"traffic[{index}].start_s: {traffic.start_s} s is not before duration_s")
        period_s, period_key = telemetry_period(self.cell)
        for index, arm in enumerate(self.arms):
            stated_ts = (arm.controller or {}).get("ts_s")
            if stated_ts is not None and not math.isclose(float(stated_ts), period_s, rel_tol=1e-9):
                raise ValueError(
                    f"arms[{index}].controller.ts_s: {float(stated_ts):g} s is not the cell's report period, "
                    f"{period_s * 1000:g} ms ({period_key}); the controller takes one step per report: set both, "
                    "or leave ts_s unset to follow the cell"
                )
            if arm.cc == "dctcp" and arm.kind == "proxy":
                raise ValueError(
                    f"arms[{index}].cc: 'dctcp' needs its receiver to run it too, and the proxy's socket does not; "
                    "use it end to end (kind = 'e2e')"
                )
            if arm.queue_discipline is not None and not isinstance(self.cell, VirtualCellSpec):
                raise ValueError(
                    f"arms[{index}].queue_discipline: the {self.cell.kind} cell has no queue discipline to set "
                    "(srsenb's RLC queue drops at its tail only); the virtual cell has"
                )
            if arm.ack_regulator is not None and not isinstance(self.cell, VirtualCellSpec):
                raise ValueError(
                    f"arms[{index}].ack_regulator: the {self.cell.kind} cell has no ACK Regulator (srsenb passes the "
                    "UE's ACKs as they come); the virtual cell has"
                )
            if arm.ecn and not arm_marks(self.cell, arm):
                why = (
                    "no UE has a queue discipline other than tail_drop"
                    if isinstance(self.cell, VirtualCellSpec)
                    else "srsenb has no queue discipline"
                )
                raise ValueError(
                    f"arms[{index}].ecn: the arm's {self.cell.kind} cell cannot mark ({why}), so ECN would never "
                    "signal; set a marking queue_discipline or leave ecn unset"
                )
        return self


def arm_cell(cell: CellSpec, arm: Arm) -> CellSpec:
    """The cell as `arm` runs it: its queue discipline and ACK Regulator, if it states them, on every UE."""
    update: dict[str, Any] = {}
    if arm.queue_discipline is not None:
        update["queue_discipline"] = arm.queue_discipline
    if arm.ack_regulator is not None:
        update["ack_regulator"] = arm.ack_regulator
    if not update or not isinstance(cell, VirtualCellSpec):
        return cell
    return cell.model_copy(update={"ues": [ue.model_copy(update=update) for ue in cell.ues]})


def arm_marks(cell: CellSpec, arm: Arm) -> bool:
    """Whether some UE of the arm's cell has a discipline that can mark CE or set ECE (codel, mark), or an ACK
    Regulator (it sets ECE on an ACK it held its longest)."""
    cell = arm_cell(cell, arm)
    return isinstance(cell, VirtualCellSpec) and any(
        not isinstance(ue.queue_discipline, TailDrop) or ue.ack_regulator is not None for ue in cell.ues
    )


def arm_ecn(cell: CellSpec, arm: Arm) -> bool:
    """Whether TCP negotiates ECN in the arm's run: as it states, else where its cell can mark or its sender is
    DCTCP (which is ECN's or Reno's)."""
    if arm.ecn is not None:
        return arm.ecn
    return arm.cc == "dctcp" or arm_marks(cell, arm)


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


def apply_override(data: dict[str, Any], path: list[str], value: Any, source: str, what: str = "--set") -> None:
    """Set the dotted `path` of `data` to `value`; `what` names the setting in errors (`--set`, a sweep point)."""
    node: Any = data
    key = ".".join(path)
    for depth, part in enumerate(path):
        where = ".".join(path[: depth + 1])
        last = depth == len(path) - 1
        if isinstance(node, list):
            if not (part.isascii() and part.isdigit()) or int(part) >= len(node):
                raise UserError(f"{what} {key}: {where} is not an index of {source}")
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
        else:
            raise UserError(f"{what} {key}: {'.'.join(path[:depth])} is {_kind_of(node)} in {source}, not a table")


def _kind_of(value: Any) -> str:
    return {str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(type(value), "a value")


def _resolve_sweep(data: dict[str, Any], base: Path) -> None:
    """A sweep's `...file` keys resolve from the scenario's folder, as the same keys elsewhere in the file do."""
    sweep = data.get("sweep")
    if not isinstance(sweep, dict):
        return
    keys, values = sweep.get("keys"), sweep.get("values")
    if isinstance(keys, list) and isinstance(values, list) and any(str(k).split(".")[-1] == "file" for k in keys):
        sweep["values"] = [str(base / v) if isinstance(v, str) else v for v in values]
    for point in sweep.get("points") or []:
        settings = point.get("set") if isinstance(point, dict) else None
        if isinstance(settings, dict):
            point["set"] = {
                k: str(base / v) if str(k).split(".")[-1] == "file" and isinstance(v, str) else v
                for k, v in settings.items()
            }


def describe(path: Path, overrides: list[str] = ()) -> str:  # type: ignore[assignment]
    """How errors name a scenario: its file, and the --set overrides applied to it."""
    return f"{path}" + (f" (with --set {', '.join(overrides)})" if overrides else "")


def load_scenario(path: Path, overrides: list[str] = ()) -> tuple[Scenario, dict[str, Any]]:  # type: ignore[assignment]
    """The scenario and the raw data it came from (after overrides), for metadata.json."""
    data = read_toml(path)
    for text in overrides:
        key, value = parse_override(text)
        apply_override(data, key, value, str(path))
    data = resolve_paths(data, path.parent)
    _resolve_sweep(data, path.parent)
    source = describe(path, overrides)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as error:
        raise UserError(format_validation_error(source, error, HIDDEN_TAGS)) from None
    expand(scenario, data, source)  # every value of a sweep must make a valid scenario, before anything runs
    return scenario, data


@dataclass(frozen=True)
class Variant:
    """The scenario as run for one point of its sweep (`parameter` and `value` None, `index` 0 without a sweep)."""

    parameter: str | None
    index: int
    value: Any
    scenario: Scenario
    data: dict[str, Any] = field(default_factory=dict, compare=False)  # the point's raw table, as validated

    @property
    def label(self) -> str:
        return "" if self.value is None else f"{self.value}"


def file_name_part(text: str) -> str:
    """`text` (a sweep point, whose value may be a path or any TOML value) as a file or folder name can hold it:
    every run of other characters than letters, digits and `._=-` becomes one `_`."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text)


def expand(scenario: Scenario, data: dict[str, Any], source: str) -> list[Variant]:
    """One variant per sweep point, each with the point's keys set and validated again."""
    sweep = scenario.sweep
    if sweep is None:
        return [Variant(None, 0, None, scenario, data)]
    variants = []
    for index, (label, settings) in enumerate(sweep.settings()):
        variant = copy.deepcopy({key: item for key, item in data.items() if key != "sweep"})
        where = f"{source} (sweep {sweep.parameter} = {label!r})"
        for key, value in settings.items():
            apply_override(variant, key.split("."), value, where, what="sweep key")
        try:
            variants.append(Variant(sweep.parameter, index, label, Scenario.model_validate(variant), variant))
        except ValidationError as error:
            raise UserError(format_validation_error(where, error, HIDDEN_TAGS)) from None
    return variants


def check_inputs(path: Path, scenario: Scenario, data: dict[str, Any], source: str, build: bool = True) -> None:
    """What a run of `scenario` (from the file `path`) reads besides the scenario, for every sweep point: each trace
    file must read as a trace, and a srsRAN cell needs SRSRAN_BUILD (unless `build` is False: a cluster's nodes
    have their own). A UserError `source: field: reason` otherwise."""
    checked: set[TraceFile] = set()  # a file shared by several sweep points is read once
    for variant in expand(scenario, data, source):
        where = f"{source} (sweep {variant.parameter} = {variant.value!r})" if variant.parameter else source
        cell = variant.scenario.cell
        if isinstance(cell, SrsranCellSpec | SrsranZmqCellSpec):
            if not build:
                continue
            found = find_build(os.environ.get("SRSRAN_BUILD"))
            if isinstance(found, str):
                raise UserError(f"{where}: cell.kind: {cell.kind!r} needs a patched srsRAN build: {found}")
            continue
        assert isinstance(cell, VirtualCellSpec)
        # a fetcher beside the scenario, or beside (or above) the folder of a trace it reads
        files = [ue.trace.file for ue in cell.ues if isinstance(ue.trace, TraceFile)]
        folders = {path.parent} | {file.parent for file in files} | {file.parent.parent for file in files}
        fetchers = sorted({fetcher for folder in folders for fetcher in folder.glob("fetch*.sh")})
        hint = f" ({', '.join(str(f) for f in fetchers)} fetches the traces)" if fetchers else ""
        try:
            traces.check_files(cell.ues, "cell.", hint, checked)
        except traces.TraceError as error:
            raise UserError(f"{where}: {error}") from None
