"""Capacity traces: per-UE bytes per 1 ms TTI, from files or generators, as the datapath reads them; and uplink
traces, a UE's uplink transmissions replayed from a capture.

A trace is a numpy `uint32` array, one entry per TTI: the bytes the air interface can carry to the UE in that
TTI if the whole TTI is given to it. `OUTAGE` marks an outage TTI (no capacity, outage flag set). An uplink trace
is an array of UPLINK_RECORD: when a transmission reaches the core (µs from the start) and the most bytes of the
UE's packets it carries (NO_LIMIT: whatever waits); its last record ends it. Both loop. All functions here are
pure: files in, arrays out, errors naming the file and line.
"""

from __future__ import annotations

import csv
import itertools
import math
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rnf_cell.config import (
    MAX_RATE_MBPS,
    MAX_TRACE_S,
    ConstantTrace,
    MarkovTrace,
    OnOffTrace,
    Outage,
    PiecewiseTrace,
    RayleighTrace,
    TraceFile,
    TraceSpec,
    UeConfig,
)

TTI_S = 1e-3
MAHIMAHI_PACKET_BYTES = 1500
OUTAGE = np.uint32(0xFFFFFFFF)
MAX_TTIS = round(MAX_TRACE_S / TTI_S)  # one hour of 1 ms TTIs
MAX_TTI_BYTES = int(OUTAGE) - 1
Trace = npt.NDArray[np.uint32]
UPLINK_RECORD = np.dtype([("time_us", "<u8"), ("limit", "<u4")])  # datapath/INTERFACE.md
NO_LIMIT = 0xFFFFFFFF
UplinkTrace = npt.NDArray[np.void]


class TraceError(ValueError):
    """A trace file that cannot be read; the message names the file and the line."""


def from_rates(rates_bps: npt.ArrayLike) -> Trace:
    """Bytes per TTI from a rate per TTI (bit/s), carrying fractions so the total is exact."""
    rates = np.asarray(rates_bps, dtype=np.float64)
    if len(rates) and not (np.all(np.isfinite(rates)) and rates.max() * TTI_S / 8.0 <= MAX_TTI_BYTES):
        raise TraceError(f"a rate of {rates.max() / 1e6:g} Mbit/s does not fit a trace's {MAX_TTI_BYTES} bytes per TTI")
    cumulative = np.floor(np.cumsum(rates * TTI_S / 8.0) + 1e-6)
    return np.diff(cumulative, prepend=0.0).astype(np.uint32)


def capacity_bps(trace: Trace) -> npt.NDArray[np.float64]:
    """Rate per TTI in bit/s (outage TTIs as 0)."""
    return np.where(trace == OUTAGE, 0, trace).astype(np.float64) * 8.0 / TTI_S


def usable_bytes(trace: Trace) -> npt.NDArray[np.int64]:
    """Bytes per TTI with outage TTIs as 0."""
    return np.where(trace == OUTAGE, 0, trace).astype(np.int64)


def _ttis(duration_s: float) -> int:
    if not math.isfinite(duration_s):
        raise TraceError(f"a trace of {duration_s} s is not a finite length")
    count = round(duration_s / TTI_S)
    if not 1 <= count <= MAX_TTIS:
        raise TraceError(f"a trace of {duration_s} s is outside 1 ms .. {MAX_TTIS * TTI_S:.0f} s")
    return count


def constant(rate_mbps: float, duration_s: float = 1.0) -> Trace:
    return from_rates(np.full(_ttis(duration_s), rate_mbps * 1e6))


def piecewise(min_mbps: float, max_mbps: float, period_s: float, duration_s: float, rng: np.random.Generator) -> Trace:
    """Paper 000 Fig. 11: a rate drawn uniformly in [min, max] every `period_s`, held in between."""
    ttis = _ttis(duration_s)
    per_period = max(1, round(period_s / TTI_S))
    periods = math.ceil(ttis / per_period)
    levels = rng.uniform(min_mbps, max_mbps, size=periods) * 1e6
    return from_rates(np.repeat(levels, per_period)[:ttis])


def onoff(rate_mbps: float, on_s: float, off_s: float) -> Trace:
    """`on_s` at `rate_mbps`, then an outage of `off_s`; loops."""
    on = constant(rate_mbps, on_s)
    return np.concatenate([on, np.full(_ttis(off_s), OUTAGE, dtype=np.uint32)])


def markov(
    good_mbps: float,
    bad_mbps: float,
    mean_good_s: float,
    mean_bad_s: float,
    duration_s: float,
    rng: np.random.Generator,
) -> Trace:
    """Two-state Markov channel (Gilbert-Elliott style) with exponential sojourn times, starting good."""
    ttis = _ttis(duration_s)
    rates = np.empty(ttis)
    position, good = 0, True
    while position < ttis:
        length = max(1, round(rng.exponential(mean_good_s if good else mean_bad_s) / TTI_S))
        rates[position : position + length] = (good_mbps if good else bad_mbps) * 1e6
        position += length
        good = not good
    return from_rates(rates)


SPEED_OF_LIGHT = 299_792_458.0
JAKES_PATHS = 32
SHANNON_ATTENUATION = 0.6  # 3GPP TR 36.942 Annex A.2, downlink
SNR_MIN_DB = -10.0
SPECTRAL_EFFICIENCY_MAX = 4.4  # bit/s/Hz


def rayleigh_power(ttis: int, doppler_hz: float, rng: np.random.Generator) -> npt.NDArray[np.float64]:
    """|h|^2 per TTI of a Rayleigh channel with maximum Doppler `doppler_hz`: a sum of sinusoids with random
    arrival angles and phases (Jakes' model), normalised to mean power 1."""
    t = np.arange(ttis) * TTI_S
    angles = rng.uniform(0, 2 * np.pi, JAKES_PATHS)
    phases = rng.uniform(0, 2 * np.pi, JAKES_PATHS)
    h = np.zeros(ttis, dtype=np.complex128)
    for angle, phase in zip(angles, phases, strict=True):
        h += np.exp(1j * (2 * np.pi * doppler_hz * np.cos(angle) * t + phase))
    return np.abs(h) ** 2 / JAKES_PATHS


def attenuated_shannon_bps(snr_db: npt.ArrayLike, bandwidth_hz: float) -> npt.NDArray[np.float64]:
    """3GPP TR 36.942 A.2: rate = B * min(0.6 log2(1 + SNR), 4.4) above -10 dB, else 0."""
    snr = np.asarray(snr_db, dtype=np.float64)
    efficiency = np.minimum(SHANNON_ATTENUATION * np.log2(1 + 10 ** (snr / 10)), SPECTRAL_EFFICIENCY_MAX)
    return np.where(snr < SNR_MIN_DB, 0.0, efficiency * bandwidth_hz)


def rayleigh(spec: RayleighTrace, rng: np.random.Generator) -> Trace:
    """Rayleigh fading around a mean SNR, as capacity (paper 000's indoor/pedestrian/vehicular/rural UEs differ in
    speed, so Doppler, and in distance, so mean SNR)."""
    ttis = _ttis(spec.duration_s)
    doppler_hz = spec.speed_kmh / 3.6 * spec.carrier_ghz * 1e9 / SPEED_OF_LIGHT
    snr_db = spec.mean_snr_db + 10 * np.log10(np.maximum(rayleigh_power(ttis, doppler_hz, rng), 1e-12))
    return from_rates(attenuated_shannon_bps(snr_db, spec.bandwidth_mhz * 1e6))


def read_mahimahi(path: Path) -> Trace:
    """Mahimahi format: one line per 1500-byte delivery opportunity, its time in ms; the trace loops at the last.

    Several lines with the same millisecond are several opportunities in that millisecond.
    """
    times: list[int] = []
    for number, text in enumerate(_lines(path), start=1):
        text = text.strip()
        if not text:
            continue
        if not (text.isascii() and text.isdigit()):
            raise TraceError(f"{path}:{number}: expected a whole number of milliseconds, got {text[:30]!r}")
        value = int(text)
        if times and value < times[-1]:
            raise TraceError(f"{path}:{number}: timestamp {value} ms goes back in time (previous {times[-1]} ms)")
        times.append(value)
    if not times or times[-1] == 0:
        raise TraceError(f"{path}: no delivery opportunity after 0 ms; a Mahimahi trace needs a positive last time")
    length = times[-1]
    if length > MAX_TTIS:
        raise TraceError(f"{path}: {length} ms is longer than {MAX_TTIS} ms")
    # An opportunity at time t ms (t >= 1; t = 0 counts as 1) falls in TTI t-1, so the loop is `length` TTIs.
    counts = np.bincount(np.maximum(np.asarray(times) - 1, 0), minlength=length)
    return (counts * MAHIMAHI_PACKET_BYTES).astype(np.uint32)


def _two_columns(path: Path, headers: Sequence[tuple[str, str]]) -> tuple[tuple[str, ...], list[tuple[int, list[str]]]]:
    """A two-column CSV file's header, one of `headers`, and its non-blank rows with their line numbers."""
    rows = list(csv.reader(_lines(path)))
    if not rows:
        raise TraceError(f"{path}: empty file")
    header = tuple(cell.strip() for cell in rows[0])
    if header not in headers:
        wanted = " or ".join(f"`{','.join(h)}`" for h in headers)
        raise TraceError(f"{path}:1: header must be {wanted}, got {','.join(header)!r}")
    data: list[tuple[int, list[str]]] = []
    for number, row in enumerate(rows[1:], start=2):
        if not row or not "".join(row).strip():
            continue
        if len(row) != 2:
            raise TraceError(f"{path}:{number}: expected 2 columns, got {len(row)}")
        data.append((number, row))
    return header, data


_CSV_TTI = ("tti", "bytes")
_CSV_RATE = ("time_s", "rate_mbps")


def read_csv(path: Path) -> Trace:
    """Either `tti,bytes` (one row per TTI, bytes per TTI) or `time_s,rate_mbps` (a rate from that time on).

    With `time_s,rate_mbps` the last row ends the trace: its time is the trace length and its rate is unused.
    A negative rate or bytes value marks an outage; NaN and infinity are errors.
    """
    header, rows = _two_columns(path, (_CSV_TTI, _CSV_RATE))
    values: list[tuple[float, float]] = []
    for number, row in rows:
        try:
            value = (float(row[0]), float(row[1]))
        except ValueError:
            raise TraceError(f"{path}:{number}: not a number: {','.join(row)[:40]!r}") from None
        if not (math.isfinite(value[0]) and math.isfinite(value[1])):
            raise TraceError(f"{path}:{number}: not a finite number: {','.join(row)[:40]!r}")
        limit, unit = (MAX_TTI_BYTES, "bytes per TTI") if header == _CSV_TTI else (MAX_RATE_MBPS, "Mbit/s")
        if value[1] > limit:
            raise TraceError(f"{path}:{number}: {row[1].strip()} is above the trace's maximum, {limit:.0f} {unit}")
        values.append(value)
    if not values:
        raise TraceError(f"{path}: no data rows")
    length_s = len(values) * TTI_S if header == _CSV_TTI else values[-1][0]
    if length_s > MAX_TRACE_S:
        raise TraceError(f"{path}: {length_s:g} s is longer than a trace's {MAX_TRACE_S:.0f} s")
    if header == _CSV_TTI:
        ttis = np.array([v[0] for v in values])
        if not np.array_equal(ttis, np.arange(len(values))):
            raise TraceError(f"{path}: the tti column must count 0, 1, 2, ... without gaps")
        column = np.array([v[1] for v in values])
        return np.where(column < 0, OUTAGE, np.round(column)).astype(np.uint32)
    times = np.array([v[0] for v in values])
    if times[0] != 0 or np.any(np.diff(times) <= 0):
        raise TraceError(f"{path}: time_s must start at 0 and increase strictly")
    edges = np.round(times / TTI_S).astype(int)
    rates = np.zeros(_ttis(times[-1]))
    outage = np.zeros(len(rates), dtype=bool)
    for (start, end), (_, rate) in zip(itertools.pairwise(edges), values[:-1], strict=True):
        rates[start:end] = max(rate, 0.0) * 1e6
        outage[start:end] = rate < 0
    trace = from_rates(rates)
    trace[outage] = OUTAGE
    return trace


_CSV_UPLINK = ("time_s", "bytes")


def read_uplink_csv(path: Path) -> UplinkTrace:
    """`time_s,bytes`: per row, a transmission of the UE's reaching the core at `time_s`, carrying at most `bytes`
    of its packets (empty: whatever waits). The last row ends the trace: its time is the trace's length and its
    bytes are unused."""
    _, rows = _two_columns(path, (_CSV_UPLINK,))
    records: list[tuple[int, int]] = []
    for number, row in rows:
        try:
            time_s = float(row[0])
        except ValueError:
            raise TraceError(f"{path}:{number}: time_s is not a number: {row[0].strip()[:40]!r}") from None
        if not (math.isfinite(time_s) and 0 <= time_s <= MAX_TRACE_S):
            raise TraceError(f"{path}:{number}: time_s must be between 0 and {MAX_TRACE_S:.0f}, got {row[0].strip()}")
        text = row[1].strip()
        if text and not (text.isascii() and text.isdigit() and 0 < int(text) < NO_LIMIT):
            raise TraceError(f"{path}:{number}: bytes must be a whole number from 1 to {NO_LIMIT - 1} or empty")
        records.append((round(time_s * 1e6), int(text) if text else NO_LIMIT))
    if len(records) < 2:
        raise TraceError(f"{path}: needs a transmission and the row that ends the trace")
    times = np.array([time for time, _ in records])
    if np.any(np.diff(times) <= 0):
        later = int(np.argmax(np.diff(times) <= 0)) + 1  # 0-based, among the data rows
        raise TraceError(f"{path}: time_s must increase strictly (microsecond steps): row {later + 1} of the data")
    return np.array(records, dtype=UPLINK_RECORD)


def write_uplink(trace: UplinkTrace, path: Path) -> None:
    """The datapath's uplink trace file: UPLINK_RECORD, little-endian."""
    path.write_bytes(trace.astype(UPLINK_RECORD).tobytes())


_LP_TELEMETRY = re.compile(r"telemetry(?:,\S*)? (\S+) ([0-9]+)")
_LP_COUNT = re.compile(r"[0-9]+i?")  # a non-negative integer field, ASCII digits only


def _lp_count(fields: dict[str, str], name: str) -> int:
    """A byte count or period of a telemetry point: a non-negative integer (KeyError or ValueError naming it)."""
    text = fields[name]
    if _LP_COUNT.fullmatch(text) is None:
        raise ValueError(f"{name}: {text[:30]!r} is not a non-negative integer")
    return int(text.rstrip("i"))


def read_telemetry(path: Path) -> Trace:
    """Replay of telemetry recorded from an eNB (line protocol, `telemetry` measurement of `rnf run`/`rnf cell`).

    Each period's scheduled bytes are spread evenly over its TTIs, and outage periods become outage TTIs. What
    the eNB scheduled is a lower bound of what it could have carried where its queue ran empty; recordings of a
    backlogged UE replay its capacity. Only the first UE found in the file is used (filter the file per UE).
    """
    periods: list[tuple[int, int, bool]] = []
    ue: str | None = None
    total = 0
    for number, text in enumerate(_lines(path), start=1):
        match = _LP_TELEMETRY.fullmatch(text.strip())
        if match is None:
            continue
        tags = dict(part.split("=", 1) for part in text.split(" ", 1)[0].split(",")[1:] if "=" in part)
        this_ue = tags.get("rnti") or tags.get("ue") or ""
        if ue is None:
            ue = this_ue
        elif this_ue != ue:
            continue
        pairs = [part.split("=", 1) for part in match[1].split(",")]
        if any(len(pair) != 2 for pair in pairs):
            raise TraceError(f"{path}:{number}: a field without `=`: {match[1][:40]!r}")
        fields = dict(pairs)
        try:
            sched = _lp_count(fields, "sched_new_bytes") + _lp_count(fields, "sched_retx_bytes")
            period_ttis = max(1, round(_lp_count(fields, "period_us") / 1000))
        except KeyError as error:
            raise TraceError(f"{path}:{number}: telemetry point lacks {error}") from None
        except ValueError as error:
            raise TraceError(f"{path}:{number}: {error}") from None
        total += period_ttis
        if total > MAX_TTIS:
            raise TraceError(f"{path}:{number}: the periods add up to more than a trace's {MAX_TRACE_S:.0f} s")
        if sched > period_ttis * MAX_TTI_BYTES:
            raise TraceError(f"{path}:{number}: {sched} bytes in {period_ttis} ms is above a trace's maximum rate")
        periods.append((sched, period_ttis, fields.get("outage") == "true"))
    if not periods:
        raise TraceError(f"{path}: no `telemetry` points (line protocol recorded by rnf)")
    parts = []
    for sched, period_ttis, outage in periods:
        if outage:
            parts.append(np.full(period_ttis, OUTAGE, dtype=np.uint32))
        else:
            parts.append(from_rates(np.full(period_ttis, sched * 8.0 / (period_ttis * TTI_S))))
    return np.concatenate(parts)


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such trace file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise TraceError(f"{path}: cannot read: {error}") from None


def build(spec: TraceSpec, rng: np.random.Generator) -> Trace:
    """The trace a configuration names."""
    match spec:
        case TraceFile(format="mahimahi"):
            trace = read_mahimahi(spec.file)
        case TraceFile(format="csv"):
            trace = read_csv(spec.file)
        case TraceFile(format="telemetry"):
            trace = read_telemetry(spec.file)
        case ConstantTrace():
            return constant(spec.rate_mbps)
        case PiecewiseTrace():
            return piecewise(spec.min_mbps, spec.max_mbps, spec.period_s, spec.duration_s, rng)
        case OnOffTrace():
            return onoff(spec.rate_mbps, spec.on_s, spec.off_s)
        case MarkovTrace():
            return markov(spec.good_mbps, spec.bad_mbps, spec.mean_good_s, spec.mean_bad_s, spec.duration_s, rng)
        case RayleighTrace():
            return rayleigh(spec, rng)
    if spec.start_s:
        first = round(spec.start_s / TTI_S)
        if first >= len(trace):
            end_s = len(trace) * TTI_S
            raise TraceError(f"{spec.file}: start_s = {spec.start_s:g} s is at or past the file's end ({end_s:g} s)")
        trace = trace[first:]
    if spec.scale != 1.0:
        outage = trace == OUTAGE
        try:
            trace = from_rates(capacity_bps(trace) * spec.scale)
        except TraceError as error:
            raise TraceError(f"{spec.file}: scaled by {spec.scale:g}: {error}") from None
        trace[outage] = OUTAGE
    return trace


def check_files(
    ues: Sequence[UeConfig], prefix: str = "", missing_hint: str = "", checked: set[TraceFile] | None = None
) -> None:
    """Read every trace file of `ues` as the cell will, before anything starts: a TraceError `<prefix>ues[i].trace.file:
    reason` (or `uplink_trace.file`) for the first that is missing or is not a trace (`missing_hint` is added to a
    missing file's reason).
    Generated traces need no check: their configuration bounds them. Files in `checked` are skipped, and the
    ones read are added to it."""
    for index, ue in enumerate(ues):
        if ue.uplink_trace is not None:
            field = f"{prefix}ues[{index}].uplink_trace.file"
            if not ue.uplink_trace.file.exists():
                raise TraceError(f"{field}: {ue.uplink_trace.file}: no such trace file{missing_hint}")
            try:
                read_uplink_csv(ue.uplink_trace.file)
            except TraceError as error:
                raise TraceError(f"{field}: {error}") from None
        if not isinstance(ue.trace, TraceFile) or (checked is not None and ue.trace in checked):
            continue
        field = f"{prefix}ues[{index}].trace.file"
        if not ue.trace.file.exists():
            raise TraceError(f"{field}: {ue.trace.file}: no such trace file{missing_hint}")
        try:
            build(ue.trace, np.random.default_rng(0))
        except TraceError as error:
            raise TraceError(f"{field}: {error}") from None
        if checked is not None:
            checked.add(ue.trace)


def with_outages(trace: Trace, outages: Sequence[Outage]) -> Trace:
    """Lay outages over a trace; the trace is unrolled (looped) as far as the last outage reaches."""
    if not outages:
        return trace
    end = max(round((o.start_s + o.duration_s) / TTI_S) for o in outages)
    repeats = math.ceil(end / len(trace))
    result = np.tile(trace, repeats) if repeats > 1 else trace.copy()
    for outage in outages:
        start = round(outage.start_s / TTI_S)
        result[start : start + round(outage.duration_s / TTI_S)] = OUTAGE
    return result


def write(trace: Trace, path: Path) -> None:
    """The datapath's file: little-endian u32 per TTI."""
    path.write_bytes(trace.astype("<u4").tobytes())
