import math

import pytest
from rnf_bridge import traces
from rnf_bridge.schedule import Schedule


def test_a_csv_trace_gives_the_gain_from_each_time_on(tmp_path):
    path = tmp_path / "gain.csv"
    path.write_text("time_s,gain_db\n0,0\n2.5,-10\n\n4,-inf\n6,0\n")
    assert traces.read_csv(path, loop=True) == Schedule((0.0, 2.5, 4.0, 6.0), (0.0, -10.0, -math.inf, 0.0), True)
    assert traces.read_csv(path, loop=False).loop is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", ":1: header must be `time_s,gain_db`"),
        ("time,gain\n0,0\n", ":1: header must be `time_s,gain_db`"),
        ("time_s,gain_db\n", ": no data rows"),
        ("time_s,gain_db\n0,0\n1,loud\n", ":3: not a number: '1,loud'"),
        ("time_s,gain_db\n0,0,1\n", ":2: expected 2 columns, got 3"),
        ("time_s,gain_db\n0,0\n3,0\n2,0\n", ":4: time 2.0 s does not follow 3.0 s"),
        ("time_s,gain_db\n1,0\n2,0\n", ":2: the first time must be 0, got 1.0"),
        ("time_s,gain_db\n0,0\n", ": a looping schedule needs two rows"),
    ],
)
def test_csv_errors_name_the_file_and_the_line(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(traces.TraceError) as raised:
        traces.read_csv(path, loop=True)
    assert str(raised.value).startswith(str(path)) and message in str(raised.value)


def test_a_missing_trace_file_is_named(tmp_path):
    with pytest.raises(traces.TraceError, match=r"missing\.csv: no such trace file"):
        traces.read_csv(tmp_path / "missing.csv", loop=True)


def test_piecewise_draws_one_level_per_period_within_the_range_and_loops():
    schedule = traces.piecewise(-20.0, -5.0, period_s=2.0, duration_s=9.0, seed=3)
    assert schedule.times_s == (0.0, 2.0, 4.0, 6.0, 8.0, 9.0) and schedule.loop
    assert all(-20.0 <= gain <= -5.0 for gain in schedule.gains_db)
    assert len(set(schedule.gains_db[:-1])) == 5
    assert schedule == traces.piecewise(-20.0, -5.0, period_s=2.0, duration_s=9.0, seed=3)
    assert schedule != traces.piecewise(-20.0, -5.0, period_s=2.0, duration_s=9.0, seed=4)


def test_piecewise_with_a_period_that_divides_the_duration_has_no_empty_last_period():
    times = traces.piecewise(0.0, 1.0, period_s=0.1, duration_s=1.0, seed=1).times_s
    assert len(times) == 11 and times[-2] == pytest.approx(0.9) and times[-1] == 1.0


def test_onoff_is_on_then_an_outage_and_loops():
    assert traces.onoff(0.0, -math.inf, on_s=9.0, off_s=1.0) == Schedule(
        (0.0, 9.0, 10.0), (0.0, -math.inf, 0.0), loop=True
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: traces.piecewise(0.0, -1.0, 1.0, 10.0, 1), "min_db <= max_db"),
        (lambda: traces.piecewise(0.0, 1.0, 0.0, 10.0, 1), "0 < period_s <= duration_s"),
        (lambda: traces.piecewise(0.0, 1.0, 20.0, 10.0, 1), "0 < period_s <= duration_s"),
        (lambda: traces.onoff(0.0, -10.0, 0.0, 1.0), "on_s > 0"),
    ],
)
def test_generators_refuse_impossible_parameters(call, message):
    with pytest.raises(traces.TraceError, match=message):
        call()
