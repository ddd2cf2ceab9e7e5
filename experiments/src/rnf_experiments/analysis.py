"""Reading a results folder back and computing its metrics (the runner writes, this reads: Pantheon's split)."""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator
from rnf_foundation.config import format_validation_error
from rnf_foundation.errors import UserError

from rnf_experiments import lineprotocol, metrics

RUN_KEYS = ("arm", "repetition", "sweep")
PACKET_RECORD = np.dtype(
    [("ue", "<u2"), ("length", "<u2"), ("flags", "<u4"), ("arrival_ns", "<u8"), ("delivery_ns", "<u8")]
)
# packets.bin's flags (virtual-cell/datapath/INTERFACE.md, "Packet log")
PACKET_CE_MARKED = 0x01
PACKET_AQM_DROPPED = 0x02  # never delivered: not a delay sample
STALL_PERIODS = 2  # a controller's step this many periods after the last waited for the proxy (control.rs)
# the one-way delay's distribution in summary.json, every whole percent: the delay CDF plots draw it, and a goal's
# 95th percentile can be read beside its neighbours (on a trace that serves in bursts after long gaps the 95th
# may fall on a step of the distribution, where a percent of the SDUs more or less moves it by a gap)
DELAY_PERCENTILES = tuple(range(1, 100))


@dataclass(frozen=True)
class UeSeries:
    """One UE's cell reports over a run, one entry per telemetry period."""

    time_ns: npt.NDArray[np.int64]
    capacity_bytes: npt.NDArray[np.int64]
    delivered_bytes: npt.NDArray[np.int64]
    sched_bytes: npt.NDArray[np.int64]
    queue_bytes: npt.NDArray[np.int64]
    dropped_sdus: npt.NDArray[np.int64]
    grant_prbs: npt.NDArray[np.int64]  # 0 where the cell reports no resource blocks (cells/derive.py)
    capacity_prbs: npt.NDArray[np.int64]
    ttis: npt.NDArray[np.int64]  # the TTIs an eNB ran in the period, by its own count; 0 where not recorded


@dataclass(frozen=True)
class ControllerSeries:
    """One UE's controller steps as the proxy recorded them (grafana/SCHEMA.md, `controller`)."""

    time_ns: npt.NDArray[np.int64]
    w_bytes: npt.NDArray[np.float64]
    q_bytes: npt.NDArray[np.float64]
    q0_bytes: npt.NDArray[np.float64]
    band_bytes: npt.NDArray[np.float64]


@dataclass(frozen=True)
class Reference:
    """The queue reference a run is measured against, read from the arm's controller configuration (the
    scenario's), never from what the controller recorded of itself.

    `source` says where it comes from: `q0_bytes` (smvs) or `q_ref_bytes` (rnf), a constant in bytes;
    `target_ms`, a delay target, times the rate the cell served in each period; `controller` when the arm's
    RAN-feedback controller was given neither, so that its reference is a default it derives from what it
    measures (the forecast margin: what the link served beyond the controller's own forecast over its loop):
    the queue is then measured against the q0 the controller recorded, the one case where
    the analysis takes the controller's word; an empty string for arms without a queue reference (e2e, itcp,
    clamp, ewma). The band is the same rule for every arm, so that arms compare: half of min(reference,
    B_max - reference) but at least 3000 B, paper 000's rule (43) at half the margin and smvs's default band,
    with B_max the configured `b_max_bytes` (smvs) or else the queue limit the eNB reports; a configured `eps` does not
    change it (the band eps implies depends on the law's switching, the controller's business)."""

    source: str
    bytes: float = math.nan
    target_s: float = math.nan
    limit_bytes: float = math.nan  # configured B_max; NaN: the eNB's


def configured_reference(controller: dict[str, Any] | None) -> Reference:
    """The reference an arm's controller table (`[arms.controller]`) configures."""
    config = controller if isinstance(controller, dict) else {}
    kind = config.get("kind")
    if kind not in ("smvs", "rnf"):
        return Reference("")
    limit = float(config.get("b_max_bytes") or math.nan)
    bytes_key = "q0_bytes" if kind == "smvs" else "q_ref_bytes"
    if config.get(bytes_key) is not None:
        return Reference(bytes_key, bytes=float(config[bytes_key]), limit_bytes=limit)
    if config.get("target_ms") is not None:
        return Reference("target_ms", target_s=float(config["target_ms"]) / 1000, limit_bytes=limit)
    return Reference("controller", limit_bytes=limit)


@dataclass(frozen=True)
class ArmRun:
    """One arm in one repetition (and sweep value), as found in `runs/<folder>/` with its run.json."""

    description: dict[str, Any]
    directory: Path
    ues: dict[int, UeSeries]
    controllers: dict[int, ControllerSeries]
    flows: list[dict[str, Any]]
    packets: npt.NDArray[Any]
    netstat: dict[str, dict[str, int]]
    cell_summary: dict[str, Any]
    queue_limits: dict[int, int] = field(default_factory=dict)  # per UE, bytes, as the eNB's telemetry reports it
    cell_kind: str = "virtual"  # the scenario's cell kind, as the `cell` points are tagged

    @property
    def arm(self) -> str:
        return str(self.description["arm"])

    @property
    def complete(self) -> bool:
        """The runner marked the run complete; one it did not (stopped, crashed) is no measurement."""
        return self.description.get("complete") is True

    @property
    def repetition(self) -> int:
        return int(self.description["repetition"])

    @property
    def sweep_value(self) -> Any:
        sweep = self.description["sweep"]
        return None if sweep is None else sweep["value"]

    @property
    def sweep_index(self) -> int:
        sweep = self.description["sweep"]
        return 0 if sweep is None else int(sweep["index"])


@contextmanager
def reading(path: Path) -> Iterator[None]:
    """Turns what can go wrong reading a file of a results folder into a UserError naming it."""
    try:
        yield
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    except OSError as error:
        raise UserError(f"{path}: cannot read: {error.strerror}") from None


def read_json(path: Path, keys: tuple[str, ...] = ()) -> Any:
    """A JSON file of a results folder (an object with `keys` when any are given), or a UserError naming it."""
    with reading(path):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise UserError(f"{path}: not valid JSON: {error}") from None
    if keys and not isinstance(data, dict):
        raise UserError(f"{path}: not a JSON object")
    if missing := [key for key in keys if key not in data]:
        raise UserError(f"{path}: no {missing[0]!r}")
    return data


def read_points(path: Path, measurement: str) -> list[lineprotocol.Point]:
    """Every `measurement` point of a series.lp, or a UserError naming the file."""
    with reading(path):
        try:
            return list(lineprotocol.read(path, measurement))
        except UnicodeDecodeError:
            raise  # a ValueError too: `reading` names it
        except ValueError as error:
            raise UserError(f"{path}: not valid line protocol: {error}") from None


def load_series(path: Path) -> tuple[dict[int, UeSeries], str]:
    """The `cell` points per UE, and the cell kind they are tagged with ("virtual" when untagged)."""
    try:
        points = read_points(path, "cell")
        return _series(points), points[0].tags.get("cell_kind", "virtual") if points else "virtual"
    except KeyError as error:
        raise UserError(f"{path}: a cell point has no {error}") from None
    except ValueError as error:
        raise UserError(f"{path}: a cell point has a malformed value: {error}") from None


def _series(points: list[lineprotocol.Point]) -> dict[int, UeSeries]:
    columns: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for point in points:
        ue = int(point.tags["ue"])
        f = point.fields
        column = columns[ue]
        column["time_ns"].append(point.time_ns)
        column["capacity_bytes"].append(int(f["capacity_bytes"]))
        column["delivered_bytes"].append(int(f["delivered_bytes"]))
        column["sched_bytes"].append(int(f["sched_new_bytes"]) + int(f["sched_retx_bytes"]))
        column["queue_bytes"].append(int(f["queue_new_bytes"]) + int(f["queue_retx_bytes"]))
        column["dropped_sdus"].append(int(f["dropped_sdus"]))
        column["grant_prbs"].append(int(f.get("grant_prbs", 0)))
        column["capacity_prbs"].append(int(f.get("capacity_prbs", 0)))
        column["ttis"].append(int(f.get("ttis", 0)))
    return {
        ue: UeSeries(**{name: np.asarray(values, dtype=np.int64) for name, values in column.items()})
        for ue, column in sorted(columns.items())
    }


def load_controllers(path: Path) -> dict[int, ControllerSeries]:
    """The `controller` points per UE; fields a controller does not have (q0, band) are NaN."""
    columns: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for point in read_points(path, "controller"):
        if not point.tags.get("ue", "").isdigit():
            continue  # a UE outside the cell's address pool
        column = columns[int(point.tags["ue"])]
        column["time_ns"].append(point.time_ns)
        for name in ("w_bytes", "q_bytes", "q0_bytes", "band_bytes"):
            value = point.fields.get(name)
            column[name].append(float(value) if isinstance(value, int | float) else math.nan)
    return {
        ue: ControllerSeries(
            time_ns=np.asarray(column["time_ns"], dtype=np.int64),
            **{
                name: np.asarray(column[name], dtype=np.float64)
                for name in ControllerSeries.__annotations__
                if name != "time_ns"
            },
        )
        for ue, column in sorted(columns.items())
    }


def load_queue_limits(path: Path) -> dict[int, int]:
    """Per UE, the largest RLC queue limit the eNB's telemetry reported (bytes); UEs that report none are left
    out."""
    limits: dict[int, int] = {}
    for point in read_points(path, "telemetry"):
        ue, limit = point.tags.get("ue", ""), point.fields.get("queue_limit_bytes")
        if ue.isdigit() and isinstance(limit, int) and limit > 0:
            limits[int(ue)] = max(limits.get(int(ue), 0), limit)
    return limits


def read_packet_records(path: Path) -> npt.NDArray[Any]:
    """A packet log (PACKET_RECORD records: packets.bin, a srsRAN cell's uplink-packets.bin); none where the file is
    absent, a UserError naming it where it cannot be read or ends inside a record."""
    if not path.exists():
        return np.empty(0, PACKET_RECORD)
    try:
        size = path.stat().st_size
        if size % PACKET_RECORD.itemsize:
            raise UserError(
                f"{path}: {size} bytes, not a whole number of {PACKET_RECORD.itemsize}-byte packet records "
                "(cut off, or not a packet log)"
            )
        return np.fromfile(path, PACKET_RECORD)
    except (OSError, ValueError) as error:
        raise UserError(f"{path}: cannot read packet records: {error}") from None


def load_arm_run(directory: Path) -> ArmRun:
    """One run folder, every file checked: a UserError names the first that is missing or malformed."""
    description = read_json(directory / "run.json", RUN_KEYS)
    sweep = description["sweep"]
    if not isinstance(description["repetition"], int) or not (
        sweep is None or (isinstance(sweep, dict) and {"index", "value"} <= sweep.keys())
    ):
        raise UserError(f"{directory / 'run.json'}: repetition is not a number or sweep has no index and value")
    flows = [_read_checked(p, _FLOW_FILE) for p in sorted((directory / "flows").glob("*.json"))]
    packets = read_packet_records(directory / "packets.bin")
    packets = packets[(packets["flags"] & PACKET_AQM_DROPPED) == 0]
    netstat_path = directory / "netstat.json"
    cell_summary_path = directory / "cell-summary.json"
    ues, cell_kind = load_series(directory / "series.lp")
    return ArmRun(
        description=description,
        directory=directory,
        ues=ues,
        controllers=load_controllers(directory / "series.lp"),
        flows=flows,
        packets=packets,
        netstat=_read_checked(netstat_path, _NETSTAT_FILE) if netstat_path.exists() else {},
        cell_summary=_read_checked(cell_summary_path, _CELL_SUMMARY_FILE) if cell_summary_path.exists() else {},
        queue_limits=load_queue_limits(directory / "series.lp"),
        cell_kind=cell_kind,
    )


class _FlowFile(BaseModel):
    """A flows/*.json as traffic.py's FlowResult writes it: the fields the analysis reads, checked by type and range
    (JSON numbers are not taken for strings, nor strings for numbers); the others are kept as they are."""

    model_config = ConfigDict(extra="allow", strict=True)

    flow: str
    kind: Literal["bulk", "upload", "web"]
    ue: int = Field(ge=1)
    start_ns: int = Field(ge=0)
    first_byte_ns: int = Field(default=0, ge=0)
    last_byte_ns: int = Field(ge=0)
    received_bytes: int = Field(ge=0)
    requested_bytes: int = Field(ge=0)
    complete: bool
    error: str
    progress: list[Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)]]

    @field_validator("progress")
    @classmethod
    def _in_time_order(cls, progress: list[list[int]]) -> list[list[int]]:
        for number, (before, after) in enumerate(itertools.pairwise(progress), start=1):
            if after[0] < before[0]:
                raise ValueError(f"report {number}, at {after[0]} ns, comes before the one before it ({before[0]} ns)")
        return progress


class _LatenessFile(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    max: int = Field(ge=0)


class _DelayFile(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    lost: int | None = Field(default=None, ge=0)  # None: a capture's count was not known


class _CellSummaryFile(BaseModel):
    """cell-summary.json: the virtual cell's datapath summary or a srsRAN cell's delay counts; the fields the
    analysis reads, checked, the others kept."""

    model_config = ConfigDict(extra="allow", strict=True)

    tti_lateness_ns: _LatenessFile | None = None
    packet_log_dropped: int | None = Field(default=None, ge=0)
    delay: _DelayFile | None = None


class _SummaryFigures(BaseModel):
    """An arm's or a run's entry of summary.json: the figures other commands read back (`rnf frontier`, `rnf
    calibrate --check`, `rnf_experiments.goals`), checked by type; NaN where not measured or left out."""

    model_config = ConfigDict(extra="allow", strict=True)

    utilization: float = math.nan
    delay_p95_ms: float = math.nan
    queue_p50_bytes: float = math.nan
    queue_p95_bytes: float = math.nan
    rlc_drops_sdus: float = math.nan
    band_fraction: float = math.nan


class _SummaryFile(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    scenario: str | None = None
    arms: dict[str, _SummaryFigures]
    runs: list[_SummaryFigures] = []


_FLOW_FILE = TypeAdapter(_FlowFile)
_NETSTAT_FILE = TypeAdapter(dict[str, dict[str, Annotated[int, Field(ge=0)]]], config=ConfigDict(strict=True))
_CELL_SUMMARY_FILE = TypeAdapter(_CellSummaryFile)
_SUMMARY_FILE = TypeAdapter(_SummaryFile)


def _validated(path: Path, adapter: TypeAdapter[Any], data: Any) -> Any:
    """`data`, read from `path`, checked against its structure; a UserError names the file, the first field that is
    wrong and the reason (and how many more are)."""
    try:
        return adapter.validate_python(data)
    except ValidationError as error:
        first, *others = format_validation_error(str(path), error).splitlines()
        raise UserError(first + (f" (and {len(others)} more)" if others else "")) from None


def _read_checked(path: Path, adapter: TypeAdapter[Any]) -> dict[str, Any]:
    """A JSON object of a run folder, checked against its structure, as it was written."""
    data: dict[str, Any] = read_json(path)
    _validated(path, adapter, data)
    return data


def read_summary(path: Path) -> dict[str, Any]:
    """A results folder's summary.json, its figures checked (`rnf report` writes it) and NaN where left out; a
    UserError names the file and the first field that is wrong."""
    summary: dict[str, Any] = _SUMMARY_FILE.dump_python(_validated(path, _SUMMARY_FILE, read_json(path)))
    return summary


def busy(flows: list[dict[str, Any]], time_ns: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Which instants lie inside some transfer, from its first byte to its last: while its data could be at the
    eNB. Before the first byte reaches the UE, the handshake and the request are on their way and no sender can
    use the link (a flow that records no first byte counts from its connection attempt); a web session's think
    times and a late flow's wait are not inside either."""
    inside = np.zeros(time_ns.shape, dtype=bool)
    for flow in flows:
        if flow["last_byte_ns"]:
            start = flow.get("first_byte_ns") or flow["start_ns"]
            inside |= (time_ns > start) & (time_ns <= flow["last_byte_ns"])
    return inside


def busy_periods(flows: list[dict[str, Any]], time_ns: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """The periods a UE's figures count: those whose end falls inside a transfer (`busy`), but the first, which is
    partial."""
    inside = busy(flows, time_ns)
    first = np.flatnonzero(inside)
    if first.size:
        inside[first[0]] = False
    return inside


def _ue_metrics(
    series: UeSeries,
    flows: list[dict[str, Any]],
    controller: ControllerSeries | None,
    reference: Reference,
    queue_limit: float,
) -> dict[str, Any]:
    inside = busy_periods(flows, series.time_ns)
    queue = series.queue_bytes[inside]
    period_s = float(np.median(np.diff(series.time_ns))) / 1e9 if series.time_ns.size > 1 else math.nan
    sojourn = metrics.sojourn_ms(queue, series.capacity_bytes[inside], period_s)
    values = {
        "utilization": metrics.utilization(series.delivered_bytes[inside], series.capacity_bytes[inside]),
        "goodput_mbps": _aggregate_goodput_mbps(flows),
        "queue_p50_bytes": metrics.percentile(queue, 50),
        "queue_p95_bytes": metrics.percentile(queue, 95),
        "queue_max_bytes": float(queue.max()) if queue.size else math.nan,
        "sojourn_p50_ms": metrics.percentile(sojourn, 50),
        "sojourn_p95_ms": metrics.percentile(sojourn, 95),
        "queue_empty_fraction": metrics.empty_fraction(queue),
        "rlc_drops_sdus": int(series.dropped_sdus[inside].sum()),
        "reference_source": reference.source,
        "reference_p50_bytes": math.nan,
        "band_p50_bytes": math.nan,
        "band_fraction": math.nan,
        "settling_s": math.nan,
        "controller_band_fraction": math.nan,
        "controller_settling_s": math.nan,
    }
    if not flows:
        return values
    start_s = min(f["start_ns"] for f in flows) / 1e9
    q0 = _reference_bytes(reference, series, inside, period_s, controller)
    if q0 is not None:
        band = metrics.margin_band(q0, queue_limit if math.isnan(reference.limit_bytes) else reference.limit_bytes)
        in_band = metrics.band_membership(queue, q0, band)
        values["reference_p50_bytes"] = metrics.percentile(q0, 50)
        values["band_p50_bytes"] = metrics.percentile(band, 50)
        values["band_fraction"] = metrics.band_fraction(in_band)
        values["settling_s"] = metrics.settling_time_s(series.time_ns[inside] / 1e9, in_band, start_s)
    if controller is not None:
        steps = busy(flows, controller.time_ns)
        own = metrics.band_membership(controller.q_bytes, controller.q0_bytes, controller.band_bytes)[steps]
        values["controller_band_fraction"] = metrics.band_fraction(own)
        values["controller_settling_s"] = metrics.settling_time_s(controller.time_ns[steps] / 1e9, own, start_s)
    return values


def _reference_bytes(
    reference: Reference,
    series: UeSeries,
    inside: npt.NDArray[np.bool_],
    period_s: float,
    controller: ControllerSeries | None,
) -> npt.NDArray[np.float64] | None:
    """The configured reference in each busy period of the cell (bytes); None when the arm has none."""
    if reference.source == "target_ms":
        return metrics.delay_reference(series.sched_bytes[inside], period_s, reference.target_s)
    if reference.source == "controller":
        if controller is None:
            return None
        # the q0 of the controller's last step at or before the period's end
        index = np.searchsorted(controller.time_ns, series.time_ns[inside], side="right") - 1
        return np.where(index >= 0, controller.q0_bytes[np.maximum(index, 0)], math.nan)
    if reference.source:
        return np.full(int(inside.sum()), reference.bytes)
    return None


def _goodput_mbps(flow: dict[str, Any]) -> float:
    return metrics.goodput_bps(flow["received_bytes"], flow["start_ns"], flow["last_byte_ns"]) / 1e6


def _aggregate_goodput_mbps(flows: list[dict[str, Any]]) -> float:
    """What the downloads and web pages received, over the time from the first one's start to the last one's last
    byte (0 without any): their aggregate rate whether they overlapped or followed one another. A sum of each one's
    rate counts a link twice for transfers that followed one another (twelve pages of a web session, one after the
    other beside a download, summed to 77 Mbit/s on a 20 Mbit/s link)."""
    received = [f for f in flows if f["last_byte_ns"] and f["kind"] != "upload"]
    if not received:
        return 0.0
    start = min(f["start_ns"] for f in received)
    end = max(f["last_byte_ns"] for f in received)
    return metrics.goodput_bps(sum(f["received_bytes"] for f in received), start, end) / 1e6


def _concurrent_fairness(flows: list[dict[str, Any]]) -> float:
    """Jain's index among the transfers that ran at once (NaN where none did): the run cut wherever a transfer
    starts or stops wanting data, each stretch with two transfers or more under way scored by Jain's index over what
    each received in it (from its progress reports), the stretches weighted by their length; a stretch in which
    nothing was received is not scored. Downloads and uploads are counted apart, on links of their own. An index
    over each transfer's rate for its whole life scored pages that followed one another as rivals, a flow that
    stalled while another ran as nearly fair, and a backlogged download starved before the end by its early last
    byte."""
    stretches: list[tuple[int, float]] = []
    for direction in (
        [f for f in flows if f["kind"] != "upload"],
        [f for f in flows if f["kind"] == "upload"],
    ):
        traffic_end = max((f["last_byte_ns"] for f in direction), default=0)
        spans = [(f, f["start_ns"], _wanted_until(f, traffic_end)) for f in direction]
        cuts = sorted({start for _, start, _ in spans} | {until for _, _, until in spans})
        received_at_cuts = [np.diff(received_by(f, cuts)) for f, _, _ in spans]  # per flow, in each stretch
        for stretch, (begin, end) in enumerate(itertools.pairwise(cuts)):
            under_way = [i for i, (_, start, until) in enumerate(spans) if start <= begin and until >= end]
            if len(under_way) > 1:
                index = metrics.jain_fairness([float(received_at_cuts[i][stretch]) for i in under_way])
                if not math.isnan(index):
                    stretches.append((end - begin, index))
    if not stretches:
        return math.nan
    lengths, indices = zip(*stretches, strict=True)
    return float(np.average(indices, weights=lengths))


def _wanted_until(flow: dict[str, Any], traffic_end_ns: int) -> int:
    """When a transfer stopped wanting data, from its start (the handshake counts: a SYN that waits behind another's
    queue is that transfer starved). A fixed-size transfer that completed, and one that failed, at its last byte
    (one that failed before any byte never wanted: 0). A backlogged one, or one the arm's end cut off, at the end of
    the traffic, the last byte any transfer in its direction received."""
    if flow["error"] or (flow["requested_bytes"] and flow["complete"]):
        return int(flow["last_byte_ns"])
    return traffic_end_ns


def received_by(flow: dict[str, Any], times_ns: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The bytes a transfer had received at each of `times_ns`: the client's progress reports (every 100 ms while
    bytes arrive) joined by straight lines, and all of them from its last byte on."""
    last = flow["last_byte_ns"]
    before = [(time, received) for time, received in flow["progress"] if time < last]
    times = [time for time, _ in before] + [last]
    received = [received for _, received in before] + [flow["received_bytes"]]
    return np.interp(np.asarray(times_ns, dtype=np.float64), times, received, left=0.0)


def _transfer(flow: dict[str, Any]) -> dict[str, Any]:
    ttsu = (flow["last_byte_ns"] - flow["start_ns"]) / 1e9 if flow["last_byte_ns"] else math.nan
    return {
        "flow": flow["flow"],
        "kind": flow["kind"],
        "ue": flow["ue"],
        "bytes": flow["received_bytes"],
        "ttsu_s": ttsu if flow["requested_bytes"] and flow["complete"] else math.nan,
        "goodput_mbps": _goodput_mbps(flow) if flow["last_byte_ns"] else math.nan,
        "complete": bool(flow["complete"] and not flow["error"]),
    }


def summarize(run: ArmRun) -> dict[str, Any]:
    """summary.json's per-run entry (keys documented in experiments/README.md)."""
    flows = run.flows
    # a run.json older than `controller_config` names only the controller's kind: the reference is then its own
    kind_only = {"kind": run.description.get("controller")}
    reference = configured_reference(run.description.get("controller_config", kind_only))
    per_ue = {
        ue: _ue_metrics(
            series,
            [f for f in flows if f["ue"] == ue],
            run.controllers.get(ue),
            reference,
            float(run.queue_limits.get(ue, math.nan)),
        )
        for ue, series in run.ues.items()
    }
    windows = [(f["start_ns"], f["last_byte_ns"]) for f in flows if f["last_byte_ns"]]
    start, end = (min(w[0] for w in windows), max(w[1] for w in windows)) if windows else (0, 0)
    in_window = (run.packets["arrival_ns"] >= start) & (run.packets["delivery_ns"] <= end)
    delays_ms = (run.packets["delivery_ns"][in_window] - run.packets["arrival_ns"][in_window]) / 1e6
    transfers = [_transfer(f) for f in flows]
    first_byte = first_byte_ns(flows)
    ues = list(per_ue.values())
    counters = {
        key: sum(role.get(key, 0) for role in run.netstat.values())
        for key in ("retrans_segments", "rto", "spurious_rto")
    }
    return {
        "arm": run.arm,
        "repetition": run.repetition,
        "sweep_value": run.sweep_value,
        "sweep_index": run.sweep_index,
        "duration_s": (end - start) / 1e9,
        "utilization": mean([u["utilization"] for u in ues]),
        "cell_utilization": cell_utilization(run),
        "enb_ttis_per_ms": enb_ttis_per_ms(run),
        "goodput_mbps": _aggregate_goodput_mbps(flows),
        "queue_p50_bytes": mean([u["queue_p50_bytes"] for u in ues]),
        "queue_p95_bytes": mean([u["queue_p95_bytes"] for u in ues]),
        "queue_empty_fraction": mean([u["queue_empty_fraction"] for u in ues]),
        "sojourn_p50_ms": mean([u["sojourn_p50_ms"] for u in ues]),
        "sojourn_p95_ms": mean([u["sojourn_p95_ms"] for u in ues]),
        "delay_p50_ms": metrics.percentile(delays_ms, 50),
        "delay_p95_ms": metrics.percentile(delays_ms, 95),
        "delay_percentiles_ms": metrics.percentiles(delays_ms, DELAY_PERCENTILES),
        "delay_sdus": int(delays_ms.size),
        "delay_records_lost": _delay_records_lost(run.cell_summary),
        "rlc_drops_sdus": sum(u["rlc_drops_sdus"] for u in ues),
        "reference_p50_bytes": mean([u["reference_p50_bytes"] for u in ues]),
        "band_p50_bytes": mean([u["band_p50_bytes"] for u in ues]),
        "band_fraction": mean([u["band_fraction"] for u in ues]),
        "settling_s": mean([u["settling_s"] for u in ues]),
        "controller_band_fraction": mean([u["controller_band_fraction"] for u in ues]),
        "controller_settling_s": mean([u["controller_settling_s"] for u in ues]),
        "ttsu_s": mean([t["ttsu_s"] for t in transfers]),
        "jain_fairness": _concurrent_fairness(flows),
        "flows": len(flows),
        "flows_complete": sum(1 for t in transfers if t["complete"]),
        "retrans_segments": counters["retrans_segments"],
        "rto": counters["rto"],
        "spurious_rto": counters["spurious_rto"],
        "tti_late_max_ms": run.cell_summary.get("tti_lateness_ns", {}).get("max", math.nan) / 1e6,
        "decision_gap_max_ms": decision_gap_max_ms(run.controllers, first_byte),
        "decision_stalled_share": decision_stalled_share(run.controllers, first_byte),
        "ues": {str(ue): values for ue, values in per_ue.items()},
        "transfers": transfers,
        "netstat": run.netstat,
    }


def cell_utilization(run: ArmRun) -> float:
    """With several UEs on one eNB's scheduler (the srsRAN cells), the share of the cell's resource blocks that
    carried the UEs' data in the periods when any of the run's transfers was under way (after the first).

    From an eNB that reports resource blocks (contract 1.2): the PRBs of all the UEs' grants over the cell's PRBs in
    the TTIs the eNB ran, exact whatever the MCS, HARQ retransmissions counted as used. The cell's PRBs are counted
    from the UE whose reports cover the most of them: a UE whose reports stop (it left the cell) has no grants after.
    From one that does not: the sum over the UEs of each one's delivered bytes over its capacity, a full allocation
    at its MCS in every TTI (cells/derive.py), good to a few points only, since a UE's full allocation is learnt from
    periods in which it was granted every TTI, which UEs taking turns seldom are (100.7 % once in four repetitions
    through the bridge, docs/benchmarks.md). NaN with one UE (its `utilization` is the cell's) and on the virtual
    cell, where each UE's trace is a link of its own."""
    if run.cell_kind == "virtual" or len(run.ues) < 2:
        return math.nan
    busy_ues = [(series, busy_periods(run.flows, series.time_ns)) for series in run.ues.values()]
    cell_prbs = max(int(series.capacity_prbs[inside].sum()) for series, inside in busy_ues)
    if cell_prbs > 0:
        return sum(int(series.grant_prbs[inside].sum()) for series, inside in busy_ues) / cell_prbs
    shares = [
        metrics.utilization(series.delivered_bytes[inside], series.capacity_bytes[inside])
        for series, inside in busy_ues
    ]
    known = [share for share in shares if not math.isnan(share)]
    return sum(known) if known else math.nan


def enb_ttis_per_ms(run: ArmRun) -> float:
    """The TTIs a srsRAN eNB ran per millisecond of the periods when a transfer was under way (after the first), by
    its own count: 1 is real time. srsRAN on the ZeroMQ radio runs slower when the machine cannot keep up (0.6-0.9
    on 2 cores); a stack that nearly stood still (0.02 once in a while, docs/benchmarks.md) gives figures of no
    channel at all. The UE whose reports cover the most time counts; NaN where no report counts TTIs (the virtual
    cell keeps real time, or says how late it fell: `tti_late_max_ms`)."""
    rates = []
    for series in run.ues.values():
        inside = busy_periods(run.flows, series.time_ns)[1:]
        elapsed_ms = float(np.diff(series.time_ns)[inside].sum()) / 1e6
        if elapsed_ms > 0 and series.ttis[1:][inside].sum() > 0:
            rates.append((elapsed_ms, float(series.ttis[1:][inside].sum()) / elapsed_ms))
    return max(rates)[1] if rates else math.nan


def first_byte_ns(flows: list[dict[str, Any]]) -> int:
    """When the first byte of any transfer reached its UE (0 when none did): before it there is nothing to release
    toward a UE, and a controller driven by its ACKs (`clamp`) may well not step while the handshakes cross a slow
    link (1.2 s on paper 004's GPRS-like link)."""
    return min((f.get("first_byte_ns") or f["start_ns"] for f in flows if f["last_byte_ns"]), default=0)


def decision_gap_max_ms(controllers: dict[int, ControllerSeries], since_ns: int = 0) -> float:
    """The longest time between two recorded steps of one UE's controller from `since_ns` on, ms; NaN without steps
    to compare (an end-to-end arm). A step per telemetry report is the rule: a gap of several periods means the
    proxy's process stood still or its telemetry stopped."""
    steps = [series.time_ns[series.time_ns >= since_ns] for series in controllers.values()]
    gaps = [float(np.diff(times).max()) for times in steps if times.size > 1]
    return max(gaps) / 1e6 if gaps else math.nan


def decision_stalled_share(controllers: dict[int, ControllerSeries], since_ns: int = 0) -> float:
    """The largest share, over the UEs, of the time from a controller's first step (from `since_ns` on) to its last
    that it stood still: for each step that came more than STALL_PERIODS periods after the one before (the relay's
    stall rule, proxy/relay/src/control.rs), the time beyond one period. The period is the median interval of the
    UE's steps (one per telemetry report). NaN without steps to compare (an end-to-end arm). Short stalls that no
    single gap makes long (`decision_gap_max_ms`) add up on a loaded host: 20-40 ms gaps dozens of times a run."""
    shares = []
    for series in controllers.values():
        times = series.time_ns[series.time_ns >= since_ns]
        span = float(times[-1] - times[0]) if times.size >= 3 else 0.0
        if span <= 0:
            continue  # no period to measure
        gaps = np.diff(times).astype(np.float64)
        period = float(np.median(gaps))
        late = gaps > STALL_PERIODS * period
        shares.append(float((gaps[late] - period).sum()) / span)
    return max(shares) if shares else math.nan


def _delay_records_lost(cell_summary: dict[str, Any]) -> float:
    """Packets whose delay the measurement lost: the virtual cell's dropped packet-log records, or what the srsRAN
    cell's captures saw pass and did not record (cells/owd.py); NaN when not known."""
    lost = cell_summary.get("packet_log_dropped", cell_summary.get("delay", {}).get("lost"))
    return float(lost) if isinstance(lost, int) else math.nan


def mean(values: list[float]) -> float:
    """Mean of the values that are numbers; NaN when none is."""
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def group_key(run: dict[str, Any]) -> str:
    """Runs of one arm at one sweep value are repetitions of each other."""
    return run["arm"] if run["sweep_value"] is None else f"{run['arm']} @ {run['sweep_value']}"


def aggregate(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per arm (and sweep value), the mean over repetitions of every numeric key of the runs."""
    by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        by_group[group_key(run)].append(run)
    return {
        group: {
            key: mean([float(r[key]) for r in group_runs])
            for key, value in group_runs[0].items()
            if isinstance(value, int | float)
            and not isinstance(value, bool)
            and key not in ("repetition", "sweep_value")
        }
        | {key: group_runs[0][key] for key in ("arm", "sweep_value", "sweep_index")}
        | {"repetitions": len(group_runs)}
        for group, group_runs in by_group.items()
    }


def load_results(results: Path) -> tuple[dict[str, Any], list[ArmRun]]:
    """A results folder read whole, or a UserError naming the first file that is missing or malformed."""
    metadata_path = results / "metadata.json"
    metadata = read_json(metadata_path, ("scenario", "scenario_data"))
    try:
        arms = [str(arm["name"]) for arm in metadata["scenario_data"]["arms"]]
        controllers = {str(arm["name"]): arm.get("controller") for arm in metadata["scenario_data"]["arms"]}
    except (KeyError, TypeError, AttributeError):
        raise UserError(f"{metadata_path}: scenario_data.arms is not a list of arms with names") from None
    runs_path = results / "runs"
    if not runs_path.is_dir():
        raise UserError(f"{runs_path}: no such folder")
    runs = [load_arm_run(d) for d in sorted(runs_path.iterdir()) if d.is_dir()]
    if not runs:
        raise UserError(f"{runs_path}: no runs, nothing to report")
    for index, run in enumerate(runs):
        if run.arm not in arms:
            raise UserError(f"{run.directory / 'run.json'}: arm {run.arm!r} is not an arm of {metadata_path}")
        if "controller_config" not in run.description and run.description["sweep"] is None:
            # a run.json from before `controller_config`: without a sweep, the arm's table in the scenario is it
            runs[index] = replace(run, description=run.description | {"controller_config": controllers[run.arm]})
    runs.sort(key=lambda run: (run.sweep_index, arms.index(run.arm), run.repetition))
    return metadata, runs
