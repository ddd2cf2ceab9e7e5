"""summarize on small in-memory runs with hand-computed answers: one-way delay, TTSU, goodput, RLC drops, TCP
counters, Jain fairness, busy-period utilization and queue, band fraction and settling time."""

import math
from pathlib import Path

import numpy as np
import pytest
from rnf_experiments import analysis

MS = 1_000_000  # ns


def _flow(name, ue, start_ms, last_byte_ms, received, requested, kind="bulk", complete=True, error=""):
    return {
        "flow": name,
        "kind": kind,
        "ue": ue,
        "start_ns": start_ms * MS,
        "last_byte_ns": last_byte_ms * MS,
        "received_bytes": received,
        "requested_bytes": requested,
        "complete": complete,
        "error": error,
    }


def _series(time_ms, capacity=None, delivered=None, queue=None, dropped=None):
    def column(values):
        return np.asarray(values if values is not None else [0] * len(time_ms), dtype=np.int64)

    return analysis.UeSeries(
        time_ns=np.asarray(time_ms, dtype=np.int64) * MS,
        capacity_bytes=column(capacity),
        delivered_bytes=column(delivered),
        sched_bytes=column(delivered),
        queue_bytes=column(queue),
        dropped_sdus=column(dropped),
    )


def _controller(time_ms, q, q0, band):
    return analysis.ControllerSeries(
        time_ns=np.asarray(time_ms, dtype=np.int64) * MS,
        w_bytes=np.zeros(len(time_ms)),
        q_bytes=np.asarray(q, dtype=np.float64),
        q0_bytes=np.asarray(q0, dtype=np.float64),
        band_bytes=np.asarray(band, dtype=np.float64),
    )


def _packets(arrival_delivery_ms):
    records = [(1, 1400, 0, arrival * MS, delivery * MS) for arrival, delivery in arrival_delivery_ms]
    return np.array(records, dtype=analysis.PACKET_RECORD)


def _run(flows, ues=None, controllers=None, packets=None, netstat=None):
    return analysis.ArmRun(
        description={"arm": "smvs", "repetition": 0, "sweep": None},
        directory=Path("runs/smvs-0"),
        ues=ues or {},
        controllers=controllers or {},
        flows=flows,
        packets=packets if packets is not None else np.empty(0, analysis.PACKET_RECORD),
        netstat=netstat or {},
        cell_summary={},
    )


def test_delay_percentiles_count_only_packets_inside_the_traffic_window():
    flows = [
        _flow("a", 1, 10, 110, 1000, 1000),
        _flow("b", 1, 20, 120, 1000, 1000),
        _flow("c", 1, 0, 0, 0, 1000, complete=False, error="refused"),  # no byte: does not open the window at 0
    ]
    packets = _packets(
        [
            (5, 8),  # arrived before the first start (10 ms): out
            (10, 11),  # 1 ms, arrival at the window's start: in
            (20, 22),  # 2 ms
            (30, 33),  # 3 ms
            (40, 44),  # 4 ms
            (100, 120),  # 20 ms, delivered at the window's end (120 ms): in
            (115, 125),  # delivered after the last byte: out
        ]
    )
    summary = analysis.summarize(_run(flows, packets=packets))
    assert summary["duration_s"] == pytest.approx(0.11)  # 120 ms - 10 ms
    assert summary["delay_p50_ms"] == pytest.approx(3.0)  # median of [1, 2, 3, 4, 20]
    assert summary["delay_p95_ms"] == pytest.approx(16.8)  # rank 0.95 * 4 = 3.8: 4 + 0.8 * (20 - 4)


def test_delay_is_nan_without_packets_in_the_window():
    summary = analysis.summarize(_run([_flow("a", 1, 10, 20, 1000, 1000)], packets=_packets([(30, 31)])))
    assert math.isnan(summary["delay_p50_ms"]) and math.isnan(summary["delay_p95_ms"])


def test_ttsu_is_start_to_last_byte_of_complete_fixed_size_transfers_only():
    flows = [
        _flow("bulk", 1, 0, 100, 1_000_000, 1_000_000),  # 0.1 s
        _flow("page", 1, 200, 250, 250_000, 250_000, kind="web"),  # 0.05 s
        _flow("up", 1, 0, 300, 125_000, 125_000, kind="upload"),  # 0.3 s
        _flow("backlogged", 1, 0, 300, 500_000, 0),  # requested 0: no TTSU
        _flow("cut", 1, 0, 300, 100_000, 1_000_000, complete=False, error="timed out"),  # incomplete: no TTSU
        _flow("refused", 1, 0, 0, 0, 1_000_000, complete=False, error="refused"),  # no byte: no TTSU
    ]
    summary = analysis.summarize(_run(flows))
    ttsu = [t["ttsu_s"] for t in summary["transfers"]]
    assert ttsu[:3] == pytest.approx([0.1, 0.05, 0.3])
    assert all(math.isnan(t) for t in ttsu[3:])
    assert summary["ttsu_s"] == pytest.approx(0.15)  # (0.1 + 0.05 + 0.3) / 3
    assert [t["complete"] for t in summary["transfers"]] == [True, True, True, True, False, False]
    assert summary["flows"] == 6 and summary["flows_complete"] == 4


def test_ttsu_is_nan_when_no_fixed_size_transfer_completed():
    summary = analysis.summarize(_run([_flow("backlogged", 1, 0, 300, 500_000, 0)]))
    assert math.isnan(summary["ttsu_s"])


def test_goodput_per_flow_and_per_ue_leaves_uploads_out_of_the_ue():
    flows = [
        _flow("bulk", 1, 0, 100, 1_000_000, 1_000_000),  # 8e6 bit / 0.1 s = 80 Mbit/s
        _flow("page", 1, 100, 150, 250_000, 250_000, kind="web"),  # 2e6 bit / 0.05 s = 40 Mbit/s
        _flow("up", 1, 0, 100, 125_000, 125_000, kind="upload"),  # 1e6 bit / 0.1 s = 10 Mbit/s
        _flow("backlogged", 2, 0, 200, 500_000, 0),  # 4e6 bit / 0.2 s = 20 Mbit/s
        _flow("refused", 2, 0, 0, 0, 1_000_000, complete=False, error="refused"),  # no byte: NaN
    ]
    ues = {1: _series([0, 100]), 2: _series([0, 100])}
    summary = analysis.summarize(_run(flows, ues=ues))
    goodputs = [t["goodput_mbps"] for t in summary["transfers"]]
    assert goodputs[:4] == pytest.approx([80.0, 40.0, 10.0, 20.0])
    assert math.isnan(goodputs[4])
    assert summary["ues"]["1"]["goodput_mbps"] == pytest.approx(120.0)  # 80 + 40, the upload left out
    assert summary["ues"]["2"]["goodput_mbps"] == pytest.approx(20.0)  # the refused flow adds nothing


def test_total_goodput_sums_downloads_and_web_pages():
    flows = [
        _flow("bulk", 1, 0, 100, 1_000_000, 1_000_000),  # 80 Mbit/s
        _flow("page", 1, 100, 150, 250_000, 250_000, kind="web"),  # 40 Mbit/s
        _flow("backlogged", 2, 0, 200, 500_000, 0),  # 20 Mbit/s
        _flow("refused", 2, 0, 0, 0, 1_000_000, complete=False, error="refused"),  # NaN, skipped
    ]
    summary = analysis.summarize(_run(flows))
    assert summary["goodput_mbps"] == pytest.approx(140.0)  # 80 + 40 + 20


def test_total_goodput_leaves_uploads_out_like_the_per_ue_goodput():
    flows = [
        _flow("bulk", 1, 0, 100, 1_000_000, 1_000_000),  # 80 Mbit/s
        _flow("up", 1, 0, 100, 125_000, 125_000, kind="upload"),  # 10 Mbit/s, an upload
    ]
    summary = analysis.summarize(_run(flows, ues={1: _series([0, 100])}))
    assert summary["ues"]["1"]["goodput_mbps"] == pytest.approx(80.0)
    assert summary["goodput_mbps"] == pytest.approx(80.0)  # the upload's 10 Mbit/s is not downlink goodput


def test_jain_fairness_is_over_the_flows_that_have_a_goodput():
    flows = [
        _flow("a", 1, 0, 100, 375_000, 0),  # 3e6 bit / 0.1 s = 30 Mbit/s
        _flow("b", 2, 0, 100, 125_000, 0),  # 1e6 bit / 0.1 s = 10 Mbit/s
        _flow("refused", 2, 0, 0, 0, 0, complete=False, error="refused"),  # no goodput: not a flow of the index
    ]
    assert analysis.summarize(_run(flows))["jain_fairness"] == pytest.approx(0.8)  # 40^2 / (2 * (900 + 100))
    assert math.isnan(analysis.summarize(_run(flows[:1]))["jain_fairness"])  # one flow: NaN


def test_tcp_counters_are_summed_over_the_namespaces():
    netstat = {
        "server": {"out_segments": 1000, "retrans_segments": 5, "rto": 2, "spurious_rto": 1},
        "core": {"retrans_segments": 3, "rto": 1, "spurious_rto": 0},
        "ue1": {"out_segments": 50, "retrans_segments": 1},  # a missing counter counts 0
    }
    summary = analysis.summarize(_run([_flow("a", 1, 0, 100, 1000, 1000)], netstat=netstat))
    assert summary["retrans_segments"] == 9  # 5 + 3 + 1
    assert summary["rto"] == 3  # 2 + 1 + 0
    assert summary["spurious_rto"] == 1  # 1 + 0 + 0
    assert summary["netstat"] == netstat
    empty = analysis.summarize(_run([_flow("a", 1, 0, 100, 1000, 1000)]))
    assert (empty["retrans_segments"], empty["rto"], empty["spurious_rto"]) == (0, 0, 0)


def test_ue_metrics_count_the_ues_own_busy_periods_after_the_first():
    flows = [
        # UE 1: busy over (10, 50] and (80, 90] ms, a think time between its two transfers
        _flow("bulk", 1, 10, 50, 1000, 1000),
        _flow("page", 1, 70, 90, 1000, 1000, kind="web"),
        # UE 2: busy over (0, 30] ms; its transfer must not make UE 1 busy at 10 ms
        _flow("other", 2, 0, 30, 1000, 1000),
    ]
    ues = {
        # periods ending at:  0    10   20*  30   40   50   60   70   80   90   100   (* first busy period, skipped)
        1: _series(
            [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100],
            capacity=[100] * 11,
            delivered=[0, 0, 50, 100, 80, 60, 0, 0, 40, 100, 0],
            queue=[0, 0, 500, 300, 0, 100, 0, 0, 0, 200, 0],
            dropped=[9, 0, 4, 1, 0, 2, 7, 0, 0, 3, 5],
        ),
        # periods ending at:  0    10*  20   30   40
        2: _series([0, 10, 20, 30, 40], capacity=[100] * 5, delivered=[0, 90, 50, 50, 0], dropped=[1, 8, 2, 1, 6]),
        3: _series([0, 10], capacity=[100, 100], delivered=[100, 100], queue=[50, 50], dropped=[4, 4]),  # no flow
    }
    summary = analysis.summarize(_run(flows, ues=ues))
    one, two, three = (summary["ues"][ue] for ue in ("1", "2", "3"))
    # UE 1 counts the periods ending at 30, 40, 50, 80 and 90 ms
    assert one["utilization"] == pytest.approx(0.76)  # (100 + 80 + 60 + 40 + 100) / 500
    assert one["queue_p50_bytes"] == pytest.approx(100.0)  # median of [0, 0, 100, 200, 300]
    assert one["queue_p95_bytes"] == pytest.approx(280.0)  # rank 3.8: 200 + 0.8 * (300 - 200)
    assert one["queue_max_bytes"] == pytest.approx(300.0)  # the 500 of the first busy period is skipped
    assert one["queue_empty_fraction"] == pytest.approx(0.4)  # 2 of 5
    assert one["rlc_drops_sdus"] == 6  # 1 + 0 + 2 + 0 + 3: not the 9 before, 4 first, 7 thinking, 5 after
    # UE 2 counts the periods ending at 20 and 30 ms
    assert two["utilization"] == pytest.approx(0.5)  # (50 + 50) / 200
    assert (two["queue_p50_bytes"], two["queue_p95_bytes"], two["queue_max_bytes"]) == (0.0, 0.0, 0.0)
    assert two["queue_empty_fraction"] == pytest.approx(1.0)  # 2 of 2
    assert two["rlc_drops_sdus"] == 3  # 2 + 1
    # UE 3 has no transfer, so no busy period
    assert math.isnan(three["utilization"]) and math.isnan(three["queue_p50_bytes"])
    assert math.isnan(three["queue_max_bytes"]) and math.isnan(three["queue_empty_fraction"])
    assert three["rlc_drops_sdus"] == 0 and three["goodput_mbps"] == 0
    # the run: means over the UEs that have a value, drops summed
    assert summary["utilization"] == pytest.approx(0.63)  # (0.76 + 0.5) / 2
    assert summary["queue_p50_bytes"] == pytest.approx(50.0)  # (100 + 0) / 2
    assert summary["queue_p95_bytes"] == pytest.approx(140.0)  # (280 + 0) / 2
    assert summary["queue_empty_fraction"] == pytest.approx(0.7)  # (0.4 + 1.0) / 2
    assert summary["rlc_drops_sdus"] == 9  # 6 + 3 + 0


def test_band_fraction_and_settling_time_from_the_busy_controller_steps():
    flows = [_flow("bulk", 1, 100, 600, 1000, 1000), _flow("other", 2, 100, 600, 1000, 1000)]
    steps_ms = [0, 100, 200, 300, 400, 500, 600, 700]  # busy: 200 to 600 ms
    controllers = {
        # q0 = 1000, band 100: in at 0 and 100 (not busy), no reference yet at 200, then in, out, in, in
        1: _controller(
            steps_ms,
            q=[1000, 1000, 1000, 950, 1200, 1050, 1000, 1000],
            q0=[1000, 1000, math.nan, 1000, 1000, 1000, 1000, 1000],
            band=[100] * 8,
        ),
        2: _controller(steps_ms, q=[0] * 8, q0=[1000] * 8, band=[100] * 8),  # never inside the band
    }
    ues = {1: _series([0, 700]), 2: _series([0, 700]), 3: _series([0, 700])}  # UE 3: no controller
    summary = analysis.summarize(_run(flows, ues=ues, controllers=controllers))
    one, two, three = (summary["ues"][ue] for ue in ("1", "2", "3"))
    assert one["band_fraction"] == pytest.approx(0.75)  # busy steps [F, T, F, T, T], from the first T: 3 of 4
    assert one["settling_s"] == pytest.approx(0.2)  # first busy step inside at 0.3 s, transfer start 0.1 s
    assert math.isnan(two["band_fraction"]) and math.isnan(two["settling_s"])
    assert math.isnan(three["band_fraction"]) and math.isnan(three["settling_s"])
    assert summary["band_fraction"] == pytest.approx(0.75)  # UEs 2 and 3 have none
    assert summary["settling_s"] == pytest.approx(0.2)
