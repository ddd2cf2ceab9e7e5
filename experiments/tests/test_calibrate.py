"""`rnf calibrate`: a virtual cell from a srsRAN results folder (capacity, delays, HARQ, queue limit), checked against
hand-built runs whose figures are known, and the fidelity bounds of issue 18."""

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from rnf_cell import traces
from rnf_cli.main import cli
from rnf_experiments import calibrate
from rnf_experiments.analysis import PACKET_RECORD
from rnf_experiments.scenario import load_scenario
from rnf_foundation.errors import UserError

MS = 1_000_000


def period(time_ms: float, seq: int, tti: int, queue: int, new: int, retx: int = 0, grants: int = 10):
    return calibrate.Period(
        time_ns=int(time_ms * MS), seq=seq, tti=tti, queue=queue, sched_new=new, sched_retx=retx,
        grant_ttis=grants, limit_bytes=0, limit_sdus=256,
    )  # fmt: skip


def test_where_data_waited_the_capacity_is_what_was_scheduled_over_the_periods_wall_clock_length():
    # queued at every report: periods 1-3 are backlogged; 20000 B (2000 of them resent) in 10 ms is 16 Mbit/s,
    # 18000 B in 12.5 ms (a slow period) 11.52 Mbit/s
    periods = [
        period(0, 1, 100, 5000, 0),
        period(10, 2, 110, 5000, 18_000, 2000),
        period(20, 3, 120, 5000, 18_000, 2000),
        period(32.5, 4, 130, 5000, 18_000),
    ]
    rows = calibrate.capacity_series(periods, 0)
    np.testing.assert_allclose(rows, [(0.0, 16.0), (0.01, 16.0), (0.02, 11.52), (0.0325, 0.0)])
    # from a start inside the second period: its last 4 ms, at the period's rate
    rows = calibrate.capacity_series(periods, 6 * MS)
    np.testing.assert_allclose(rows, [(0.0, 16.0), (0.004, 16.0), (0.014, 11.52), (0.0265, 0.0)])


def test_where_the_queue_ran_empty_the_capacity_is_the_peak_per_granted_tti_nearby_times_the_ttis_run():
    # never backlogged: 1500 B per granted TTI, then 1800 (the peak, looked for ahead too), then no grant; the eNB
    # ran 9 TTIs per 10 ms period: 1800 x 9 B in 10 ms = 12.96 Mbit/s. After a lost message (seq 3 to 5) the TTIs
    # since the last one span two periods: the period's own 10 ms count, 14.4 Mbit/s
    periods = [
        period(0, 1, 100, 0, 0),
        period(10, 2, 109, 0, 3000, grants=2),
        period(20, 3, 118, 0, 18_000),
        period(30, 5, 136, 0, 0, grants=0),
    ]
    rows = calibrate.capacity_series(periods, 0)
    np.testing.assert_allclose(rows, [(0.0, 12.96), (0.01, 12.96), (0.02, 14.4), (0.03, 0.0)])
    # a grant more than half a second away is not nearby
    far = [*periods, period(700, 6, 6436, 0, 30_000)]
    assert calibrate.capacity_series(far, 0)[0] == pytest.approx((0.0, 12.96))


def _telemetry(arm: str, periods: list[tuple[int, int, int, int]], ttis: int = 10) -> str:
    """Line protocol of a srsRAN run: (queue, new, retx, capacity) per 10 ms period, `ttis` TTIs each."""
    lines = []
    for index, (queue, new, retx, capacity) in enumerate(periods):
        at = (index * 10 + 1) * MS
        tags = f"arm={arm},cell=1,cell_kind=srsran,rnti=70,ue=1"
        lines.append(
            f"telemetry,{tags} seq={index}i,tti={1000 + ttis * index}i,period_us=10000i,queue_new_bytes={queue}i,"
            f"queue_retx_bytes=0i,sched_new_bytes={new}i,sched_retx_bytes={retx}i,grant_ttis=10i,"
            f"queue_limit_bytes=0i,queue_limit_sdus=256i {at}"
        )
        lines.append(
            f"cell,{tags} capacity_bytes={capacity}i,delivered_bytes={new}i,sched_new_bytes={new}i,"
            f"sched_retx_bytes={retx}i,queue_new_bytes={queue}i,queue_retx_bytes=0i,dropped_sdus=0i {at}"
        )
    return "\n".join(lines) + "\n"


RB_CONF = """// srsenb's rb.conf, as the run folder keeps it
qci_config = (
{
  qci = 7;
  pdcp_config = {
    discard_timer = -1;  // qci = 9; discard_timer = 1; (a comment)
  }
},
{
  qci = 9;
  pdcp_config = {
    discard_timer = 150;
    status_report_required = true;
  }
  rlc_config = { ul_am = { t_poll_retx = 120; }; };
}
);
"""


def _srsran_results(root: Path, ttis_per_period: int = 10) -> Path:
    """Two arms on a srsRAN cell: `cubic` keeps the queue full (20000 B scheduled per 10 ms, 2000 of them resent),
    `smvs` lets it run empty; `smvs`'s packets took 2 ms (one odd packet), 6 ms (999) and 20 ms (1000). Each arm's
    1000 uplink packets, 52 B each, leave the UE 1 ms apart from 100.5 ms and reach the core in bunches every 10 ms,
    7 ms after each multiple of it."""
    arms = [{"name": "smvs", "kind": "proxy", "controller": {"kind": "smvs"}}, {"name": "cubic", "cc": "cubic"}]
    scenario = {"name": "real", "description": "on srsRAN", "duration_s": 2, "repetitions": 1, "seed": 5,
                "cell": {"kind": "srsran", "n_prb": 25, "qci": 9, "telemetry_period_ms": 10}, "arms": arms}  # fmt: skip
    root.mkdir(parents=True)
    (root / "metadata.json").write_text(json.dumps({"scenario": "real", "scenario_data": scenario}))
    handshakes = {"smvs": 26, "cubic": 30}
    for arm, periods in (
        ("smvs", [(0, 9000, 0, 20_000)] * 30),
        ("cubic", [(50_000, 18_000, 2000, 20_000)] * 30),
    ):
        run = root / "runs" / f"0-{arm}"
        (run / "flows").mkdir(parents=True)
        (run / "run.json").write_text(json.dumps({"arm": arm, "repetition": 0, "sweep": None, "complete": True}))
        (run / "series.lp").write_text(_telemetry(arm, periods, ttis_per_period))
        (run / "rb.conf").write_text(RB_CONF)
        flow = {"flow": "ue1-bulk1-1", "kind": "bulk", "ue": 1, "start_ns": 50 * MS,
                "connected_ns": (50 + handshakes[arm]) * MS, "first_byte_ns": 90 * MS, "last_byte_ns": 290 * MS,
                "received_bytes": 10**6, "requested_bytes": 0, "complete": True, "error": "",
                "progress": [[290 * MS, 10**6]]}  # fmt: skip
        (run / "flows" / "ue1-bulk1-1.json").write_text(json.dumps(flow))
        uplink = np.zeros(1000, PACKET_RECORD)
        left_us = 100_500 + np.arange(1000) * 1000
        uplink["arrival_ns"] = left_us * 1000
        uplink["delivery_ns"] = (np.ceil(left_us / 10_000) * 10 + 7) * MS
        uplink["length"] = 52
        uplink.tofile(run / "uplink-packets.bin")
        if arm == "smvs":
            delays_ms = np.array([2.0] + [6.0] * 999 + [20.0] * 1000)
            packets = np.zeros(delays_ms.size, PACKET_RECORD)
            packets["arrival_ns"] = 100 * MS + np.arange(delays_ms.size) * 10_000
            packets["delivery_ns"] = packets["arrival_ns"] + (delays_ms * MS).astype(np.uint64)
            packets.tofile(run / "packets.bin")
    return root


def test_the_delivery_lag_is_from_each_report_to_the_tun_receiving_the_last_byte_scheduled_by_it():
    # reports at 10, 20 and 30 ms of 3060, 3060 and 0 B (RLC's count: 2 % headers, scaled to the 6000 B delivered);
    # four 1500 B packets reach the TUN at 12, 18, 25 and 27 ms (the log in another order). By 10 ms 3000 B were
    # scheduled, all delivered with the second packet (18 ms): 8 ms; by 20 ms 6000, with the fourth (27 ms): 7 ms;
    # the third report scheduled nothing
    lags = calibrate.delivery_lag_ms(
        [10 * MS, 20 * MS, 30 * MS], [3060, 3060, 0], [25 * MS, 12 * MS, 27 * MS, 18 * MS], [1500] * 4
    )
    assert lags == pytest.approx([8.0, 7.0])
    assert calibrate.delivery_lag_ms([10 * MS], [3000], [], []) == []  # no packet log: nothing to measure


def test_a_stack_slower_than_real_time_stretches_the_harq_round_trip_and_discard_timer_in_wall_clock_ms(tmp_path):
    # 8 TTIs per 10 ms period: 0.8 TTIs per ms, so HARQ's 8 TTIs are 10 ms and the discard timer's 150 TTIs 187.5 ms
    results = _srsran_results(tmp_path / "real", ttis_per_period=8)
    found = calibrate.calibrate(results)
    assert found.ues[0].ttis_per_ms == pytest.approx(0.8)
    assert found.discard_timer_ms == 187.5
    path = calibrate.write(found, json.loads((results / "metadata.json").read_text())["scenario_data"], tmp_path / "c")
    scenario, _ = load_scenario(path)
    assert (scenario.cell.ues[0].harq_rtt_ms, scenario.cell.ues[0].discard_timer_ms) == (10.0, 187.5)


def test_uplink_transmissions_are_limited_to_what_they_carried_where_they_left_a_packet_behind():
    # written (ms from the start) -> reaching the core, bytes: A and B in one transmission at 5 ms (0.2 ms apart),
    # which left C behind although C was written 3 ms before it, more than the least delay of 2 ms; C and D at
    # 15 ms left nothing behind; E at 25 ms is after the trace's end (20 ms), F before its start
    written_ms = [0.0, 1.0, 2.0, 14.5, 20.0, -3.0]
    core_ms = [5.0, 5.2, 15.0, 15.1, 25.0, -1.0]
    records = np.zeros(6, PACKET_RECORD)
    records["arrival_ns"] = [round((100 + t) * MS) for t in written_ms]
    records["delivery_ns"] = [round((100 + t) * MS) for t in core_ms]
    records["length"] = [52, 60, 52, 52, 1500, 52]
    rows = calibrate.uplink_transmissions(records, 100 * MS, 0.02, least_delay_ms=2.0)
    assert rows == [(0.005, 112), (0.015, None), (0.02, None)]
    # with a least delay of 4 ms, C (written 3 ms before) could not have gone at 5 ms: nothing was left behind
    assert calibrate.uplink_transmissions(records, 100 * MS, 0.02, least_delay_ms=4.0)[0] == (0.005, None)


def test_a_srsran_run_calibrates_a_virtual_cell_that_loads_as_a_scenario(tmp_path):
    results = _srsran_results(tmp_path / "real")
    found = calibrate.calibrate(results)
    assert found.reference_arm == "cubic"  # its queue held data through every period
    (ue,) = found.ues
    assert ue.backhaul_delay_ms == 6.0  # the 0.1 % quantile of 2000 delays: not the one odd packet at 2 ms
    # cubic's uplink: its delays, 100 times 7.5, 8.5, ..., 16.5 ms, least 7.5 and median 12 ms; transmissions at
    # 117, 127, ... ms, from its connection attempt at 50 ms: 67, 77, ..., 237 ms before the trace ends at 241 ms,
    # none of which left a packet behind
    assert (ue.uplink_delay_ms, ue.uplink_p50_ms) == (7.5, 12.0)
    assert ue.uplink == [(pytest.approx(0.067 + 0.01 * k), None) for k in range(18)] + [(pytest.approx(0.241), None)]
    assert ue.harq_bler == 0.1  # 2000 of every 20000 B scheduled while data waited were resent
    assert (ue.queue_limit_bytes, ue.queue_limit_sdus) == (0, 256)
    assert ue.ttis_per_ms == pytest.approx(1.0)
    assert found.discard_timer_ms == 150.0  # QCI 9's in rb.conf
    # from cubic's connection attempt at 50 ms: 16 Mbit/s (20000 B per 10 ms) until its telemetry ends at 291 ms
    assert ue.capacity[0] == pytest.approx((0.0, 16.0)) and ue.capacity[-1] == pytest.approx((0.241, 0.0))
    assert ue.mean_rate_mbps == pytest.approx(16.0)
    path = calibrate.write(found, json.loads((results / "metadata.json").read_text())["scenario_data"], tmp_path / "c")
    scenario, _ = load_scenario(path)
    assert scenario.name == "real-calibrated" and [arm.name for arm in scenario.arms] == ["smvs", "cubic"]
    assert scenario.cell.kind == "virtual" and scenario.cell.wired.delay_ms == 0.0 and scenario.cell.prb == 25
    cell_ue = scenario.cell.ues[0]
    assert (cell_ue.backhaul_delay_ms, cell_ue.uplink_delay_ms, cell_ue.harq_bler) == (6.0, 7.5, 0.1)
    assert cell_ue.delivery_delay_ms == 0.0  # the packets' lengths are 0: no lag to measure, all before the queue
    assert cell_ue.uplink_sr_period_ms == 0.0 and cell_ue.uplink_trace is not None
    # the transmissions the virtual cell will replay, in microseconds, none limited
    uplink = traces.read_uplink_csv(cell_ue.uplink_trace.file)
    assert uplink["time_us"].tolist() == [67_000 + 10_000 * k for k in range(18)] + [241_000]
    assert set(uplink["limit"].tolist()) == {traces.NO_LIMIT}
    assert (cell_ue.queue_limit_sdus, cell_ue.harq_rtt_ms, cell_ue.discard_timer_ms) == (256, 8.0, 150.0)
    assert cell_ue.trace_start == "first_packet"  # the traces count from the flow's connection attempt
    # the trace the virtual cell will replay: 2000 B per 1 ms TTI for 241 ms
    trace = traces.read_csv(tmp_path / "c" / "capacity-ue1.csv")
    assert trace.size == 241 and np.all(traces.usable_bytes(trace) == 2000)
    summary = json.loads((tmp_path / "c" / "calibration.json").read_text())
    assert summary["reference_arm"] == "cubic" and summary["ues"][0]["capacity"] == "capacity-ue1.csv"
    assert summary["ues"][0]["uplink"] == "uplink-ue1.csv"


def test_runs_without_uplink_captures_are_refused_naming_what_is_missing(tmp_path):
    results = _srsran_results(tmp_path / "real")
    for path in results.glob("runs/*/uplink-packets.bin"):
        path.unlink()
    with pytest.raises(UserError, match=r"0-cubic: UE 1 has no uplink packet records \(uplink-packets\.bin\)"):
        calibrate.calibrate(results)


def test_an_uplink_packet_log_cut_inside_a_record_is_refused_naming_it(tmp_path):
    results = _srsran_results(tmp_path / "real")
    path = results / "runs" / "0-cubic" / "uplink-packets.bin"
    path.write_bytes(path.read_bytes()[:-10])  # 1000 records of 24 bytes less 10: 23990 bytes
    with pytest.raises(UserError, match=r"0-cubic/uplink-packets\.bin: 23990 bytes, not a whole number of 24-byte"):
        calibrate.calibrate(results)


def test_a_virtual_cell_results_folder_is_refused_by_name(tmp_path):
    results = _srsran_results(tmp_path / "real")
    data = json.loads((results / "metadata.json").read_text())
    data["scenario_data"]["cell"] = {"kind": "virtual"}
    (results / "metadata.json").write_text(json.dumps(data))
    with pytest.raises(UserError, match=r"metadata\.json: cell\.kind is 'virtual'"):
        calibrate.calibrate(results)


def test_a_run_without_a_queue_limit_is_refused_naming_its_series(tmp_path):
    results = _srsran_results(tmp_path / "real")
    series = results / "runs" / "0-cubic" / "series.lp"
    series.write_text(series.read_text().replace("queue_limit_sdus=256i", "queue_limit_sdus=0i"))
    with pytest.raises(UserError, match=r"0-cubic/series\.lp: UE 1's telemetry reported no queue limit"):
        calibrate.calibrate(results)


def test_fidelity_holds_utilization_to_3_points_and_the_queue_to_20_percent_or_3000_bytes():
    def arm(utilization, p50, p95):
        return {"utilization": utilization, "queue_p50_bytes": p50, "queue_p95_bytes": p95, "delay_p95_ms": 20.0}

    srsran = {"arms": {"smvs": arm(0.95, 20_000, 30_000), "bbr": arm(0.90, 2000, 60_000), "only-real": arm(1, 1, 1)}}
    virtual = {"arms": {"smvs": arm(0.979, 24_000, 36_100), "bbr": arm(0.935, 4900, 48_000)}}
    rows = {(row.arm, row.figure): row for row in calibrate.fidelity(srsran, virtual)}
    assert {arm for arm, _ in rows} == {"smvs", "bbr"}
    assert rows["smvs", "utilization %"].met  # 2.9 points
    assert not rows["bbr", "utilization %"].met  # 3.5 points
    assert rows["smvs", "queue p50 kB"].met and not rows["smvs", "queue p95 kB"].met  # 20 % exactly; 20.3 %
    assert rows["bbr", "queue p50 kB"].met  # 2900 B off 2000: under the 3000 B floor
    assert rows["bbr", "queue p95 kB"].met and rows["bbr", "queue p95 kB"].bound == "±12.0 kB"  # 12000 B: 20 %
    assert rows["smvs", "delay p95 ms"].met is None  # shown, no bound


def test_fidelity_shows_the_standard_error_of_each_side_from_its_repetitions():
    def run(arm, utilization, p50):
        return {"arm": arm, "utilization": utilization, "queue_p50_bytes": p50, "queue_p95_bytes": 50_000,
                "delay_p95_ms": 30.0}  # fmt: skip

    means = {"bbr": {"utilization": 0.96, "queue_p50_bytes": 34_000, "queue_p95_bytes": 50_000, "delay_p95_ms": 30.0}}
    srsran = {"arms": means, "runs": [run("bbr", 0.95, 30_000), run("bbr", 0.97, 34_000), run("bbr", 0.96, 38_000),
                                      run("cubic", 0.5, 1)]}  # fmt: skip
    virtual = {"arms": means, "runs": [run("bbr", 0.96, 34_000)]}
    rows = {row.figure: row for row in calibrate.fidelity(srsran, virtual)}
    # 95, 97, 96 %: sample standard deviation 1 point, over sqrt(3); 30, 34, 38 kB: 4 kB over sqrt(3)
    assert rows["utilization %"].srsran_error == pytest.approx(1 / 3**0.5)
    assert rows["queue p50 kB"].srsran_error == pytest.approx(4 / 3**0.5)
    assert rows["queue p95 kB"].srsran_error == 0.0  # the same in every repetition
    assert rows["utilization %"].virtual_error is None  # one repetition: no spread to show


def test_the_command_writes_the_calibrated_scenario_then_checks_a_run_of_it(tmp_path):
    results = _srsran_results(tmp_path / "real")
    written = CliRunner().invoke(cli, ["calibrate", str(results)])
    assert written.exit_code == 0, written.output
    said = " ".join(written.output.split())  # the console wraps its lines
    assert "capacity from arm 'cubic', 16.00 Mbit/s" in said and "18 transmissions" in said
    assert "backhaul 6.0 ms before the queue, 0.0 ms after it" in said
    assert (results / "calibrated" / "scenario.toml").is_file()
    figures = {"utilization": 0.9, "queue_p50_bytes": 20_000, "queue_p95_bytes": 30_000, "delay_p95_ms": 21.0}
    summary: dict[str, Any] = {"arms": {"smvs": dict(figures)}}
    summary["runs"] = [{**figures, "arm": "smvs", "utilization": u} for u in (0.89, 0.91)]  # 90 ± 1 %
    (results / "summary.json").write_text(json.dumps(summary))
    del summary["runs"]
    summary["arms"]["smvs"]["utilization"] = 0.95
    (tmp_path / "virtual").mkdir()
    (tmp_path / "virtual" / "summary.json").write_text(json.dumps(summary))
    checked = CliRunner().invoke(cli, ["calibrate", str(results), "--check", str(tmp_path / "virtual")])
    assert checked.exit_code == 0, checked.output
    utilization = next(line for line in checked.output.splitlines() if "utilization" in line)
    assert "90.0 ± 1.0" in utilization and "95.0" in utilization and "NO" in utilization
    assert "95.0 ±" not in utilization  # one repetition: no standard error


def test_the_discard_timer_is_the_bearers_qcis_and_infinity_is_none(tmp_path):
    rb_conf = tmp_path / "rb.conf"
    rb_conf.write_text(RB_CONF)
    assert calibrate.discard_timer_ms(rb_conf, 9) == 150.0
    assert calibrate.discard_timer_ms(rb_conf, 7) == 0.0  # -1: infinity; the comment after it is no qci 9
    with pytest.raises(UserError, match=r"rb\.conf: no qci = 8 in qci_config"):
        calibrate.discard_timer_ms(rb_conf, 8)
    with pytest.raises(UserError, match=r"nothing\.conf: cannot read"):
        calibrate.discard_timer_ms(tmp_path / "nothing.conf", 9)


def test_an_output_folder_that_cannot_be_written_is_one_line_naming_it(tmp_path):
    results = _srsran_results(tmp_path / "real")
    (tmp_path / "taken").write_text("a file where the folder would go")
    written = CliRunner().invoke(cli, ["calibrate", str(results), "--output", str(tmp_path / "taken" / "cell")])
    assert written.exit_code == 2 and "taken/cell: cannot write the calibrated cell" in written.output
