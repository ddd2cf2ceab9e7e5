"""Telemetry built from datapath reports, and the impairments of the telemetry channel."""

import math

import numpy as np
import pytest
from rnf_cell.config import ImpairmentConfig, Outage, parse_cell
from rnf_cell.datapath import UeReport
from rnf_cell.export import Impairments, TelemetryBuilder, cqi_for, mcs_for

CONFIG = parse_cell({"ues": [{"trace": {"generator": "constant", "rate_mbps": 10}, "queue_limit_bytes": 9000}]}, "x")


def report(**changes) -> UeReport:
    values = dict(
        ue=0,
        period=3,
        tti_end=39,
        time_ns=1_000,
        queue_new_bytes=3000,
        queue_retx_bytes=200,
        queue_sdus=3,
        sched_new_bytes=11_000,
        sched_retx_bytes=500,
        grant_ttis=10,
        capacity_bytes=12_500,
        granted_capacity_bytes=12_500,
        backlogged_capacity_bytes=12_500,
        backlogged_ttis=10,
        idle_ttis=0,
        idle_capacity_bytes=0,
        arrived_bytes=12_000,
        arrived_sdus=8,
        delivered_bytes=11_000,
        delivered_sdus=7,
        dropped_sdus=1,
        dropped_bytes=1500,
        outage_ttis=0,
        discarded_sdus=0,
        discarded_bytes=0,
        ce_marked_sdus=0,
        aqm_dropped_sdus=0,
        aqm_dropped_bytes=0,
        ece_marked_acks=0,
        held_acks=0,
        held_ack_ttis=0,
        forced_acks=0,
    )
    return UeReport(**(values | changes))


def test_a_ue_line_is_read_with_the_queue_disciplines_counters():
    line = {"type": "ue", **{key: 0 for key in report().__dict__}, "ce_marked_sdus": 3, "aqm_dropped_bytes": 1500}
    read = UeReport.from_json(line)
    assert (read.ce_marked_sdus, read.aqm_dropped_sdus, read.aqm_dropped_bytes, read.ece_marked_acks) == (3, 0, 1500, 0)


def test_message_carries_the_queue_disciplines_counters_unchanged():
    changed = report(ce_marked_sdus=7, aqm_dropped_sdus=2, aqm_dropped_bytes=2_900, ece_marked_acks=3)
    message = TelemetryBuilder(CONFIG).message(changed)
    assert (
        message.dl_ce_marked_sdus,
        message.dl_aqm_dropped_sdus,
        message.dl_aqm_dropped_bytes,
        message.ul_ece_marked_acks,
    ) == (7, 2, 2_900, 3)
    assert (message.dl_dropped_sdus, message.dl_dropped_bytes) == (1, 1500)  # tail drops, as `report` has them


def test_message_carries_the_datapath_numbers_unchanged():
    message = TelemetryBuilder(CONFIG).message(report())
    assert (message.queue_bytes, message.dl_queue_sdus) == (3200, 3)
    assert (message.dl_sched_new_bytes, message.dl_sched_retx_bytes, message.dl_grant_ttis) == (11_000, 500, 10)
    assert (message.dl_dropped_sdus, message.dl_dropped_bytes) == (1, 1500)
    assert (message.rnti, message.lcid, message.ue_ip, message.period_us) == (0x46, 3, "172.16.0.2", 10_000)
    assert message.dl_queue_limit_bytes == 9000 and not message.outage


def test_the_ttis_an_empty_queue_lost_and_their_capacity_are_the_datapaths():
    # 10 TTIs per period: the 4th emptied the queue, and 6 offered 7500 bytes the empty queue left unused
    message = TelemetryBuilder(CONFIG).message(report(backlogged_ttis=4, idle_ttis=6, idle_capacity_bytes=7_500))
    assert message.idle_counted
    assert (message.dl_idle_ttis, message.dl_idle_capacity_bytes) == (6, 7_500)
    backlogged = TelemetryBuilder(CONFIG).message(report())
    assert (backlogged.dl_idle_ttis, backlogged.dl_idle_capacity_bytes) == (0, 0)


def test_sequence_numbers_count_per_ue_from_zero():
    builder = TelemetryBuilder(CONFIG)
    assert [builder.message(report()).seq for _ in range(3)] == [0, 1, 2]


def test_outage_and_no_grant():
    message = TelemetryBuilder(CONFIG).message(
        report(outage_ttis=10, grant_ttis=0, granted_capacity_bytes=0, capacity_bytes=0)
    )
    assert message.outage and math.isnan(message.mean_mcs) and message.mean_cqi == 0


def test_cqi_and_mcs_rise_with_capacity_and_saturate():
    prb = 25
    assert cqi_for(0, prb) == 0
    assert cqi_for(1000, prb) < cqi_for(2000, prb) <= 15
    assert cqi_for(1e6, prb) == 15 and mcs_for(1e6, prb) == 28


def impaired(**settings) -> Impairments:
    return Impairments(ImpairmentConfig(**settings), np.random.default_rng(0))


def test_without_impairments_every_message_goes_at_once():
    message = TelemetryBuilder(CONFIG).message(report())
    sends = impaired().apply(message, elapsed_s=0)
    assert [(s.message, s.delay_s) for s in sends] == [(message, 0.0)]


def test_loss_duplicate_and_delay_rates():
    builder = TelemetryBuilder(CONFIG)
    channel = impaired(loss=0.2, duplicate=0.1, delay_ms=5, jitter_ms=2)
    sends = [channel.apply(builder.message(report()), 0) for _ in range(5000)]
    assert np.mean([len(s) == 0 for s in sends]) == pytest.approx(0.2, abs=0.02)
    assert np.mean([len(s) == 2 for s in sends]) == pytest.approx(0.08, abs=0.015)
    delays = [send.delay_s for group in sends for send in group]
    assert 0.005 <= min(delays) and max(delays) <= 0.007


def test_stale_message_repeats_old_content_under_a_new_sequence_number():
    builder = TelemetryBuilder(CONFIG)
    channel = impaired(stale=1.0, stale_periods=2)
    sent = [channel.apply(builder.message(report(time_ns=t)), 0) for t in (10, 20, 30, 40)]
    assert [s[0].message.time_ns if False else s[0].message.timestamp_ns for s in sent] == [10, 20, 10, 20]
    assert [s[0].message.seq for s in sent] == [0, 1, 2, 3]


def test_blackout_silences_the_channel_for_its_duration():
    channel = impaired(blackouts=(Outage(start_s=1, duration_s=2),))
    message = TelemetryBuilder(CONFIG).message(report())
    assert [len(channel.apply(message, t)) for t in (0.5, 1.0, 2.9, 3.0)] == [1, 0, 0, 1]
