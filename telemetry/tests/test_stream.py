"""Sequence rules of SPEC.md, and the rate limit on error lines."""

from dataclasses import replace

from rnf_telemetry.stream import RateLimitedLog, StreamTracker, Verdict, classify
from rnf_telemetry.vectors import VALID

BASE = VALID["basic"]


def test_classification_table():
    assert classify(None, 7, 100).verdict is Verdict.FIRST
    assert classify((7, 100), 8, 110).verdict is Verdict.IN_ORDER and classify((7, 100), 8, 110).lost == 0
    assert classify((7, 100), 10, 130).lost == 2
    assert classify((7, 100), 7, 100).verdict is Verdict.DUPLICATE
    assert classify((7, 100), 5, 80).verdict is Verdict.OUT_OF_ORDER
    assert classify((7, 100), 0, 50).verdict is Verdict.RESTART
    assert classify((2**32 - 1, 100), 1, 120).verdict is Verdict.IN_ORDER


def test_restart_whose_first_messages_were_lost_is_recognised_by_its_newer_timestamp():
    assert classify((5000, 100), 3, 200).verdict is Verdict.RESTART
    assert classify((5000, 100), 4999, 90).verdict is Verdict.OUT_OF_ORDER


def test_tracker_drops_duplicates_and_late_messages_and_counts_them():
    tracker = StreamTracker()
    sent = [(1, 10), (2, 20), (2, 20), (5, 50), (3, 30), (6, 60)]
    accepted = [tracker.offer(replace(BASE, seq=s, timestamp_ns=t)).verdict.accepted for s, t in sent]
    assert accepted == [True, True, False, True, False, True]
    assert tracker.errors == {"duplicate": 1, "out_of_order": 1}
    assert tracker.lost == 2


def test_streams_are_independent():
    tracker = StreamTracker()
    assert tracker.offer(replace(BASE, seq=10)).verdict.accepted
    assert tracker.offer(replace(BASE, rnti=71, seq=3)).verdict is Verdict.FIRST


def test_publisher_restart_is_accepted():
    tracker = StreamTracker()
    tracker.offer(replace(BASE, seq=500, timestamp_ns=5000))
    assert tracker.offer(replace(BASE, seq=0, timestamp_ns=6000)).verdict is Verdict.RESTART
    assert tracker.offer(replace(BASE, seq=1, timestamp_ns=6010)).verdict is Verdict.IN_ORDER
    assert tracker.restarts == 1


def test_error_lines_are_rate_limited_per_kind_and_say_how_many_were_suppressed():
    log = RateLimitedLog(interval_s=5.0)
    assert log.line("truncated", "a", now=0.0) is not None
    assert log.line("truncated", "b", now=1.0) is None
    assert log.line("truncated", "c", now=2.0) is None
    assert log.line("version", "d", now=2.0) is not None
    again = log.line("truncated", "e", now=5.5)
    assert again is not None and "2 more" in again
