"""summarize on small in-memory runs with hand-computed answers: one-way delay, TTSU, goodput, RLC drops, TCP
counters, Jain fairness, busy-period utilization and queue, and the band fraction and settling time of the cell's
queue against the reference the scenario configured (and, apart, against the controller's own record)."""

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from rnf_experiments import analysis

MS = 1_000_000  # ns


def _flow(name, ue, start_ms, last_byte_ms, received, requested, kind="bulk", complete=True, error="", progress=None):
    """A transfer's result; its progress, (ms, bytes so far) reports, is all of it at the last byte unless given."""
    if progress is None:
        progress = [(last_byte_ms, received)] if last_byte_ms else []
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
        "progress": [[at_ms * MS, so_far] for at_ms, so_far in progress],
    }


def _series(
    time_ms, capacity=None, delivered=None, queue=None, dropped=None, grant_prbs=None, capacity_prbs=None, ttis=None
):
    def column(values):
        return np.asarray(values if values is not None else [0] * len(time_ms), dtype=np.int64)

    return analysis.UeSeries(
        time_ns=np.asarray(time_ms, dtype=np.int64) * MS,
        capacity_bytes=column(capacity),
        delivered_bytes=column(delivered),
        sched_bytes=column(delivered),
        queue_bytes=column(queue),
        dropped_sdus=column(dropped),
        grant_prbs=column(grant_prbs),
        capacity_prbs=column(capacity_prbs),
        ttis=column(ttis),
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


def _run(
    flows,
    ues=None,
    controllers=None,
    packets=None,
    netstat=None,
    controller_config=None,
    queue_limits=None,
    cell_kind="virtual",
):
    return analysis.ArmRun(
        description={"arm": "smvs", "repetition": 0, "sweep": None, "controller_config": controller_config},
        directory=Path("runs/smvs-0"),
        ues=ues or {},
        controllers=controllers or {},
        flows=flows,
        packets=packets if packets is not None else np.empty(0, analysis.PACKET_RECORD),
        netstat=netstat or {},
        cell_summary={},
        queue_limits=queue_limits or {},
        cell_kind=cell_kind,
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


@pytest.mark.parametrize(
    ("cell_summary", "lost"),
    [
        ({"packet_log_dropped": 4, "tti_lateness_ns": {"max": 1}}, 4),  # the virtual cell's datapath
        ({"delay": {"lost": 7, "matched": 2}}, 7),  # a srsRAN cell's captures (cells/owd.py)
        ({"delay": {"lost": None}}, math.nan),  # a capture whose tcpdump was killed: unknown
        ({}, math.nan),  # no measurement
    ],
    ids=["virtual", "srsran", "srsran-unknown", "none"],
)
def test_the_summary_says_how_many_sdus_the_delay_covers_and_what_the_measurement_lost(cell_summary, lost):
    run = _run([_flow("a", 1, 10, 20, 1000, 1000)], packets=_packets([(10, 12), (11, 14), (30, 31)]))
    summary = analysis.summarize(replace(run, cell_summary=cell_summary))
    assert summary["delay_sdus"] == 2  # the third was delivered after the window
    assert summary["delay_records_lost"] == lost or (math.isnan(lost) and math.isnan(summary["delay_records_lost"]))


def test_ttsu_is_start_to_last_byte_of_complete_fixed_size_transfers_only():
    flows = [
        _flow("bulk", 1, 0, 100, 1_000_000, 1_000_000),  # 0.1 s
        _flow("page", 1, 200, 250, 250_000, 250_000, kind="web"),  # 0.05 s
        _flow("up", 1, 0, 300, 125_000, 125_000, kind="upload"),  # 0.3 s
        _flow("backlogged", 1, 0, 300, 500_000, 0),  # requested 0: no TTSU
        _flow("cut", 1, 0, 300, 100_000, 1_000_000, complete=False, error="timed out"),  # incomplete: no TTSU
        _flow("refused", 1, 0, 0, 0, 1_000_000, complete=False, error="refused"),  # no byte: no TTSU
        _flow("stopped", 1, 0, 300, 100_000, 1_000_000, complete=False),  # ended with the run, no error: incomplete
    ]
    summary = analysis.summarize(_run(flows))
    ttsu = [t["ttsu_s"] for t in summary["transfers"]]
    assert ttsu[:3] == pytest.approx([0.1, 0.05, 0.3])
    assert all(math.isnan(t) for t in ttsu[3:])
    assert summary["ttsu_s"] == pytest.approx(0.15)  # (0.1 + 0.05 + 0.3) / 3
    assert [t["complete"] for t in summary["transfers"]] == [True, True, True, True, False, False, False]
    assert summary["flows"] == 7 and summary["flows_complete"] == 4


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
    # the page follows the download: 1.25e6 B x 8 / 0.15 s, the upload left out
    assert summary["ues"]["1"]["goodput_mbps"] == pytest.approx(66.667, abs=1e-3)
    assert summary["ues"]["2"]["goodput_mbps"] == pytest.approx(20.0)  # the refused flow adds nothing


def test_total_goodput_is_what_downloads_and_pages_received_over_their_span():
    flows = [
        _flow("bulk", 1, 0, 100, 1_000_000, 1_000_000),
        _flow("page", 1, 100, 150, 250_000, 250_000, kind="web"),
        _flow("backlogged", 2, 0, 200, 500_000, 0),
        _flow("refused", 2, 0, 0, 0, 1_000_000, complete=False, error="refused"),  # no byte, skipped
    ]
    summary = analysis.summarize(_run(flows))
    assert summary["goodput_mbps"] == pytest.approx(70.0)  # 1.75e6 B x 8 / 0.2 s


def test_goodput_of_transfers_at_once_is_the_sum_of_their_rates():
    flows = [
        _flow("a", 1, 0, 100, 1_000_000, 0),  # 80 Mbit/s
        _flow("b", 1, 0, 100, 500_000, 0),  # 40 Mbit/s over the same 0.1 s
    ]
    summary = analysis.summarize(_run(flows, ues={1: _series([0, 100])}))
    assert summary["ues"]["1"]["goodput_mbps"] == pytest.approx(120.0)
    assert summary["goodput_mbps"] == pytest.approx(120.0)


def test_goodput_of_pages_one_after_another_counts_the_time_between_them():
    # two 250 kB pages in 50 ms each, 1 s of thinking apart: 40 Mbit/s each, 5e5 B x 8 / 1.1 s together
    flows = [
        _flow("page1", 1, 0, 50, 250_000, 250_000, kind="web"),
        _flow("page2", 1, 1050, 1100, 250_000, 250_000, kind="web"),
    ]
    summary = analysis.summarize(_run(flows, ues={1: _series([0, 1100])}))
    assert [t["goodput_mbps"] for t in summary["transfers"]] == pytest.approx([40.0, 40.0])
    assert summary["ues"]["1"]["goodput_mbps"] == pytest.approx(3.636, abs=1e-3)
    assert summary["goodput_mbps"] == pytest.approx(3.636, abs=1e-3)


def test_total_goodput_leaves_uploads_out_like_the_per_ue_goodput():
    flows = [
        _flow("bulk", 1, 0, 100, 1_000_000, 1_000_000),  # 80 Mbit/s
        _flow("up", 1, 0, 100, 125_000, 125_000, kind="upload"),  # 10 Mbit/s, an upload
    ]
    summary = analysis.summarize(_run(flows, ues={1: _series([0, 100])}))
    assert summary["ues"]["1"]["goodput_mbps"] == pytest.approx(80.0)
    assert summary["goodput_mbps"] == pytest.approx(80.0)  # the upload's 10 Mbit/s is not downlink goodput


def test_jain_fairness_is_over_what_transfers_at_once_received_together():
    flows = [
        _flow("a", 1, 0, 100, 375_000, 0),  # 3e6 bit in 0.1 s = 30 Mbit/s
        _flow("b", 2, 0, 100, 125_000, 0),  # 1e6 bit in the same 0.1 s = 10 Mbit/s
        _flow("refused", 2, 0, 0, 0, 0, complete=False, error="refused"),  # received nothing: not in the index
    ]
    assert analysis.summarize(_run(flows))["jain_fairness"] == pytest.approx(0.8)  # 40^2 / (2 * (900 + 100))
    assert math.isnan(analysis.summarize(_run(flows[:1]))["jain_fairness"])  # one transfer: NaN


def test_a_transfer_that_stalls_while_another_runs_is_starved_however_fair_the_rates_of_their_lives():
    # a download runs 0-300 ms and receives nothing while a 125 kB page loads, 100-200 ms; over their lives the
    # download has 6.67 Mbit/s, the page 10, an index of 0.96 by those rates; while they ran together the page
    # received all: 125^2 / (2 * 125^2) = 0.5
    flows = [
        _flow("a", 1, 0, 300, 250_000, 0, progress=[(100, 125_000), (200, 125_000), (300, 250_000)]),
        _flow("b", 1, 100, 200, 125_000, 125_000, kind="web"),
    ]
    assert analysis.summarize(_run(flows))["jain_fairness"] == pytest.approx(0.5)


def test_a_backlogged_download_starved_before_the_end_is_under_way_to_the_end():
    # both want data for 100 ms; a receives 125 kB by 50 ms and nothing after, b 125 kB by 50 ms and as much again:
    # 375^2 / (2 * (125^2 + 250^2)) = 0.9 (their rates to their last bytes, 20 Mbit/s each, would say 1)
    flows = [
        _flow("a", 1, 0, 50, 125_000, 0),
        _flow("b", 2, 0, 100, 250_000, 0, progress=[(50, 125_000), (100, 250_000)]),
    ]
    assert analysis.summarize(_run(flows))["jain_fairness"] == pytest.approx(0.9)


def test_pages_one_after_another_are_no_rivals():
    flows = [
        _flow("page1", 1, 0, 50, 250_000, 250_000, kind="web"),  # 40 Mbit/s
        _flow("page2", 1, 1050, 1100, 125_000, 125_000, kind="web"),  # 20 Mbit/s, an index of 0.9 by the rates
    ]
    assert math.isnan(analysis.summarize(_run(flows, ues={1: _series([0, 1100])}))["jain_fairness"])


def test_pages_beside_a_download_weigh_by_how_long_each_ran_beside_it():
    # the download receives 2.5 kB per ms throughout; page 1 (0-100 ms) 250 kB, as much as the download: 1;
    # page 2 (500-800 ms) 250 kB against the download's 750 kB: 1000^2 / (2 * (250^2 + 750^2)) = 0.8;
    # weighted by 100 and 300 ms: (100 x 1 + 300 x 0.8) / 400 = 0.85
    download = [(ms, 2500 * ms) for ms in range(100, 1001, 100)]
    flows = [
        _flow("bulk", 1, 0, 1000, 2_500_000, 0, progress=download),
        _flow("page1", 1, 0, 100, 250_000, 250_000, kind="web"),
        _flow("page2", 1, 500, 800, 250_000, 250_000, kind="web", progress=[(600, 0), (700, 100_000)]),
    ]
    assert analysis.summarize(_run(flows, ues={1: _series([0, 1000])}))["jain_fairness"] == pytest.approx(0.85)


def test_an_upload_is_no_rival_of_a_download():
    flows = [
        _flow("bulk", 1, 0, 100, 1_000_000, 0),
        _flow("up", 1, 0, 100, 125_000, 0, kind="upload"),
    ]
    assert math.isnan(analysis.summarize(_run(flows, ues={1: _series([0, 100])}))["jain_fairness"])


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


def test_on_a_srsran_cell_two_ues_add_up_to_the_share_of_the_cells_ttis_that_carried_new_data():
    # one eNB scheduler, two backlogged UEs taking turns: each UE's capacity is a full allocation in every TTI at
    # its own MCS (UE 1: 1000 B a period, UE 2: 600 B), and it got some of the TTIs
    flows = [_flow("a", 1, 10, 40, 1000, 1000), _flow("b", 2, 20, 50, 1000, 1000)]
    ues = {
        # periods ending at:  10   20*  30   40   50   60   (* the first period inside a transfer, skipped)
        1: _series([10, 20, 30, 40, 50, 60], capacity=[1000] * 6, delivered=[0, 900, 500, 400, 0, 0]),
        2: _series([10, 20, 30, 40, 50, 60], capacity=[600] * 6, delivered=[0, 0, 300, 240, 600, 0]),
    }
    summary = analysis.summarize(_run(flows, ues=ues, cell_kind="srsran-zmq"))
    # busy: any transfer, (10, 50]; each UE counts the periods ending at 30, 40 and 50 ms
    # UE 1: (500 + 400 + 0) / 3000 = 0.3; UE 2: (300 + 240 + 600) / 1800 = 0.6333: together 0.9333 of the cell
    assert summary["cell_utilization"] == pytest.approx(0.3 + 1140 / 1800)
    # each UE's own utilization is over its own transfer: UE 1 (500 + 400) / 2000, UE 2 (240 + 600) / 1200
    assert summary["ues"]["1"]["utilization"] == pytest.approx(0.45)
    assert summary["ues"]["2"]["utilization"] == pytest.approx(0.7)
    # the virtual cell's UEs each have a trace, a link of their own; one UE's utilization is the cell's
    assert math.isnan(analysis.summarize(_run(flows, ues=ues))["cell_utilization"])
    alone = analysis.summarize(_run(flows[:1], ues={1: ues[1]}, cell_kind="srsran"))
    assert math.isnan(alone["cell_utilization"])


def test_from_an_enb_that_reports_resource_blocks_the_cells_share_is_counted_in_them():
    # A 25-PRB cell that ran 10, 10, 9 and 10 TTIs in the periods ending at 20, 30, 40 and 50 ms: 250, 250, 225
    # and 250 PRBs. The byte estimates disagree with the grants (UE 1's says 0.3 of the cell): the PRBs decide.
    flows = [_flow("a", 1, 10, 40, 1000, 1000), _flow("b", 2, 20, 50, 1000, 1000)]
    cell_prbs = [250, 250, 250, 225, 250, 250]
    ues = {
        # periods ending at:  10   20*  30   40   50   60   (* the first period inside a transfer, skipped)
        1: _series(
            [10, 20, 30, 40, 50, 60],
            capacity=[1000] * 6,
            delivered=[0, 900, 500, 400, 0, 0],
            grant_prbs=[0, 250, 150, 100, 0, 0],
            capacity_prbs=cell_prbs,
        ),
        2: _series(
            [10, 20, 30, 40, 50, 60],
            capacity=[600] * 6,
            delivered=[0, 0, 300, 240, 600, 0],
            grant_prbs=[0, 0, 100, 100, 250, 0],
            capacity_prbs=cell_prbs,
        ),
    }
    summary = analysis.summarize(_run(flows, ues=ues, cell_kind="srsran-zmq"))
    # busy periods ending at 30, 40 and 50 ms: the cell had 250 + 225 + 250 = 725 PRBs
    # UE 1: 150 + 100 + 0 PRBs; UE 2: 100 + 100 + 250; together 700 of 725
    assert summary["cell_utilization"] == pytest.approx(700 / 725)
    assert math.isnan(summary["enb_ttis_per_ms"])  # no report counted TTIs
    # UE 1 leaves the cell after 40 ms: its reports stop, UE 2's still count the cell's 725 PRBs (not UE 1's 475)
    ues[1] = _series([10, 20, 30, 40], grant_prbs=[0, 250, 150, 100], capacity_prbs=cell_prbs[:4])
    summary = analysis.summarize(_run(flows, ues=ues, cell_kind="srsran-zmq"))
    assert summary["cell_utilization"] == pytest.approx(700 / 725)


def test_the_controllers_own_band_fraction_and_settling_time_from_its_busy_steps():
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
    assert one["controller_band_fraction"] == pytest.approx(0.75)  # busy steps [F, T, F, T, T], from the first T
    assert one["controller_settling_s"] == pytest.approx(0.2)  # first busy step inside at 0.3 s, start 0.1 s
    assert math.isnan(two["controller_band_fraction"]) and math.isnan(two["controller_settling_s"])
    assert math.isnan(three["controller_band_fraction"]) and math.isnan(three["controller_settling_s"])
    assert summary["controller_band_fraction"] == pytest.approx(0.75)  # UEs 2 and 3 have none
    assert summary["controller_settling_s"] == pytest.approx(0.2)
    # no controller table: an arm without a reference of its own, so nothing is measured against one
    assert one["reference_source"] == "" and math.isnan(one["band_fraction"]) and math.isnan(summary["band_fraction"])


def test_the_cells_queue_is_held_to_the_configured_q0_whatever_the_controller_records():
    # The controller was given twice the real queue limit and records a q0 of 50 kB at the RLC limit, its queue
    # inside its own band; the scenario configured q0 = 10 kB. With the cell's limit of 60 kB the band is
    # half of min(10000, 60000 - 10000) = 5000 B: inside is 5000 < q < 15000.
    flows = [_flow("bulk", 1, 0, 100, 1000, 1000)]
    periods_ms = [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]  # busy (0, 100]; 10 ms, the first, is skipped
    queue = [0, 2000, 4000, 9000, 16000, 12000, 5000, 8000, 14000, 15000, 11000]
    # busy periods 20..100 ms: 4000 out, 9000 in, 16000 out, 12000 in, 5000 out (strictly), 8000 in, 14000 in,
    # 15000 out (strictly), 11000 in: from the first inside (30 ms) on, 5 of 8
    controller = _controller(periods_ms, q=[50_000] * 11, q0=[50_000] * 11, band=[25_000] * 11)
    run = _run(
        flows,
        ues={1: _series(periods_ms, queue=queue)},
        controllers={1: controller},
        controller_config={"kind": "smvs", "q0_bytes": 10_000},
        queue_limits={1: 60_000},
    )
    summary = analysis.summarize(run)
    one = summary["ues"]["1"]
    assert one["reference_source"] == "q0_bytes"
    assert (one["reference_p50_bytes"], one["band_p50_bytes"]) == (10_000, 5_000)
    assert one["band_fraction"] == pytest.approx(5 / 8)
    assert one["settling_s"] == pytest.approx(0.03)  # the period ending at 30 ms, the transfer started at 0
    assert one["controller_band_fraction"] == 1.0  # what the controller says of itself, kept apart
    assert (summary["band_fraction"], summary["reference_p50_bytes"]) == (pytest.approx(5 / 8), 10_000)


def test_a_delay_target_is_measured_against_the_rate_the_cell_served_in_each_period():
    # target 20 ms, 10 ms periods. Served 7500 B (750 kB/s): reference 15000 B, band half of
    # min(15000, 100000 - 15000) = 7500. Served 3500 B (350 kB/s): reference 7000 B, band 3500.
    flows = [_flow("bulk", 1, 0, 60, 1000, 1000)]
    periods_ms = [0, 10, 20, 30, 40, 50, 60]  # busy (0, 60]; the first busy period (10 ms) is skipped
    served = [0, 7500, 7500, 7500, 3500, 3500, 7500]
    queue = [0, 0, 20000, 8000, 10400, 3600, 22400]
    # 20 ms: |20000 - 15000| = 5000 < 7500 in; 30 ms: 7000 in; 40 ms: |10400 - 7000| = 3400 < 3500 in;
    # 50 ms: |3600 - 7000| = 3400 in; 60 ms: |22400 - 15000| = 7400 in. All 5 in, from the first (20 ms) on.
    # Against the controller's constant q0 of 15000 B, 40 and 50 ms would be out.
    run = _run(
        flows,
        ues={1: _series(periods_ms, delivered=served, queue=queue)},
        controller_config={"kind": "smvs", "target_ms": 20},
        queue_limits={1: 100_000},
    )
    one = analysis.summarize(run)["ues"]["1"]
    assert one["reference_source"] == "target_ms"
    assert one["band_fraction"] == 1.0
    assert one["settling_s"] == pytest.approx(0.02)
    assert one["reference_p50_bytes"] == pytest.approx(15_000)  # median of [15000, 15000, 7000, 7000, 15000]
    assert one["band_p50_bytes"] == pytest.approx(7_500)
    # 100 more bytes at 40 ms and it is out: |10500 - 7000| < 3500 fails
    queue[4] = 10_500
    run = _run(
        flows,
        ues={1: _series(periods_ms, delivered=served, queue=queue)},
        controller_config={"kind": "smvs", "target_ms": 20},
        queue_limits={1: 100_000},
    )
    assert analysis.summarize(run)["ues"]["1"]["band_fraction"] == pytest.approx(4 / 5)


@pytest.mark.parametrize(
    "controller",
    [
        {"kind": "smvs", "q0_bytes": 40_000},
        {"kind": "smvs", "target_ms": 40},  # 40 ms x 10000 B per 10 ms = 40000 B
        {"kind": "smvs"},  # the controller's own q0: 40000 B
    ],
    ids=["q0", "target", "controller"],
)
def test_the_band_narrows_near_the_queue_limit_configured_or_else_reported(controller):
    # q0 = 40000 B. The eNB reports a limit of 50000 B: band = half of min(40000, 50000 - 40000) = 5000 B, not
    # the 20000 B of half the reference. A configured B_max of 48000 B comes first: 4000 B.
    flows = [_flow("bulk", 1, 0, 30, 1000, 1000)]
    periods_ms = [0, 10, 20, 30]  # busy periods 20 and 30 ms count
    served = [10_000] * 4
    own = {1: _controller(periods_ms, q=[0] * 4, q0=[40_000] * 4, band=[0] * 4)}

    def band(config, queue):
        ues = {1: _series(periods_ms, delivered=served, queue=[0, 0, *queue])}
        run = _run(flows, ues=ues, controllers=own, controller_config=config, queue_limits={1: 50_000})
        one = analysis.summarize(run)["ues"]["1"]
        return one["band_p50_bytes"], one["band_fraction"]

    assert band(controller, [44_999, 35_000]) == (5_000, 1 / 2)  # 4999 away: in; 5000 away: out
    assert band(controller | {"b_max_bytes": 48_000}, [43_999, 36_000]) == (4_000, 1 / 2)


def test_rnf_is_held_to_its_q_ref_with_the_margin_rule_and_no_limit_known():
    # q_ref = 8000 B and no queue limit reported: the band is half the reference, 4000 B
    flows = [_flow("bulk", 1, 0, 40, 1000, 1000)]
    run = _run(
        flows,
        ues={1: _series([0, 10, 20, 30, 40], queue=[0, 0, 2000, 4002, 11998])},  # out, in, in
        controller_config={"kind": "rnf", "q_ref_bytes": 8000},
    )
    one = analysis.summarize(run)["ues"]["1"]
    assert (one["reference_source"], one["band_p50_bytes"]) == ("q_ref_bytes", 4000)
    assert one["band_fraction"] == 1.0 and one["settling_s"] == pytest.approx(0.03)


def test_without_a_configured_reference_the_controllers_own_q0_is_the_reference():
    # smvs with neither q0_bytes nor target_ms: its default reference is a forecast margin it measures itself, so the
    # cell's queue is held to the q0 the controller recorded at its last step at or before each period's end
    flows = [_flow("bulk", 1, 0, 40, 1000, 1000)]
    controller = _controller([5, 30], q=[0, 0], q0=[4000, 8000], band=[0, 0])
    run = _run(
        flows,
        ues={1: _series([0, 10, 20, 30, 40], queue=[0, 0, 5000, 3000, 9000])},
        controllers={1: controller},
        controller_config={"kind": "smvs"},
        queue_limits={1: 100_000},
    )
    one = analysis.summarize(run)["ues"]["1"]
    # 20 ms: q0 4000 (the step at 5 ms), band 2000, |5000 - 4000| in; 30 and 40 ms: q0 8000 (the step at 30 ms
    # counts for the period ending then), band 4000: |3000 - 8000| out, |9000 - 8000| in
    assert one["reference_source"] == "controller"
    assert one["band_fraction"] == pytest.approx(2 / 3)
    assert one["reference_p50_bytes"] == pytest.approx(8000)
    # the controller's first step at 35 ms: the periods before it have no reference and are never inside
    late = _controller([35], q=[0], q0=[9000], band=[0])
    run = _run(flows, ues=run.ues, controllers={1: late}, controller_config={"kind": "smvs"})
    one = analysis.summarize(run)["ues"]["1"]
    assert one["band_fraction"] == 1.0 and one["settling_s"] == pytest.approx(0.04)


def test_two_periods_are_enough_to_know_the_period():
    # the transfer began before the series: both periods are busy, the first skipped; 5000 B at 10000 B per
    # 10 ms drain in 5 ms
    flows = [_flow("bulk", 1, -5, 10, 1000, 1000)]
    summary = analysis.summarize(_run(flows, ues={1: _series([0, 10], capacity=[10_000] * 2, queue=[0, 5000])}))
    assert summary["sojourn_p50_ms"] == 5.0


def test_the_enbs_pace_is_its_ttis_over_the_time_of_the_busy_periods():
    # busy (10, 50]: the periods ending at 30, 40 and 50 ms count (20 ms, the first, is partial): 30 ms of wall time
    flows = [_flow("a", 1, 10, 50, 1000, 1000)]
    ues = {
        1: _series([10, 20, 30, 40, 50, 60], ttis=[10, 10, 7, 8, 9, 10]),  # 7 + 8 + 9 = 24 TTIs in 30 ms
        2: _series([10, 20, 30, 40], ttis=[10, 10, 1, 1]),  # its reports stop: UE 1's cover more time
    }
    summary = analysis.summarize(_run(flows, ues=ues, cell_kind="srsran-zmq"))
    assert summary["enb_ttis_per_ms"] == pytest.approx(24 / 30)
