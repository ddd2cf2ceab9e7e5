"""Sequence rules of SPEC.md, and the rate limit on error lines."""

from dataclasses import replace

from rnf_telemetry.stream import RateLimitedLog, StreamTracker, Verdict, classify
from rnf_telemetry.vectors import VALID

BASE = VALID["basic"]


def test_classification_table():
    assert classify(None, 7).verdict is Verdict.FIRST
    assert classify(7, 8) == classify(7, 8) and classify(7, 8).lost == 0
    assert classify(7, 10).lost == 2
    assert classify(7, 7).verdict is Verdict.DUPLICATE
    assert classify(7, 5).verdict is Verdict.OUT_OF_ORDER
    assert classify(7, 0).verdict is Verdict.RESTART
    assert classify(2**32 - 1, 1).verdict is Verdict.IN_ORDER and classify(2**32 - 1, 1).lost == 1


def test_tracker_drops_duplicates_and_late_messages_and_counts_them():
    tracker = StreamTracker()
    accepted = [tracker.offer(replace(BASE, seq=s)).verdict.accepted for s in (1, 2, 2, 5, 3, 6)]
    assert accepted == [True, True, False, True, False, True]
    assert tracker.errors == {"duplicate": 1, "out_of_order": 1}
    assert tracker.lost == 2


def test_streams_are_independent():
    tracker = StreamTracker()
    assert tracker.offer(replace(BASE, seq=10)).verdict.accepted
    assert tracker.offer(replace(BASE, rnti=71, seq=3)).verdict is Verdict.FIRST


def test_publisher_restart_is_accepted():
    tracker = StreamTracker()
    tracker.offer(replace(BASE, seq=500))
    assert tracker.offer(replace(BASE, seq=0)).verdict is Verdict.RESTART
    assert tracker.offer(replace(BASE, seq=1)).verdict is Verdict.IN_ORDER
    assert tracker.restarts == 1


def test_error_lines_are_rate_limited_per_kind_and_say_how_many_were_suppressed():
    log = RateLimitedLog(interval_s=5.0)
    assert log.line("truncated", "a", now=0.0) is not None
    assert log.line("truncated", "b", now=1.0) is None
    assert log.line("truncated", "c", now=2.0) is None
    assert log.line("version", "d", now=2.0) is not None
    again = log.line("truncated", "e", now=5.5)
    assert again is not None and "2 more" in again
