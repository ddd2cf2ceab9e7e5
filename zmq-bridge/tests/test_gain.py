import numpy as np
import pytest
from gnuradio import blocks, gr
from rnf_bridge.gain import Direction, GainPath, ScheduledGain
from rnf_bridge.schedule import Schedule, db_to_amplitude

RATE = 1000.0


def run_through(path: GainPath, direction: Direction, samples: np.ndarray) -> tuple[np.ndarray, ScheduledGain]:
    flowgraph = gr.top_block()
    source = blocks.vector_source_c(samples.tolist(), False)
    block = ScheduledGain(path, direction, RATE, "gain")
    sink = blocks.vector_sink_c()
    flowgraph.connect(source, block, sink)
    flowgraph.run()
    return np.array(sink.data(), dtype=np.complex64), block


def test_each_sample_gets_the_gain_its_index_has_in_the_schedule():
    schedule = Schedule((0.0, 1.5, 4.0, 6.0), (0.0, -20.0, -6.0, 0.0), loop=True)
    samples = (3 * np.exp(0.1j * np.arange(20_000))).astype(np.complex64)
    out, block = run_through(GainPath(schedule, RATE), Direction.DOWNLINK, samples)
    index = np.arange(20_000) % 6000
    expected_db = np.select([index < 1500, index < 4000], [0.0, -20.0], -6.0)
    np.testing.assert_allclose(out, samples * (10.0 ** (expected_db / 20.0)), rtol=1e-6)
    assert block.samples == 20_000 and block.last_arrival is not None
    assert block.power == pytest.approx(9.0, rel=1e-3)  # input power, before the gain


def test_a_change_lands_at_a_sample_neither_direction_has_reached():
    path = GainPath(Schedule.constant(0.0), RATE)
    path.reserve(Direction.DOWNLINK, 0, 3000)
    path.reserve(Direction.UPLINK, 0, 1200)
    assert path.change(Schedule.constant(-20.0)) == 3000
    uplink, _ = run_through(path, Direction.UPLINK, np.ones(5000, dtype=np.complex64))
    np.testing.assert_allclose(uplink[:3000], 1.0)
    np.testing.assert_allclose(uplink[3000:], db_to_amplitude(-20.0), rtol=1e-6)
    assert path.gain_db_now() == -20.0


def test_a_change_with_rows_closer_than_a_sample_leaves_the_gain_alone():
    path = GainPath(Schedule.constant(-3.0), RATE)
    with pytest.raises(ValueError, match="less than one sample"):
        path.change(Schedule((0.0, 0.0001), (0.0, 0.0)))
    assert path.gain_db_now() == -3.0
