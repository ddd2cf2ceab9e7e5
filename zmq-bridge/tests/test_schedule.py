import math

import pytest
from rnf_bridge.schedule import Schedule, ScheduleError, Timeline, db_to_amplitude

RATE = 1000.0  # samples per second: one sample per millisecond keeps the arithmetic readable


def runs(timeline: Timeline, start: int, count: int) -> list[tuple[int, int, float]]:
    return [(offset, length, round(amplitude, 6)) for offset, length, amplitude in timeline.segments(start, count)]


def test_a_constant_gain_covers_any_block_in_one_run():
    timeline = Timeline.starting_with(Schedule.constant(-20.0), RATE)
    assert runs(timeline, 123_456, 5000) == [(0, 5000, 0.1)]


def test_breakpoints_split_a_block_at_their_exact_samples():
    timeline = Timeline.starting_with(Schedule((0.0, 0.25, 0.5), (0.0, -20.0, -40.0)), RATE)
    assert runs(timeline, 200, 400) == [(0, 50, 1.0), (50, 250, 0.1), (300, 100, 0.01)]


def test_without_loop_the_last_gain_holds_for_ever():
    timeline = Timeline.starting_with(Schedule((0.0, 1.0), (0.0, -20.0)), RATE)
    assert runs(timeline, 10_000_000, 10) == [(0, 10, 0.1)]


def test_a_looping_schedule_restarts_at_its_last_row_whose_gain_is_unused():
    timeline = Timeline.starting_with(Schedule((0.0, 0.1, 0.3), (0.0, -20.0, 99.0), loop=True), RATE)
    assert runs(timeline, 250, 200) == [(0, 50, 0.1), (50, 100, 1.0), (150, 50, 0.1)]
    assert timeline.gain_db_at(300 * 7 + 5) == 0.0


def test_minus_inf_is_silence():
    assert db_to_amplitude(-math.inf) == 0.0
    timeline = Timeline.starting_with(Schedule((0.0, 0.01), (0.0, -math.inf)), RATE)
    assert runs(timeline, 0, 20) == [(0, 10, 1.0), (10, 10, 0.0)]


def test_a_change_starts_its_schedule_at_the_anchor_and_keeps_the_old_gain_before_it():
    timeline = Timeline.starting_with(Schedule.constant(0.0), RATE)
    changed = timeline.then(Schedule((0.0, 0.1), (-20.0, -40.0)), at=1000, oldest=900)
    assert runs(changed, 950, 200) == [(0, 50, 1.0), (50, 100, 0.1), (150, 50, 0.01)]
    assert changed.gain_db_at(999) == 0.0 and changed.gain_db_at(1000) == -20.0


def test_changes_drop_the_schedules_no_reader_will_ask_for_again():
    timeline = Timeline.starting_with(Schedule.constant(0.0), RATE)
    for at in range(100, 10_000, 100):
        timeline = timeline.then(Schedule.constant(-at / 1000), at=at, oldest=at - 50)
    assert len(timeline.entries) == 2
    assert runs(timeline, 9_850, 100) == [
        (0, 50, round(db_to_amplitude(-9.8), 6)),
        (50, 50, round(db_to_amplitude(-9.9), 6)),
    ]


def test_an_anchor_before_what_a_reader_still_needs_is_refused():
    timeline = Timeline.starting_with(Schedule.constant(0.0), RATE)
    with pytest.raises(ValueError, match="oldest"):
        timeline.then(Schedule.constant(-1.0), at=10, oldest=20)


def test_rows_closer_than_one_sample_are_refused_with_the_row():
    with pytest.raises(ScheduleError, match=r"row 1: 0\.0001 s is less than one sample"):
        Timeline.starting_with(Schedule((0.0, 0.0001), (0.0, -3.0)), RATE)


@pytest.mark.parametrize(
    ("times", "gains", "loop", "message"),
    [
        ((), (), False, "one gain per time"),
        ((0.0, 1.0), (0.0,), False, "one gain per time"),
        ((1.0,), (0.0,), False, "first time must be 0"),
        ((0.0, 2.0, 1.0), (0.0, 0.0, 0.0), False, "row 2: time 1.0 s does not follow 2.0 s"),
        ((0.0, math.nan), (0.0, 0.0), False, "does not follow"),
        ((0.0,), (math.nan,), False, "not a gain"),
        ((0.0,), (math.inf,), False, "not a gain"),
        ((0.0,), (0.0,), True, "two rows at least"),
    ],
)
def test_schedules_that_are_not_schedules_are_refused(times, gains, loop, message):
    with pytest.raises(ScheduleError, match=message):
        Schedule(times, gains, loop)
