"""A virtual cell calibrated against a srsRAN run (`rnf calibrate`): the capacity, delays, HARQ and queue limit a
srsRAN results folder measured, written as a virtual-cell scenario with the same arms, traffic, duration and seed,
so that the two can be run side by side and compared arm by arm (`fidelity`).

What is taken from where:

- **Capacity**, per UE: the telemetry of the *reference arm*, the arm whose queue held data through the largest
  share of periods (an end-to-end CUBIC download keeps it full). Each period gives what the eNB scheduled (new and
  retransmitted bytes) where data waited through the whole period, else the capacity as `cells/derive.py` derives
  it (the UE's peak per granted TTI, here within half a second either side, times the TTIs the eNB ran), over the
  period's wall-clock length, so the stack's own pace is in the rates (srsRAN on the ZeroMQ radio runs at 0.94 of
  real time on 2 cores). `capacity-ue<n>.csv` (`time_s,rate_mbps`), from the reference flow's connection attempt;
  the calibrated cell starts it, and the uplink's transmissions, at the UE's first packet (`trace_start`), the
  connection attempt of each arm's flow. Started with the cell, the traces were shifted by each arm's own start-up
  (0.6 s for end-to-end arms, more behind a proxy), and a 20 s flow's last 0.6 s met the trace's loop: the
  reference run's first second, at CUBIC's slow-start rates, which built BBR's queue to 90 kB.
- **Where the transit sits**: the 0.1 % quantile of the one-way delay of every arm's packets (SGi to the UE's TUN,
  issue 18's captures) is what a packet that finds the queue empty takes through the eNB and the UE. Most of it
  comes after the RLC queue, where the controllers cannot see it: srsenb builds a subframe 4 TTIs ahead of its
  transmission, and srsue decodes it and writes the packet to its TUN. The part after the queue is the **delivery
  delay**: the median lag from a telemetry report to the TUN's receiving the last byte the eNB had scheduled by
  then (cumulative bytes against cumulative bytes, scaled to the same total, every arm's runs), less the one TTI
  the virtual cell's own report precedes its delivery by. The rest is the **backhaul delay**, before the queue.
  Over ZeroMQ the lag is 8-10 ms of the 10 ms transit; with all of it before the queue, the calibrated cell's loop
  from a decision to the reported queue was a step longer than srsRAN's (`smvs` counted 1 quota in flight on it,
  none on srsRAN; `rnf`'s window, b tau + q_ref, was 60 kB against 40).
- **Uplink**: the reference run's own uplink transmissions, replayed (`uplink-ue<n>.csv`, `time_s,bytes`; the
  virtual cell's `uplink_trace`). srsue's grants are sized to what its last buffer status report announced, so a
  transmission often carries only the older of the ACKs waiting and the others wait for the next one: over ZeroMQ
  its ACKs took 1.5 to 20 ms, evenly spread, where a model of scheduling requests and chained grants gives 6 to 15
  (`experiments/results/fidelity.md`). From the uplink packets' captures (`cells/owd.py`, `uplink-packets.bin`):
  packets reaching the core less than TRANSMISSION_GAP_MS apart came in one transmission; a transmission that left
  behind a packet the UE had written at least the least uplink delay before it carried all its grant allowed, and
  is limited to the bytes it carried; one that left none behind has no limit. The least delay (the 0.1 % quantile
  of the run's uplink delays, TUN to SGi) is the virtual cell's `uplink_delay_ms`: a packet takes the first
  transmission at least that long after it was written that has room for it.
- **HARQ**: the retransmitted share of the bytes scheduled where data waited, as the block error rate per
  transport block, at LTE FDD's HARQ round trip of 8 TTIs, in wall-clock ms: the stack's TTIs are longer than a
  millisecond when it runs slower than real time (through the bridge, 0.86 TTIs per ms: 8 TTIs are 9.2 ms).
- **Queue limit**: the largest the telemetry reported, in bytes and in SDUs.
- **PDCP discard timer**: the bearer's QCI's `discard_timer` in the run's `rb.conf` (srsenb's QCI 9: 150 ms): an
  SDU that waited that long before the RLC took it is discarded, which the telemetry does not report and which
  bounds a queue-filling sender's queue (-1, infinity, is none). srsRAN's timers tick once per TTI, so in
  wall-clock ms it is the TTIs over the TTIs per ms the eNB ran, as the HARQ round trip: through the bridge at 0.81
  TTIs per ms CUBIC's packets took 191 ms at the 95th percentile, longer than 150 ms would allow.
- No wired delay (the server is one hop from the core on the srsRAN cells); the telemetry period and the PRBs (for
  the indicative CQI) are the srsRAN cell's.

`fidelity` holds the calibrated run to issue 18's bounds: utilization within 3 points, queue p50 and p95 within
20 % (at least 3000 B, two full-size packets, where both are near empty).
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import tomli_w
from rnf_foundation.errors import UserError

from rnf_experiments import analysis
from rnf_experiments.cells.derive import ttis_between

HARQ_RTT_TTIS = 8  # LTE FDD: a NACKed transport block is resent 8 TTIs later
DELAY_QUANTILE = 0.1  # %, of the one-way delays: the transit through empty queues, robust to one odd packet
UTILIZATION_POINTS = 3.0
QUEUE_RELATIVE = 0.2
QUEUE_FLOOR_BYTES = 3000.0
PEAK_WINDOW_NS = 500_000_000  # either side: derive.py's one-second window, centred
_QCI_BLOCK = re.compile(r"\bqci\s*=\s*(\d+)\s*;(.*?)(?=\bqci\s*=|\Z)", re.S)
_DISCARD_TIMER = re.compile(r"\bdiscard_timer\s*=\s*(-?\d+)\s*;")
VIRTUAL_REPORT_LAG_MS = 1.0  # the virtual cell delivers an SDU in the TTI that completes it, reported at its end
TRANSMISSION_GAP_MS = 0.5  # uplink packets reaching the core closer than this came in one transmission


@dataclass(frozen=True)
class UeCalibration:
    """One UE's virtual-cell settings and what they came from."""

    ue: int
    capacity: list[tuple[float, float]]  # (time_s, rate_mbps), each rate until the next time; the last ends it
    backhaul_delay_ms: float  # before the RLC queue
    delivery_delay_ms: float  # after it: from the TTI that completes an SDU to the UE's TUN
    uplink: list[tuple[float, int | None]]  # the reference run's transmissions: (time_s, byte limit or None)
    uplink_delay_ms: float  # the least, TUN to SGi, in the reference run
    uplink_p50_ms: float  # the median delay of the UE's uplink packets in the reference run
    harq_bler: float
    queue_limit_bytes: int
    queue_limit_sdus: int
    mean_rate_mbps: float
    ttis_per_ms: float  # the eNB's TTIs per wall-clock millisecond in the reference run


@dataclass(frozen=True)
class Calibration:
    source: str  # the srsRAN results folder
    reference_arm: str
    n_prb: int
    telemetry_period_ms: int
    discard_timer_ms: float  # 0: none
    ues: list[UeCalibration]


@dataclass(frozen=True)
class Period:
    time_ns: int
    seq: int
    tti: int
    queue: int
    sched_new: int
    sched_retx: int
    grant_ttis: int
    limit_bytes: int
    limit_sdus: int


def _periods(series: Path) -> dict[int, list[Period]]:
    """Per UE, the telemetry periods of a srsRAN run."""
    periods: dict[int, list[Period]] = defaultdict(list)
    for point in analysis.read_points(series, "telemetry"):
        ue, f = point.tags.get("ue", ""), point.fields
        if not ue.isdigit():
            continue
        try:
            periods[int(ue)].append(
                Period(
                    time_ns=point.time_ns,
                    seq=int(f["seq"]),
                    tti=int(f["tti"]),
                    queue=int(f["queue_new_bytes"]) + int(f["queue_retx_bytes"]),
                    sched_new=int(f["sched_new_bytes"]),
                    sched_retx=int(f["sched_retx_bytes"]),
                    grant_ttis=int(f["grant_ttis"]),
                    limit_bytes=int(f["queue_limit_bytes"]),
                    limit_sdus=int(f.get("queue_limit_sdus", 0)),
                )
            )
        except KeyError as error:
            raise UserError(f"{series}: a telemetry point has no {error}") from None
        except (TypeError, ValueError) as error:
            raise UserError(f"{series}: a telemetry point has a malformed value: {error}") from None
    return periods


def backlogged(periods: list[Period]) -> np.ndarray:
    """Per period after the first: data waited through all of it (queued at its start and at its end)."""
    queue = np.array([p.queue for p in periods])
    return (queue[1:] > 0) & (queue[:-1] > 0)


def capacity_series(periods: list[Period], start_ns: int) -> list[tuple[float, float]]:
    """(time_s, rate_mbps) from `start_ns` on: per period, the bytes scheduled where data waited through it, else the
    peak bytes per granted TTI within PEAK_WINDOW_NS either side (offline, the window can look ahead: a download's
    first periods, before its first full grant, would otherwise take a ping's grants for the link) times the TTIs
    the eNB ran, over the period's wall-clock length; the last row's time ends the trace."""
    full = backlogged(periods)
    times = np.array([p.time_ns for p in periods])
    per_tti = np.array([(p.sched_new + p.sched_retx) / p.grant_ttis if p.grant_ttis else 0.0 for p in periods])
    first_near = np.searchsorted(times, times - PEAK_WINDOW_NS, side="left")
    after_near = np.searchsorted(times, times + PEAK_WINDOW_NS, side="right")
    rows: list[tuple[float, float]] = []
    for index in range(1, len(periods)):
        before, period = periods[index - 1], periods[index]
        if period.time_ns <= start_ns:
            continue
        begin = max(before.time_ns, start_ns)
        if full[index - 1]:
            carried = float(period.sched_new + period.sched_retx)
        else:
            counted = ttis_between(before.seq, before.tti, period.seq, period.tti)
            ttis = counted if counted is not None else (period.time_ns - before.time_ns) / 1e6
            carried = float(per_tti[first_near[index] : after_near[index]].max()) * ttis
        fraction = (period.time_ns - begin) / (period.time_ns - before.time_ns)
        rows.append(((begin - start_ns) / 1e9, carried * fraction * 8 / ((period.time_ns - begin) / 1e9) / 1e6))
    if not rows:
        raise UserError("the reference arm's telemetry has no period after its flow started")
    rows.append(((periods[-1].time_ns - start_ns) / 1e9, 0.0))
    return rows


def calibrate(results: Path) -> Calibration:
    """The virtual-cell settings a srsRAN results folder measured, as the module says."""
    metadata, runs = analysis.load_results(results)
    cell = metadata.get("scenario_data", {}).get("cell", {})
    if cell.get("kind") not in ("srsran", "srsran-zmq"):
        kind = cell.get("kind", "virtual")
        raise UserError(f"{results / 'metadata.json'}: cell.kind is {kind!r}; calibrate needs a srsRAN results folder")
    complete = [run for run in runs if run.complete]
    if not complete:
        raise UserError(f"{results}: no complete run to calibrate from")
    telemetry = {run.directory: _periods(run.directory / "series.lp") for run in complete}
    reference = max(
        complete,
        key=lambda run: np.mean([backlogged(p).mean() for p in telemetry[run.directory].values() if len(p) > 1]),
    )
    ues = []
    for ue, periods in sorted(telemetry[reference.directory].items()):
        flows = [f for f in reference.flows if f.get("ue") == ue and f.get("start_ns")]
        if not flows or len(periods) < 2:
            raise UserError(f"{reference.directory}: UE {ue} has no flow or no telemetry to calibrate from")
        start_ns = min(f["start_ns"] for f in flows)
        ues.append(_calibrate_ue(reference.directory / "series.lp", ue, periods, start_ns, complete, telemetry))
    return Calibration(
        source=str(results),
        reference_arm=reference.arm,
        n_prb=int(cell.get("n_prb", 25 if cell.get("kind") == "srsran" else 15)),
        telemetry_period_ms=int(cell.get("telemetry_period_ms", 10)),
        discard_timer_ms=round(
            _wall_ms(discard_timer_ms(reference.directory / "rb.conf", int(cell.get("qci", 9))), _ttis_per_ms(ues)), 2
        ),
        ues=ues,
    )


def discard_timer_ms(rb_conf: Path, qci: int) -> float:
    """The PDCP discard timer of `qci` in srsenb's rb.conf, ms; 0 for none (-1 there: infinity)."""
    try:
        text = re.sub(r"//[^\n]*", "", rb_conf.read_text(encoding="utf-8"))
    except OSError as error:
        raise UserError(f"{rb_conf}: cannot read srsenb's bearer configuration: {error.strerror}") from None
    for block in _QCI_BLOCK.finditer(text):
        if int(block[1]) == qci:
            timer = _DISCARD_TIMER.search(block[2])
            return float(timer[1]) if timer and int(timer[1]) > 0 else 0.0
    raise UserError(f"{rb_conf}: no qci = {qci} in qci_config")


def _wall_ms(ttis: float, ttis_per_ms: float) -> float:
    """`ttis` of a stack that ran `ttis_per_ms` TTIs per wall-clock ms, in wall-clock ms (TTIs as ms where unknown)."""
    return ttis / ttis_per_ms if ttis_per_ms > 0 else ttis


def _ttis_per_ms(ues: list[UeCalibration]) -> float:
    """The eNB's TTIs per wall-clock ms (one clock for all its UEs), 1 where unknown."""
    rates = [ue.ttis_per_ms for ue in ues if math.isfinite(ue.ttis_per_ms) and ue.ttis_per_ms > 0]
    return float(np.mean(rates)) if rates else 1.0


def _uplink_records(directory: Path, ue: int) -> np.ndarray:
    """UE `ue`'s (1-based) uplink packet records in a srsRAN run; none where the run has no uplink-packets.bin."""
    records = analysis.read_packet_records(directory / "uplink-packets.bin")
    return records[records["ue"] == ue - 1]


def uplink_transmissions(
    records: np.ndarray, start_ns: int, end_s: float, least_delay_ms: float
) -> list[tuple[float, int | None]]:
    """The transmissions `records` (one UE's uplink packets in one run) reached the core in, from `start_ns` until
    `end_s` after it: (time_s, the bytes it carried where it left behind a packet written at least `least_delay_ms`
    before it, else None), and (`end_s`, None) to end the trace (module docstring)."""
    written_ms = (records["arrival_ns"].astype(np.int64) - start_ns) / 1e6
    core_ms = (records["delivery_ns"].astype(np.int64) - start_ns) / 1e6
    order = np.argsort(core_ms, kind="stable")
    sorted_ms = core_ms[order]
    breaks = np.nonzero(np.diff(sorted_ms) >= TRANSMISSION_GAP_MS)[0] + 1
    # the latest arrival at the core among the packets written by each time, in the order they were written
    by_writing = np.argsort(written_ms, kind="stable")
    written_sorted = written_ms[by_writing]
    latest_core_ms = np.maximum.accumulate(core_ms[by_writing]) if records.size else core_ms
    rows: list[tuple[float, int | None]] = []
    for members in np.split(order, breaks) if order.size else []:
        first_ms, last_ms = core_ms[members].min(), core_ms[members].max()
        if not 0 <= first_ms < end_s * 1e3:
            continue
        written_by = int(np.searchsorted(written_sorted, first_ms - least_delay_ms, side="right"))
        left_behind = written_by > 0 and latest_core_ms[written_by - 1] > last_ms
        carried = int(records["length"][members].astype(np.int64).sum())
        rows.append((round(first_ms / 1e3, 6), carried if left_behind else None))
    return [*rows, (end_s, None)]


def delivery_lag_ms(
    report_ns: npt.ArrayLike, scheduled_bytes: npt.ArrayLike, delivery_ns: npt.ArrayLike, lengths: npt.ArrayLike
) -> list[float]:
    """Per telemetry report that scheduled new bytes, the ms from the report to the UE's TUN receiving the last byte
    the eNB had scheduled by it: the cumulative bytes scheduled (RLC's count, with its headers, scaled to the total
    delivered) against the cumulative bytes delivered (the packets' lengths in delivery order). Nothing where either
    log is empty."""
    reports, scheduled = np.asarray(report_ns, dtype=np.int64), np.asarray(scheduled_bytes, dtype=np.float64)
    order = np.argsort(np.asarray(delivery_ns, dtype=np.int64), kind="stable")
    delivered_at = np.asarray(delivery_ns, dtype=np.int64)[order]
    delivered = np.cumsum(np.asarray(lengths, dtype=np.float64)[order])
    if delivered.size == 0 or delivered[-1] <= 0 or scheduled.sum() <= 0:
        return []
    by_report = np.cumsum(scheduled) * (delivered[-1] / scheduled.sum()) - 0.5  # to within half a byte
    counted = scheduled > 0
    last = np.searchsorted(delivered, by_report[counted], side="left")
    return ((delivered_at[last] - reports[counted]) / 1e6).tolist()


def _calibrate_ue(
    series: Path, ue: int, periods: list[Period], start_ns: int, runs: list[analysis.ArmRun], telemetry: dict[Path, Any]
) -> UeCalibration:
    delays, lags = [], []
    new = retx = 0
    for run in runs:
        mine = run.packets[run.packets["ue"] == ue - 1]
        delays.append((mine["delivery_ns"].astype(np.int64) - mine["arrival_ns"].astype(np.int64)) / 1e6)
        run_periods = telemetry[run.directory].get(ue, [])
        lags += delivery_lag_ms(
            [p.time_ns for p in run_periods], [p.sched_new for p in run_periods], mine["delivery_ns"], mine["length"]
        )
        if len(run_periods) > 1:
            full = backlogged(run_periods)
            new += sum(p.sched_new for p, f in zip(run_periods[1:], full, strict=True) if f)
            retx += sum(p.sched_retx for p, f in zip(run_periods[1:], full, strict=True) if f)
    one_way = np.concatenate(delays)
    if one_way.size == 0:
        raise UserError(f"UE {ue}: no packet records (packets.bin) in any run: the one-way delay is unknown")
    transit = float(np.percentile(one_way, DELAY_QUANTILE))
    delivery = min(max(float(np.median(lags)) - VIRTUAL_REPORT_LAG_MS, 0.0), transit) if lags else 0.0
    uplink = _uplink_records(series.parent, ue)
    if uplink.size == 0:
        raise UserError(
            f"{series.parent}: UE {ue} has no uplink packet records (uplink-packets.bin): its uplink is unknown "
            "(runs before the uplink captures lack them: run the srsRAN scenario again)"
        )
    uplink_delays = (uplink["delivery_ns"].astype(np.int64) - uplink["arrival_ns"].astype(np.int64)) / 1e6
    least_uplink = round(float(np.percentile(uplink_delays, DELAY_QUANTILE)), 2)
    span_ms = (periods[-1].time_ns - periods[0].time_ns) / 1e6
    ttis_per_ms = (periods[-1].tti - periods[0].tti) / span_ms if span_ms > 0 else math.nan
    capacity = capacity_series(periods, start_ns)
    limit_bytes = max(p.limit_bytes for p in periods)
    limit_sdus = max(p.limit_sdus for p in periods)
    if limit_bytes == 0 and limit_sdus == 0:
        raise UserError(f"{series}: UE {ue}'s telemetry reported no queue limit (queue_limit_bytes, queue_limit_sdus)")
    rates = np.array([rate for _, rate in capacity[:-1]])
    lengths = np.diff([time for time, _ in capacity])
    return UeCalibration(
        ue=ue,
        capacity=capacity,
        backhaul_delay_ms=round(transit - delivery, 2),
        delivery_delay_ms=round(delivery, 2),
        uplink=uplink_transmissions(uplink, start_ns, capacity[-1][0], least_uplink),
        uplink_delay_ms=least_uplink,
        uplink_p50_ms=round(float(np.median(uplink_delays)), 2),
        harq_bler=round(retx / (new + retx), 4) if new + retx else 0.0,
        queue_limit_bytes=limit_bytes,
        queue_limit_sdus=limit_sdus,
        mean_rate_mbps=float(np.sum(rates * lengths) / np.sum(lengths)),
        ttis_per_ms=ttis_per_ms,
    )


def scenario(calibration: Calibration, original: dict[str, Any]) -> dict[str, Any]:
    """The srsRAN scenario `original` (metadata.json's scenario_data) on the calibrated virtual cell."""
    data = {key: value for key, value in original.items() if key not in ("cell", "sweep")}
    data["name"] = f"{original['name']}-calibrated"
    against = Path(calibration.source).name
    data["description"] = (
        f"{original.get('description', original['name'])}, on a virtual cell calibrated against {against}"
    )
    data["cell"] = {
        "kind": "virtual",
        "prb": calibration.n_prb,
        "wired": {"delay_ms": 0.0},
        "telemetry": {"period_ms": calibration.telemetry_period_ms},
        "ues": [
            {
                "trace": {"file": f"capacity-ue{ue.ue}.csv"},
                "backhaul_delay_ms": ue.backhaul_delay_ms,
                "delivery_delay_ms": ue.delivery_delay_ms,
                "uplink_delay_ms": ue.uplink_delay_ms,
                "uplink_trace": {"file": f"uplink-ue{ue.ue}.csv"},
                "queue_limit_bytes": ue.queue_limit_bytes,
                "queue_limit_sdus": ue.queue_limit_sdus,
                "harq_bler": ue.harq_bler,
                "harq_rtt_ms": round(_wall_ms(HARQ_RTT_TTIS, ue.ttis_per_ms), 2),
                "discard_timer_ms": calibration.discard_timer_ms,
                "trace_start": "first_packet",
            }
            for ue in calibration.ues
        ],
    }
    return data


def write(calibration: Calibration, original: dict[str, Any], output: Path) -> Path:
    """scenario.toml, the capacity and uplink traces and calibration.json (the figures without the traces) in
    `output`."""
    summary = asdict(calibration)
    for ue in summary["ues"]:
        ue["capacity"] = f"capacity-ue{ue['ue']}.csv"
        ue["uplink"] = f"uplink-ue{ue['ue']}.csv"
    path = output / "scenario.toml"
    try:
        output.mkdir(parents=True, exist_ok=True)
        for ue in calibration.ues:
            with (output / f"capacity-ue{ue.ue}.csv").open("w", newline="") as file:
                writer = csv.writer(file)
                writer.writerow(["time_s", "rate_mbps"])
                writer.writerows((f"{time:.6f}", f"{rate:.6f}") for time, rate in ue.capacity)
            with (output / f"uplink-ue{ue.ue}.csv").open("w", newline="") as file:
                writer = csv.writer(file)
                writer.writerow(["time_s", "bytes"])
                writer.writerows((f"{time:.6f}", "" if limit is None else limit) for time, limit in ue.uplink)
        (output / "calibration.json").write_text(json.dumps(summary, indent=1) + "\n")
        path.write_bytes(tomli_w.dumps(scenario(calibration, original)).encode())
    except OSError as error:
        raise UserError(f"{error.filename or output}: cannot write the calibrated cell: {error.strerror}") from None
    return path


@dataclass(frozen=True)
class FidelityRow:
    arm: str
    figure: str  # "utilization %", "queue p50 kB", "queue p95 kB", "delay p95 ms"
    srsran: float
    virtual: float
    bound: str  # what the bound allows, for the table; "" where there is none
    met: bool | None  # None where there is no bound
    srsran_error: float | None = None  # the standard error of the repetitions' mean, in the figure's unit
    virtual_error: float | None = None  # None with fewer than two repetitions


FIDELITY_FIGURES = (  # summary key, label, scale to the label's unit
    ("utilization", "utilization %", 100.0),
    ("queue_p50_bytes", "queue p50 kB", 1e-3),
    ("queue_p95_bytes", "queue p95 kB", 1e-3),
    ("delay_p95_ms", "delay p95 ms", 1.0),
)


def standard_error(values: list[float]) -> float | None:
    """The standard error of the mean of `values` (sample standard deviation over the square root of their
    number); None for fewer than two."""
    if len(values) < 2:
        return None
    return float(np.std(values, ddof=1) / math.sqrt(len(values)))


def _errors(summary: dict[str, Any], arm: str) -> dict[str, float | None]:
    """Per figure key, the standard error of `arm`'s mean over the repetitions in `summary["runs"]`."""
    runs = [run for run in summary.get("runs", []) if run.get("arm") == arm]
    errors: dict[str, float | None] = {}
    for key, _, scale in FIDELITY_FIGURES:
        error = standard_error([float(run[key]) for run in runs if key in run])
        errors[key] = None if error is None else error * scale
    return errors


def fidelity(srsran: dict[str, Any], virtual: dict[str, Any]) -> list[FidelityRow]:
    """Arm by arm, the srsRAN figures against the calibrated cell's (two summary.json: the means of their
    repetitions, under "arms", held to issue 18's bounds; the standard errors from their "runs", so that a reader
    sees where a difference is within the runs' own spread)."""
    rows = []
    for arm, real in srsran["arms"].items():
        calibrated = virtual["arms"].get(arm)
        if calibrated is None:
            continue
        real_errors, virtual_errors = _errors(srsran, arm), _errors(virtual, arm)
        for key, label, scale in FIDELITY_FIGURES:
            real_value, virtual_value = real[key] * scale, calibrated[key] * scale
            bound, met = "", None  # the delay is shown, not bounded
            if key == "utilization":
                bound, met = f"±{UTILIZATION_POINTS:g} points", abs(real_value - virtual_value) <= UTILIZATION_POINTS
            elif key != "delay_p95_ms":
                allowed = max(QUEUE_RELATIVE * real[key], QUEUE_FLOOR_BYTES)  # in bytes, as compared
                bound, met = f"±{allowed * scale:.1f} kB", abs(real[key] - calibrated[key]) <= allowed
            rows.append(
                FidelityRow(arm, label, real_value, virtual_value, bound, met, real_errors[key], virtual_errors[key])
            )
    return rows
