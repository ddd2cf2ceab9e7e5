"""The `cell` series derived from a srsRAN cell's telemetry: capacity from the UE's recent peak per granted TTI."""

import math

from rnf_experiments.cells.derive import CapacityEstimate, cell_fields
from rnf_telemetry.message import TelemetryMessage

MS = 1_000_000


def message(
    time_ms: int,
    grant_ttis: int,
    new: int,
    retx: int = 0,
    queue: int = 0,
    tti: int | None = None,
    mcs: float = math.nan,
    grant_prbs: int = 0,
    cell_prbs: int = 0,
) -> TelemetryMessage:
    return TelemetryMessage(
        cell_id=1,
        rnti=0x46,
        lcid=3,
        timestamp_ns=time_ms * MS,
        tti=time_ms if tti is None else tti,
        seq=time_ms // 10,
        period_us=10_000,
        dl_grant_ttis=grant_ttis,
        dl_sched_new_bytes=new,
        dl_sched_retx_bytes=retx,
        dl_queue_new_bytes=queue,
        mean_mcs=mcs,
        dl_grant_prbs=grant_prbs,
        cell_dl_prbs=cell_prbs,
    )


def test_no_capacity_before_the_first_grant():
    assert CapacityEstimate().update(message(10, 0, 0)) == 0


def test_a_fully_granted_period_is_its_own_capacity():
    estimate = CapacityEstimate()
    assert estimate.update(message(10, 10, 18_000)) == 18_000


def test_periods_without_grants_keep_the_recent_peak_so_idle_ttis_count_as_unused():
    estimate = CapacityEstimate()
    estimate.update(message(10, 10, 18_000))
    assert estimate.update(message(20, 0, 0)) == 18_000
    assert estimate.update(message(30, 5, 4_000)) == 18_000  # a small allocation: the peak stays


def test_retransmissions_count_in_the_rate_but_are_not_delivered():
    estimate = CapacityEstimate()
    fields = cell_fields(
        message(10, 10, 12_000, retx=6_000, queue=500), estimate.update(message(10, 10, 12_000, 6_000)), 10
    )
    assert fields["capacity_bytes"] == 18_000 and fields["delivered_bytes"] == 12_000
    assert fields["queue_new_bytes"] == 500
    assert "grant_prbs" not in fields and "capacity_prbs" not in fields  # a 1.1 eNB, or the virtual cell


def test_the_cells_resource_blocks_are_its_prbs_times_the_ttis_the_enb_ran():
    estimate = CapacityEstimate()
    estimate.update(message(10, 10, 18_000, tti=10, grant_prbs=250, cell_prbs=25))
    # the next message, 10 ms later by the clock, counts 9 TTIs: the eNB ran 9 of the 10
    late = message(20, 9, 15_000, tti=19, grant_prbs=200, cell_prbs=25)
    fields = cell_fields(late, estimate.update(late), estimate.period_ttis)
    assert estimate.period_ttis == 9
    assert (fields["grant_prbs"], fields["capacity_prbs"], fields["ttis"]) == (200, 225, 9)


def test_the_peak_follows_a_lower_rate_after_the_window():
    estimate = CapacityEstimate(window_ns=1000 * MS)
    estimate.update(message(10, 10, 18_000))
    estimate.update(message(500, 10, 9_000))
    assert estimate.update(message(1000, 10, 9_000)) == 18_000
    assert estimate.update(message(1020, 10, 9_000)) == 9_000


def test_the_last_peak_holds_through_a_silence_longer_than_the_window():
    estimate = CapacityEstimate(window_ns=1000 * MS)
    estimate.update(message(10, 10, 18_000))
    assert estimate.update(message(5000, 0, 0)) == 18_000


def test_a_stack_slower_than_real_time_has_the_capacity_of_the_ttis_it_ran():
    # 10 ms periods in which the eNB ran 10, then 9, then 8 TTIs (the ZeroMQ radio at 0.9 and 0.8 of real time)
    estimate = CapacityEstimate()
    assert estimate.update(message(10, 10, 18_000, tti=1010)) == 18_000  # the first: the period's 10 TTIs
    assert estimate.update(message(20, 9, 16_200, tti=1019)) == 9 * 1800
    assert estimate.update(message(30, 2, 3_600, tti=1027)) == 8 * 1800
    # a message lost between two: the TTIs since the last one span two periods, so the period's own length counts
    assert estimate.update(message(50, 10, 18_000, tti=1046)) == 18_000


def test_where_data_waited_through_the_period_the_capacity_is_what_was_scheduled():
    # a peak of 1800 B per TTI, then the channel worsens (MCS 20): queued at both ends, a grant in every TTI,
    # 12000 B scheduled (1000 of them resent): the scheduler gave all it could, not the last second's peak
    estimate = CapacityEstimate()
    assert estimate.update(message(10, 10, 18_000, queue=5000, mcs=27)) == 18_000  # no period before it
    assert estimate.update(message(20, 10, 11_000, retx=1000, queue=5000, mcs=20)) == 12_000
    # a TTI without a grant: the data did not wait through all of it; at MCS 20 a full TTI carries 1200 B
    assert estimate.update(message(30, 9, 9000, queue=5000, mcs=20.4)) == 12_000
    # without an MCS reported, the same
    estimate = CapacityEstimate()
    estimate.update(message(10, 10, 18_000, queue=5000))
    assert estimate.update(message(20, 10, 11_000, retx=1000, queue=5000)) == 12_000


def test_where_the_queue_ran_empty_the_capacity_is_a_full_allocation_at_the_periods_mcs():
    estimate = CapacityEstimate()
    estimate.update(message(10, 10, 18_000, queue=5000, mcs=27))
    estimate.update(message(20, 10, 18_000, queue=5000, mcs=27))  # backlogged at MCS 27: 1800 B per TTI
    estimate.update(message(30, 10, 12_000, queue=5000, mcs=20))  # backlogged at MCS 20: 1200 B per TTI
    # the queue ran empty: 2 small grants at MCS 20 (mean 19.6), 10 TTIs: 1200 x 10, not the peak 1800 x 10
    assert estimate.update(message(40, 2, 800, queue=0, mcs=19.6)) == 12_000
    # at MCS 27, the last full allocation there: 1800 x 10
    assert estimate.update(message(50, 2, 800, queue=0, mcs=27)) == 18_000
    # an MCS never seen while data waited: the last second's peak, 1800 x 10
    assert estimate.update(message(60, 2, 800, queue=0, mcs=12)) == 18_000
