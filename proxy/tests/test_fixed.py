"""The calibration controller: a constant window, or a constant quota with a new step every tick."""

from rnf_proxy.control import AckSample, Mode, Tick
from rnf_proxy.fixed import Fixed, FixedConfig


def test_quota_starts_a_new_step_each_tick_and_nothing_else():
    fixed = Fixed(FixedConfig(mode="quota", bytes=25_000, ts_s=0.01))
    first = fixed.update(Tick(), now=0.0)
    assert (first.mode, first.limit, first.step, first.step_s) == (Mode.QUOTA, 25_000, 1, 0.01)
    assert fixed.update(AckSample(1, 0.01, 0, 0.0, 0.0), now=0.005).step == 1
    assert fixed.update(Tick(), now=0.01).step == 2


def test_window_never_changes():
    fixed = Fixed(FixedConfig(bytes=100_000))
    assert fixed.update(Tick(), 0.0) == fixed.update(Tick(), 1.0)
    assert fixed.update(Tick(), 0.0).mode is Mode.WINDOW and fixed.state().w == 100_000
