"""Stride scheduling by tickets with strict priority (paper 004 Sec. IV-B)."""

import pytest
from rnf_proxy.scheduler import StrideScheduler


def test_backlogged_connections_share_in_proportion_to_their_tickets():
    scheduler = StrideScheduler(quantum=1_000)
    scheduler.add("web", tickets=100)
    scheduler.add("ftp", tickets=200)
    totals = {"web": 0, "ftp": 0}
    for _ in range(100):
        for key, granted in scheduler.allocate(3_000, {"web": 10**9, "ftp": 10**9}).items():
            totals[key] += granted
    assert totals["ftp"] / totals["web"] == pytest.approx(2.0, rel=0.02)


def test_strict_priority_serves_the_interactive_flow_first():
    scheduler = StrideScheduler(quantum=1_000)
    scheduler.add("bulk", priority=1)
    scheduler.add("telnet", priority=0)
    assert scheduler.allocate(5_000, {"bulk": 10**6, "telnet": 1_500}) == {"telnet": 1_500, "bulk": 3_500}


def test_budget_left_by_a_short_connection_goes_to_the_others():
    scheduler = StrideScheduler(quantum=1_000)
    for key in ("a", "b"):
        scheduler.add(key)
    assert scheduler.allocate(10_000, {"a": 2_000, "b": 10**6}) == {"a": 2_000, "b": 8_000}


def test_a_connection_returning_from_idle_does_not_claim_the_past():
    scheduler = StrideScheduler(quantum=1_000)
    scheduler.add("steady")
    scheduler.add("sleeper")
    for _ in range(50):
        scheduler.allocate(4_000, {"steady": 10**9, "sleeper": 0})
    grants = scheduler.allocate(4_000, {"steady": 10**9, "sleeper": 10**9})
    assert grants == {"steady": 2_000, "sleeper": 2_000}


def test_removed_connections_get_nothing():
    scheduler = StrideScheduler()
    scheduler.add("gone")
    scheduler.remove("gone")
    assert scheduler.allocate(1_000, {"gone": 1_000}) == {} and len(scheduler) == 0
