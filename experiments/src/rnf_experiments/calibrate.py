"""A virtual cell calibrated against a srsRAN run (`rnf calibrate`): the capacity, delays, HARQ and queue limit a
srsRAN results folder measured, written as a virtual-cell scenario with the same arms, traffic, duration and seed,
so that the two can be run side by side and compared arm by arm (`fidelity`).

What is taken from where:

- **Capacity**, per UE: the telemetry of the *reference arm*, the arm whose queue held data through the largest
  share of periods (an end-to-end CUBIC download keeps it full). Each period gives what the eNB scheduled (new and
  retransmitted bytes) where data waited through the whole period, else the capacity as `cells/derive.py` derives
  it (the UE's peak per granted TTI, here within half a second either side, times the TTIs the eNB ran), over the
  period's wall-clock length, so the stack's own pace is in the rates (srsRAN on the ZeroMQ radio runs at 0.94 of
  real time on 2 cores). `capacity-ue<n>.csv` (`time_s,rate_mbps`), from the reference flow's connection attempt.
- **Backhaul delay**: the 0.1 % quantile of the one-way delay of every arm's packets (SGi to the UE's TUN, issue
  18's captures): what a packet that finds the queue empty takes through the eNB (GTP-U, PDCP, the MAC's TX
  processing) and the UE's decoding. The virtual cell serves such a packet within its next TTI.
- **Uplink**: srsue's packets wait for its next scheduling-request occasion, every `sched_request_cnfg.period`
  subframes of the run's `rr.conf` (srsenb's default: 20), then for the grant and the transmission (8 ms), so its TCP
  ACKs leave in bunches; the virtual cell does the same (`uplink_sr_period_ms`). The period is in the stack's TTIs,
  which are longer than a millisecond when it runs slower than real time: the SR period in wall-clock ms is the
  subframes over the TTIs per wall-clock ms the eNB ran (through the bridge, 0.86: 20 subframes are 23.1 ms, and the
  ACKs reached the core in bunches 23.3 ms apart at the median). But srsue may be granted again after a
  transmission without asking: over ZeroMQ at 15 Mbit/s its ACKs reached the core in bunches 8 TTIs apart (9.1 ms)
  77 % of the time, whether or not one had waited (grants for something else, presumably the RLC status reports of
  the downlink's acknowledged mode), and an SR occasion later otherwise; through the bridge 9-28 % of the time. The
  virtual cell chains grants likewise (`uplink_grant_period_ms`, 8 TTIs in wall-clock ms, and `uplink_grant_chain`,
  the share of the uplink's bunches at the core, packets less than BUNCH_GAP_MS apart being one transmission, that
  came within CHAIN_TOLERANCE_MS of that period after the last; a bunch after a broken chain may come as soon by
  chance, which the share counts too). All from the uplink packets' own captures (`cells/owd.py`,
  `uplink-packets.bin`, every arm's). The fixed rest of the uplink delay comes from the same packets' delays, from
  the UE's TUN to the core's SGi device: the virtual cell sends what arrives up to a grant (4 ms before its
  transmission), so a packet waits about half the period of the grants it catches, chained (share `chain`) or asked
  for at an SR occasion, then 4 ms, then the fixed part: the fixed part is the measured median less
  chain x grant period / 2 + (1 - chain) x SR period / 2 + 4 ms (at least 0). Through the bridge srsue's ACKs took
  2.7-28 ms (0.1 % and 95 % quantiles), 15.9 ms at the median, with an SR every 23.6 ms: a fixed part of 0 ms (the
  shortest TCP handshake, taken before, put it at 6.4 ms: the SYN, one per arm, rarely arrives just before a grant).
- **HARQ**: the retransmitted share of the bytes scheduled where data waited, as the block error rate per
  transport block, at LTE FDD's HARQ round trip of 8 TTIs, in wall-clock ms as the SR period.
- **Queue limit**: the largest the telemetry reported, in bytes and in SDUs.
- **PDCP discard timer**: the bearer's QCI's `discard_timer` in the run's `rb.conf` (srsenb's QCI 9: 150 ms): an
  SDU that waited that long before the RLC took it is discarded, which the telemetry does not report and which
  bounds a queue-filling sender's queue (-1, infinity, is none).
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
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
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
_SR_CONFIG = re.compile(r"\bsched_request_cnfg\s*=\s*\{(.*?)\}", re.S)
_PERIOD = re.compile(r"\bperiod\s*=\s*(\d+)\s*;")
SR_TO_PUSCH_MS = 8.0  # LTE FDD: the grant 4 TTIs after the scheduling request, the transmission 4 after that
SR_TO_GRANT_MS = 4.0  # the virtual cell's uplink.rs: what reaches the UE by its grant goes with the transmission
BUNCH_GAP_MS = 2.0  # uplink packets reaching the core closer than this came in one transmission (one TTI's TB)
CHAIN_TOLERANCE_MS = 2.5  # a bunch this close to a grant period after the last came on a chained grant


@dataclass(frozen=True)
class UeCalibration:
    """One UE's virtual-cell settings and what they came from."""

    ue: int
    capacity: list[tuple[float, float]]  # (time_s, rate_mbps), each rate until the next time; the last ends it
    backhaul_delay_ms: float
    uplink_delay_ms: float  # the fixed part, after the SR, the grant and the transmission (calibrate())
    uplink_p50_ms: float  # the median delay of the UE's uplink packets, TUN to SGi, over every arm
    uplink_grant_period_ms: float  # chained grants: 8 TTIs in wall-clock ms
    uplink_grant_chain: float  # the share of the uplink's bunches at the core a grant period after the last
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
    uplink_sr_period_ms: float
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
    sr_period = round(_wall_ms(sr_period_ms(reference.directory / "rr.conf"), _ttis_per_ms(ues)), 2)
    ues = [_fit_uplink(ue, sr_period) for ue in ues]
    return Calibration(
        source=str(results),
        reference_arm=reference.arm,
        n_prb=int(cell.get("n_prb", 25 if cell.get("kind") == "srsran" else 15)),
        telemetry_period_ms=int(cell.get("telemetry_period_ms", 10)),
        discard_timer_ms=discard_timer_ms(reference.directory / "rb.conf", int(cell.get("qci", 9))),
        uplink_sr_period_ms=sr_period,
        ues=ues,
    )


def _fit_uplink(ue: UeCalibration, sr_period_ms: float) -> UeCalibration:
    """`ue` with the virtual cell's fixed uplink delay, fitted to its packets' median delay (module docstring)."""
    if sr_period_ms <= 0:
        return replace(ue, uplink_grant_chain=0.0, uplink_delay_ms=round(ue.uplink_p50_ms, 2))
    wait = ue.uplink_grant_chain * ue.uplink_grant_period_ms / 2 + (1 - ue.uplink_grant_chain) * sr_period_ms / 2
    fixed = max(ue.uplink_p50_ms - wait - (SR_TO_PUSCH_MS - SR_TO_GRANT_MS), 0.0)
    return replace(ue, uplink_delay_ms=round(fixed, 2))


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


def sr_period_ms(rr_conf: Path) -> float:
    """The scheduling-request period of srsenb's rr.conf (`sched_request_cnfg.period`), subframes (ms of a stack
    that keeps real time)."""
    try:
        text = re.sub(r"//[^\n]*", "", rr_conf.read_text(encoding="utf-8"))
    except OSError as error:
        raise UserError(f"{rr_conf}: cannot read srsenb's radio resource configuration: {error.strerror}") from None
    config = _SR_CONFIG.search(text)
    period = _PERIOD.search(config[1]) if config else None
    if period is None or int(period[1]) <= 0:
        raise UserError(f"{rr_conf}: no sched_request_cnfg.period (the UE's scheduling-request period)")
    return float(period[1])


def _uplink_records(directory: Path, ue: int) -> np.ndarray:
    """UE `ue`'s (1-based) uplink packet records in a srsRAN run; none where the run has no uplink-packets.bin."""
    records = analysis.read_packet_records(directory / "uplink-packets.bin")
    return records[records["ue"] == ue - 1]


def _bunch_spacings_ms(records: np.ndarray) -> np.ndarray:
    """The spacings of the transmissions the records reached the core in, ms (BUNCH_GAP_MS tells them apart)."""
    core_ms = np.sort(records["delivery_ns"].astype(np.int64)) / 1e6
    starts = core_ms[np.r_[0, np.nonzero(np.diff(core_ms) > BUNCH_GAP_MS)[0] + 1]] if core_ms.size else core_ms
    return np.diff(starts)


def _calibrate_ue(
    series: Path, ue: int, periods: list[Period], start_ns: int, runs: list[analysis.ArmRun], telemetry: dict[Path, Any]
) -> UeCalibration:
    delays = np.concatenate(
        [
            (r.packets["delivery_ns"].astype(np.int64) - r.packets["arrival_ns"].astype(np.int64))[
                r.packets["ue"] == ue - 1
            ]
            / 1e6
            for r in runs
        ]
    )
    if delays.size == 0:
        raise UserError(f"UE {ue}: no packet records (packets.bin) in any run: the one-way delay is unknown")
    backhaul = float(np.percentile(delays, DELAY_QUANTILE))
    uplink = [_uplink_records(r.directory, ue) for r in runs]
    uplink_delays = np.concatenate(
        [(u["delivery_ns"].astype(np.int64) - u["arrival_ns"].astype(np.int64)) / 1e6 for u in uplink]
    )
    if uplink_delays.size == 0:
        raise UserError(
            f"UE {ue}: no uplink packet records (uplink-packets.bin) in any run: the uplink delay is unknown "
            "(runs before the uplink captures lack them: run the srsRAN scenario again)"
        )
    spacings = np.concatenate([_bunch_spacings_ms(u) for u in uplink])
    span_ms = (periods[-1].time_ns - periods[0].time_ns) / 1e6
    ttis_per_ms = (periods[-1].tti - periods[0].tti) / span_ms if span_ms > 0 else math.nan
    grant_period = _wall_ms(HARQ_RTT_TTIS, ttis_per_ms)
    chained = float(np.mean(np.abs(spacings - grant_period) <= CHAIN_TOLERANCE_MS)) if spacings.size else 0.0
    new = retx = 0
    for run in runs:
        run_periods = telemetry[run.directory].get(ue, [])
        if len(run_periods) > 1:
            full = backlogged(run_periods)
            new += sum(p.sched_new for p, f in zip(run_periods[1:], full, strict=True) if f)
            retx += sum(p.sched_retx for p, f in zip(run_periods[1:], full, strict=True) if f)
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
        backhaul_delay_ms=round(backhaul, 2),
        uplink_delay_ms=math.nan,  # calibrate() fits it once the SR period is known
        uplink_p50_ms=round(float(np.median(uplink_delays)), 2),
        uplink_grant_period_ms=round(grant_period, 2),
        # below 1: the virtual cell's chain must break
        uplink_grant_chain=round(min(chained, 0.99), 3),
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
                "uplink_delay_ms": ue.uplink_delay_ms,
                "uplink_sr_period_ms": calibration.uplink_sr_period_ms,
                "uplink_grant_period_ms": ue.uplink_grant_period_ms,
                "uplink_grant_chain": ue.uplink_grant_chain,
                "queue_limit_bytes": ue.queue_limit_bytes,
                "queue_limit_sdus": ue.queue_limit_sdus,
                "harq_bler": ue.harq_bler,
                "harq_rtt_ms": round(_wall_ms(HARQ_RTT_TTIS, ue.ttis_per_ms), 2),
                "discard_timer_ms": calibration.discard_timer_ms,
            }
            for ue in calibration.ues
        ],
    }
    return data


def write(calibration: Calibration, original: dict[str, Any], output: Path) -> Path:
    """scenario.toml, the capacity traces and calibration.json (the figures without the traces) in `output`."""
    summary = asdict(calibration)
    for ue in summary["ues"]:
        ue["capacity"] = f"capacity-ue{ue['ue']}.csv"
    path = output / "scenario.toml"
    try:
        output.mkdir(parents=True, exist_ok=True)
        for ue in calibration.ues:
            with (output / f"capacity-ue{ue.ue}.csv").open("w", newline="") as file:
                writer = csv.writer(file)
                writer.writerow(["time_s", "rate_mbps"])
                writer.writerows((f"{time:.6f}", f"{rate:.6f}") for time, rate in ue.capacity)
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


def fidelity(srsran: dict[str, Any], virtual: dict[str, Any]) -> list[FidelityRow]:
    """Arm by arm, the srsRAN figures against the calibrated cell's (two summary.json), with issue 18's bounds."""
    rows = []
    for arm, real in srsran["arms"].items():
        calibrated = virtual["arms"].get(arm)
        if calibrated is None:
            continue
        utilization = (100 * real["utilization"], 100 * calibrated["utilization"])
        close = abs(utilization[0] - utilization[1]) <= UTILIZATION_POINTS
        rows.append(FidelityRow(arm, "utilization %", *utilization, f"±{UTILIZATION_POINTS:g} points", close))
        for key, label in (("queue_p50_bytes", "queue p50 kB"), ("queue_p95_bytes", "queue p95 kB")):
            real_bytes, virtual_bytes = real[key], calibrated[key]
            allowed = max(QUEUE_RELATIVE * real_bytes, QUEUE_FLOOR_BYTES)
            close = abs(real_bytes - virtual_bytes) <= allowed
            rows.append(
                FidelityRow(arm, label, real_bytes / 1e3, virtual_bytes / 1e3, f"±{allowed / 1e3:.1f} kB", close)
            )
        rows.append(FidelityRow(arm, "delay p95 ms", real["delay_p95_ms"], calibrated["delay_p95_ms"], "", None))
    return rows
