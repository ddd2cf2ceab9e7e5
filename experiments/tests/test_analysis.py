"""Reading runs back: which periods count as busy, how runs are grouped into arms and sweep values, and what a run
folder says of the queue reference (the arm's controller table, the eNB's queue limit)."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from rnf_experiments import analysis


def test_busy_is_the_union_of_transfers_from_first_to_last_byte():
    flows = [
        {"start_ns": 0, "first_byte_ns": 5, "last_byte_ns": 30},
        {"start_ns": 45, "first_byte_ns": 50, "last_byte_ns": 70},  # a second page after a think time
        {"start_ns": 60, "last_byte_ns": 0},  # never received a byte: not busy on its own
        {"start_ns": 85, "last_byte_ns": 100},  # no first byte recorded: from the connection attempt
    ]
    times = np.array([0, 10, 30, 40, 50, 60, 70, 80, 90, 100])
    assert analysis.busy(flows, times).tolist() == [False, True, True, False, False, True, True, False, True, True]
    # the handshake and the request before the first byte are not busy: 5 < t <= 30 only
    assert analysis.busy([{"start_ns": 0, "first_byte_ns": 20, "last_byte_ns": 30}], times).tolist() == [
        False, False, True, False, False, False, False, False, False, False,
    ]  # fmt: skip


def test_aggregate_groups_repetitions_by_arm_and_sweep_value():
    runs = [
        {"arm": "smvs", "repetition": 0, "sweep_value": 0.2, "sweep_index": 0, "utilization": 0.9, "ttsu_s": math.nan},
        {"arm": "smvs", "repetition": 1, "sweep_value": 0.2, "sweep_index": 0, "utilization": 1.0, "ttsu_s": 2.0},
        {"arm": "smvs", "repetition": 0, "sweep_value": 2.0, "sweep_index": 1, "utilization": 0.8, "ttsu_s": math.nan},
    ]
    groups = analysis.aggregate(runs)
    assert set(groups) == {"smvs @ 0.2", "smvs @ 2.0"}
    assert groups["smvs @ 0.2"]["utilization"] == 0.95 and groups["smvs @ 0.2"]["ttsu_s"] == 2.0
    assert groups["smvs @ 0.2"]["repetitions"] == 2 and groups["smvs @ 2.0"]["sweep_value"] == 2.0
    assert set(groups["smvs @ 0.2"]) == {"arm", "sweep_value", "sweep_index", "utilization", "ttsu_s", "repetitions"}


def _results_folder(root: Path, run_json: dict) -> Path:
    arms = [{"name": "smvs", "kind": "proxy", "controller": {"kind": "smvs", "q0_bytes": 10000}}]
    (root / "metadata.json").write_text(json.dumps({"scenario": "s", "scenario_data": {"arms": arms}}))
    run = root / "runs" / "0-smvs"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps(run_json))
    cell = "capacity_bytes=7500i,delivered_bytes=7500i,sched_new_bytes=7500i,sched_retx_bytes=0i,queue_new_bytes=0i,"
    cell += "queue_retx_bytes=0i,dropped_sdus=0i"
    (run / "series.lp").write_text(
        f"cell,cell_kind=srsran-zmq,ue=1 {cell} 1000\n"
        "telemetry,ue=1 queue_bytes=0i,queue_limit_bytes=80000i 1000\n"  # the largest counts, not the last
        "telemetry,ue=2 queue_bytes=0i,queue_limit_bytes=0i 1000\n"  # reports no limit: left out
        "telemetry,ue=1 queue_bytes=0i,queue_limit_bytes=60000i 2000\n"
    )
    return root


def test_a_run_folder_gives_the_enbs_queue_limit_per_ue(tmp_path):
    folder = _results_folder(tmp_path, {"arm": "smvs", "repetition": 0, "sweep": None, "controller_config": None})
    _, (run,) = analysis.load_results(folder)
    assert run.queue_limits == {1: 80000}
    assert run.cell_kind == "srsran-zmq"  # the runner's tag on the cell points
    assert run.description["controller_config"] is None  # the runner's own record stands


def test_an_older_run_json_without_the_controller_table_takes_the_scenarios(tmp_path):
    folder = _results_folder(tmp_path, {"arm": "smvs", "controller": "smvs", "repetition": 0, "sweep": None})
    _, (run,) = analysis.load_results(folder)
    assert run.description["controller_config"] == {"kind": "smvs", "q0_bytes": 10000}


def test_an_older_run_json_of_a_sweep_point_keeps_only_the_controllers_kind(tmp_path):
    # the sweep may have changed the table, so the scenario's is not the run's: the controller's own q0 stands
    sweep = {"value": 5000, "index": 0}  # what the analysis needs of a sweep point, nothing more
    folder = _results_folder(tmp_path, {"arm": "smvs", "controller": "smvs", "repetition": 0, "sweep": sweep})
    _, (run,) = analysis.load_results(folder)
    assert "controller_config" not in run.description
    assert analysis.summarize(run)["ues"]["1"]["reference_source"] == "controller"


MS = 1_000_000  # ns


def _lines(measurement: str, tags: str, rows: list[tuple[int, dict[str, int]]]) -> str:
    return "".join(
        f"{measurement},{tags} {','.join(f'{key}={value}i' for key, value in fields.items())} {at_ms * MS}\n"
        for at_ms, fields in rows
    )


def test_a_whole_run_folder_is_read_and_summarized_from_its_files(tmp_path):
    # one UE, a 40 ms bulk transfer from 0 to 40 ms, 10 ms periods, a delay target of 20 ms and B_max 60 kB
    controller = {"kind": "smvs", "target_ms": 20, "b_max_bytes": 60_000}
    arms = [{"name": "smvs", "kind": "proxy", "controller": controller}]
    (tmp_path / "metadata.json").write_text(json.dumps({"scenario": "s", "scenario_data": {"arms": arms}}))
    run = tmp_path / "runs" / "0-smvs"
    (run / "flows").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"arm": "smvs", "repetition": 2, "sweep": None, "complete": True}))
    flow = {"flow": "ue1-flow1", "kind": "bulk", "ue": 1, "start_ns": 0, "last_byte_ns": 40 * MS}
    flow |= {
        "received_bytes": 50_000,
        "requested_bytes": 50_000,
        "complete": True,
        "error": "",
        "progress": [[40 * MS, 50_000]],
    }
    (run / "flows" / "ue1-flow1.json").write_text(json.dumps(flow))
    (run / "netstat.json").write_text(json.dumps({"server": {"retrans_segments": 3, "rto": 1, "spurious_rto": 0}}))
    (run / "cell-summary.json").write_text(json.dumps({"tti_lateness_ns": {"max": 2_500_000}, "packet_log_dropped": 2}))
    cells = [
        # (period end ms, capacity, delivered, scheduled new + retx, queued new + retx, dropped SDUs)
        (0, 10_000, 0, (0, 0), (0, 0), 5),
        (10, 10_000, 6000, (6000, 1000), (10_000, 0), 1),  # the first busy period: skipped
        (20, 10_000, 9000, (8000, 2000), (14_000, 1000), 0),
        (30, 10_000, 7000, (7000, 0), (3000, 1000), 2),
        (40, 10_000, 7500, (7000, 1000), (30_000, 0), 3),
    ]
    series = _lines(
        "cell",
        "cell=1,ue=1,rnti=70",
        [
            (
                at,
                {
                    "capacity_bytes": capacity,
                    "delivered_bytes": delivered,
                    "sched_new_bytes": new,
                    "sched_retx_bytes": retx,
                    "queue_new_bytes": q_new,
                    "queue_retx_bytes": q_retx,
                    "dropped_sdus": dropped,
                },
            )
            for at, capacity, delivered, (new, retx), (q_new, q_retx), dropped in cells
        ],
    )
    series += _lines("telemetry", "cell=1,ue=1,rnti=70", [(at, {"queue_limit_bytes": 100_000}) for at, *_ in cells])
    series += _lines("telemetry", "cell=1,rnti=71", [(0, {"queue_limit_bytes": 500})])  # no UE tag: not a UE's
    # controller points of no UE of the cell come first: skipped, and the UE's after them still read
    series += _lines("controller", "controller=smvs,ue=x,ue_ip=10.0.0.9", [(5, {"w_bytes": 1})])
    series += _lines("controller", "controller=smvs,ue_ip=10.0.0.8", [(5, {"w_bytes": 1})])
    steps = [(5, 1000, 20_000, 10_000), (15, 20_000, 20_000, 10_000), (25, 20_000, 20_000, 10_000)]
    series += _lines(
        "controller",
        "controller=smvs,ue=1,ue_ip=172.16.0.2",
        [(at, {"w_bytes": 4000 + at, "q_bytes": q, "q0_bytes": q0, "band_bytes": band}) for at, q, q0, band in steps]
        + [(35, {"w_bytes": 4035, "q_bytes": 20_000, "q0_bytes": 20_000})],  # no band recorded: never inside
    )
    (run / "series.lp").write_text(series)
    packets = [(1, 3), (10, 14), (20, 21), (39, 41)]  # (arrival, delivery) ms; the last delivered after 40 ms
    records = [(1, 1400, 0, arrival * MS, delivery * MS) for arrival, delivery in packets]
    # an SDU the queue discipline dropped at 30 ms: never delivered, no delay sample (it would make the p50 3 ms)
    records.insert(2, (1, 1400, analysis.PACKET_AQM_DROPPED, 12 * MS, 30 * MS))
    np.array(records, dtype=analysis.PACKET_RECORD).tofile(run / "packets.bin")

    _, (loaded,) = analysis.load_results(tmp_path)
    assert loaded.packets["arrival_ns"].tolist() == [arrival * MS for arrival, _ in packets]
    assert loaded.ues[1].sched_bytes.tolist() == [0, 7000, 10_000, 7000, 8000]
    assert loaded.ues[1].queue_bytes.tolist() == [0, 10_000, 15_000, 4000, 30_000]
    own = loaded.controllers[1]
    assert list(loaded.controllers) == [1]
    assert own.time_ns.tolist() == [5 * MS, 15 * MS, 25 * MS, 35 * MS]
    assert own.w_bytes.tolist() == [4005, 4015, 4025, 4035]
    assert own.q_bytes.tolist() == [1000, 20_000, 20_000, 20_000]
    assert own.q0_bytes.tolist() == [20_000] * 4
    assert own.band_bytes[:3].tolist() == [10_000] * 3 and math.isnan(own.band_bytes[3])
    summary = analysis.summarize(loaded)
    ue = summary["ues"]["1"]
    # busy periods 20, 30 and 40 ms: queue 15000, 4000, 30000 of capacity 10000 each
    assert ue["utilization"] == pytest.approx(23_500 / 30_000)
    assert (ue["queue_p50_bytes"], ue["queue_p95_bytes"], ue["queue_max_bytes"]) == (15_000, 28_500, 30_000)
    assert (ue["sojourn_p50_ms"], ue["sojourn_p95_ms"]) == pytest.approx((15, 28.5))  # 15, 4, 30 ms at 1 B/us
    assert (ue["queue_empty_fraction"], ue["rlc_drops_sdus"]) == (0.0, 5)
    # the reference: 20 ms x 10000, 7000 and 8000 B per 10 ms = 20000, 14000, 16000 B; the band, half of
    # min(reference, 60000 - reference) with the configured B_max (not the 100 kB reported) = 10000, 7000, 8000;
    # inside: |15000 - 20000| < 10000 yes, |4000 - 14000| < 7000 no, |30000 - 16000| < 8000 no
    assert ue["reference_source"] == "target_ms"
    assert (ue["reference_p50_bytes"], ue["band_p50_bytes"]) == (16_000, 8000)
    assert (ue["band_fraction"], ue["settling_s"]) == (1.0 / 3, 0.02)
    # the controller's own record: [out, in, in, no band] from its first step inside (15 ms) on
    assert (ue["controller_band_fraction"], ue["controller_settling_s"]) == (2 / 3, 0.015)
    assert summary == {
        "arm": "smvs",
        "repetition": 2,
        "sweep_value": None,
        "sweep_index": 0,
        "duration_s": 0.04,
        "utilization": ue["utilization"],
        "cell_utilization": summary["cell_utilization"],  # NaN on a virtual cell: checked below
        "enb_ttis_per_ms": summary["enb_ttis_per_ms"],  # NaN on a virtual cell: checked below
        "goodput_mbps": 10.0,  # 400000 bit in 40 ms
        "queue_p50_bytes": 15_000,
        "queue_p95_bytes": 28_500,
        "queue_empty_fraction": 0.0,
        "sojourn_p50_ms": ue["sojourn_p50_ms"],
        "sojourn_p95_ms": ue["sojourn_p95_ms"],
        "delay_p50_ms": 2.0,  # 2, 4 and 1 ms; the packet delivered after the last byte is out
        "delay_p95_ms": pytest.approx(3.8),
        "delay_percentiles_ms": summary["delay_percentiles_ms"],  # checked below
        "delay_sdus": 3,
        "delay_records_lost": 2.0,  # the packet log's dropped records, as the cell counted them
        "rlc_drops_sdus": 5,
        "reference_p50_bytes": 16_000,
        "band_p50_bytes": 8000,
        "band_fraction": 1.0 / 3,
        "settling_s": 0.02,
        "controller_band_fraction": 2 / 3,
        "controller_settling_s": 0.015,
        "ttsu_s": 0.04,
        "jain_fairness": summary["jain_fairness"],  # NaN with one flow: checked below
        "flows": 1,
        "flows_complete": 1,
        "retrans_segments": 3,
        "rto": 1,
        "spurious_rto": 0,
        "tti_late_max_ms": 2.5,
        "decision_gap_max_ms": 10.0,  # the controller's steps below, 10 ms apart
        "decision_stalled_share": 0.0,
        "ues": {"1": ue},
        "transfers": [
            {
                "flow": "ue1-flow1",
                "kind": "bulk",
                "ue": 1,
                "bytes": 50_000,
                "ttsu_s": 0.04,
                "goodput_mbps": 10.0,
                "complete": True,
            }
        ],
        "netstat": {"server": {"retrans_segments": 3, "rto": 1, "spurious_rto": 0}},
    }
    assert math.isnan(summary["jain_fairness"]) and math.isnan(summary["cell_utilization"])
    assert math.isnan(summary["enb_ttis_per_ms"])
    # every whole percent of 1, 2 and 4 ms, interpolated between ranks (rank = 2 x q / 100): the 1st at 1.02, the 25th
    # at 1.5, the 75th at 3.0, the 99th at 3.96
    percentiles = summary["delay_percentiles_ms"]
    assert len(percentiles) == 99
    assert [percentiles[q - 1] for q in (1, 25, 50, 75, 95, 99)] == pytest.approx([1.02, 1.5, 2.0, 3.0, 3.8, 3.96])
    # without packet records and the cell's summary: no delay and no lateness, rather than made-up ones
    (run / "packets.bin").unlink()
    (run / "cell-summary.json").unlink()
    _, (bare,) = analysis.load_results(tmp_path)
    summary = analysis.summarize(bare)
    assert math.isnan(summary["delay_p50_ms"]) and math.isnan(summary["tti_late_max_ms"])
    assert all(math.isnan(value) for value in summary["delay_percentiles_ms"])


def _steps(*times_ms):
    """A controller's record with only the times of its steps."""
    times = np.asarray(times_ms, dtype=np.int64) * 1_000_000
    nothing = np.full(times.size, math.nan)
    return analysis.ControllerSeries(times, nothing, nothing, nothing, nothing)


def test_the_longest_gap_between_two_steps_of_any_ues_controller():
    # UE 1 steps every 10 ms but once waits 157 ms (30 to 187 ms); UE 2 every 10 ms; UE 3 stepped once
    controllers = {1: _steps(0, 10, 20, 30, 187, 197), 2: _steps(0, 10, 20, 30), 3: _steps(5)}
    assert analysis.decision_gap_max_ms(controllers) == 157.0
    assert analysis.decision_gap_max_ms({2: _steps(0, 10, 20, 30), 3: _steps(5)}) == 10.0
    assert math.isnan(analysis.decision_gap_max_ms({}))


def test_the_share_of_the_run_a_controller_stood_still_in_steps_more_than_two_periods_late():
    # UE 1: steps 10 ms apart (the median) but twice 30 ms: 20 ms beyond a period each, 40 ms of 100 ms
    assert analysis.decision_stalled_share({1: _steps(0, 10, 20, 50, 60, 70, 100)}) == pytest.approx(0.4)
    # a gap of exactly two periods is on time (the relay's rule: more than two): only the 30 ms gap counts, 20 of 90
    assert analysis.decision_stalled_share({1: _steps(0, 10, 20, 50, 60, 80, 90)}) == pytest.approx(20 / 90)
    # the largest over the UEs; a UE with fewer than three steps has no period to measure; none at all: NaN
    on_time, late = _steps(0, 10, 20, 30), _steps(0, 10, 40, 50)
    assert analysis.decision_stalled_share({1: on_time, 2: late, 3: _steps(5, 99)}) == pytest.approx(0.4)
    assert analysis.decision_stalled_share({1: on_time}) == 0.0
    assert math.isnan(analysis.decision_stalled_share({3: _steps(5, 99)}))


def test_a_controller_that_waits_out_the_handshakes_before_the_first_byte_did_not_stand_still():
    # clamp steps on its ACKs: once at the SYN, then not until the handshake is done over a slow link (1.23 s)
    clamp = {1: _steps(0, 1230, 1240, 1250, 1260, 1270)}
    flows = [{"start_ns": 74 * MS, "first_byte_ns": 1235 * MS, "last_byte_ns": 1270 * MS}]
    assert analysis.first_byte_ns(flows) == 1235 * MS
    assert analysis.decision_gap_max_ms(clamp, analysis.first_byte_ns(flows)) == 10.0
    assert analysis.decision_stalled_share(clamp, analysis.first_byte_ns(flows)) == 0.0
    assert analysis.decision_gap_max_ms(clamp) == 1230.0  # from the first step: the handshake counted as a stall
    # a transfer that received nothing has no first byte; with none, every step counts
    assert analysis.first_byte_ns([{"start_ns": 5, "first_byte_ns": 0, "last_byte_ns": 0}]) == 0
