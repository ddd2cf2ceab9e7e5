"""Capacity traces: file formats, generators, outages, and exact byte totals."""

import numpy as np
import pytest
from rnf_cell import traces
from rnf_cell.config import CellConfig, Outage, TraceFile


def test_constant_rate_carries_exact_bytes_with_fractions():
    trace = traces.constant(rate_mbps=1.0012, duration_s=1.0)
    assert trace.sum() == 125_150  # 1.0012e6 bit/s * 1 s / 8
    assert set(trace.tolist()) <= {125, 126}


def test_mahimahi_opportunities_become_1500_bytes_in_their_millisecond(tmp_path):
    path = tmp_path / "trace.down"
    path.write_text("1\n1\n3\n4\n")
    trace = traces.read_mahimahi(path)
    assert trace.tolist() == [3000, 0, 1500, 1500]


def test_mahimahi_errors_name_file_and_line(tmp_path):
    path = tmp_path / "bad.down"
    path.write_text("1\n5\nx\n")
    with pytest.raises(traces.TraceError, match=r"bad.down:3: expected a whole number"):
        traces.read_mahimahi(path)
    path.write_text("5\n2\n")
    with pytest.raises(traces.TraceError, match=r"bad.down:2: timestamp 2 ms goes back"):
        traces.read_mahimahi(path)


def test_missing_trace_is_a_clear_error(tmp_path):
    with pytest.raises(traces.TraceError, match="no such trace file"):
        traces.read_csv(tmp_path / "absent.csv")


def test_csv_rate_steps(tmp_path):
    path = tmp_path / "rates.csv"
    path.write_text("time_s,rate_mbps\n0,8\n0.002,-1\n0.003,0\n")
    assert traces.read_csv(path).tolist() == [1000, 1000, int(traces.OUTAGE)]


def test_csv_bytes_per_tti_and_its_errors(tmp_path):
    path = tmp_path / "tti.csv"
    path.write_text("tti,bytes\n0,100\n1,-1\n2,50\n")
    assert traces.read_csv(path).tolist() == [100, int(traces.OUTAGE), 50]
    path.write_text("tti,bytes\n0,100\n2,50\n")
    with pytest.raises(traces.TraceError, match="without gaps"):
        traces.read_csv(path)
    path.write_text("when,what\n")
    with pytest.raises(traces.TraceError, match=r"tti.csv:1: header"):
        traces.read_csv(path)


def test_uplink_csv_becomes_microsecond_records_with_no_limit_where_bytes_is_empty(tmp_path):
    path = tmp_path / "uplink.csv"
    path.write_text("time_s,bytes\n0.0105,260\n0.0192,\n0.03,\n")
    trace = traces.read_uplink_csv(path)
    assert trace["time_us"].tolist() == [10_500, 19_200, 30_000]
    assert trace["limit"].tolist() == [260, traces.NO_LIMIT, traces.NO_LIMIT]
    # the datapath's file: 8-byte time and 4-byte limit per record, little-endian (INTERFACE.md)
    traces.write_uplink(trace, tmp_path / "uplink.bin")
    assert (tmp_path / "uplink.bin").read_bytes()[:12] == (10_500).to_bytes(8, "little") + (260).to_bytes(4, "little")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("when,what\n0,1\n1,\n", r"up.csv:1: header must be `time_s,bytes`"),
        ("time_s,bytes\n0.1,\n", r"up.csv: needs a transmission and the row that ends the trace"),
        ("time_s,bytes\n0.1,0\n0.2,\n", r"up.csv:2: bytes must be a whole number from 1"),
        ("time_s,bytes\n0.1,2.5\n0.2,\n", r"up.csv:2: bytes must be a whole number from 1"),
        ("time_s,bytes\nsoon,5\n0.2,\n", r"up.csv:2: time_s is not a number"),
        ("time_s,bytes\n-1,5\n0.2,\n", r"up.csv:2: time_s must be between 0 and"),
        ("time_s,bytes\n0.2,5\n0.2000001,\n", r"up.csv: time_s must increase strictly \(microsecond steps\): row 2"),
    ],
)
def test_bad_uplink_csv_names_the_file_and_line(tmp_path, text, message):
    path = tmp_path / "up.csv"
    path.write_text(text)
    with pytest.raises(traces.TraceError, match=message):
        traces.read_uplink_csv(path)


def test_piecewise_levels_hold_for_a_period_and_stay_in_range():
    trace = traces.piecewise(2, 10, period_s=0.2, duration_s=2, rng=np.random.default_rng(3))
    rates = traces.capacity_bps(trace).reshape(10, 200).sum(axis=1) / 200 / 1e6
    assert np.all((rates >= 2) & (rates <= 10))
    assert len(set(np.round(rates, 3))) == 10


def test_onoff_marks_outage_ttis():
    trace = traces.onoff(rate_mbps=8, on_s=0.003, off_s=0.002)
    assert trace.tolist() == [1000, 1000, 1000, int(traces.OUTAGE), int(traces.OUTAGE)]


def test_markov_alternates_between_two_rates():
    trace = traces.markov(8, 0.8, 0.05, 0.05, duration_s=2, rng=np.random.default_rng(1))
    assert set(trace.tolist()) == {1000, 100}


def test_outages_overlay_unrolls_a_short_trace():
    trace = traces.constant(8, duration_s=0.002)
    result = traces.with_outages(trace, [Outage(start_s=0.003, duration_s=0.002)])
    assert result.tolist() == [1000, 1000, 1000, int(traces.OUTAGE), int(traces.OUTAGE), 1000]


def test_telemetry_replay_spreads_scheduled_bytes_over_the_period(tmp_path):
    path = tmp_path / "series.lp"
    path.write_text(
        "telemetry,rnti=70,ue=1 sched_new_bytes=9000i,sched_retx_bytes=1000i,period_us=10000i,outage=false 1\n"
        "cell,ue=1 capacity_bytes=5i 1\n"
        "telemetry,rnti=70,ue=1 sched_new_bytes=0i,sched_retx_bytes=0i,period_us=2000i,outage=true 2\n"
        "telemetry,rnti=71,ue=2 sched_new_bytes=5i,sched_retx_bytes=0i,period_us=2000i,outage=false 2\n"
    )
    trace = traces.read_telemetry(path)
    assert trace[:10].tolist() == [1000] * 10
    assert trace[10:].tolist() == [int(traces.OUTAGE)] * 2


def test_scale_multiplies_a_file_trace(tmp_path):
    path = tmp_path / "t.down"
    path.write_text("1\n2\n")
    trace = traces.build(TraceFile(file=path, format="mahimahi", scale=0.5), np.random.default_rng(0))
    assert trace.tolist() == [750, 750]


def test_start_s_plays_a_file_from_that_second_and_loops_over_the_rest(tmp_path):
    # opportunities at 1, 1, 2, 3 and 5 ms fall in TTIs 0, 0, 1, 2 and 4: [3000, 1500, 1500, 0, 1500]
    path = tmp_path / "t.down"
    path.write_text("1\n1\n2\n3\n5\n")
    later = traces.build(TraceFile(file=path, format="mahimahi", start_s=0.002), np.random.default_rng(0))
    assert later.tolist() == [1500, 0, 1500]
    halved = traces.build(TraceFile(file=path, format="mahimahi", start_s=0.002, scale=0.5), np.random.default_rng(0))
    assert halved.tolist() == [750, 0, 750]


def test_start_s_at_or_past_the_end_names_the_file(tmp_path):
    path = tmp_path / "t.down"
    path.write_text("1\n5\n")
    with pytest.raises(traces.TraceError, match=r"t.down: start_s = 0.005 s is at or past the file's end \(0.005 s\)"):
        traces.build(TraceFile(file=path, format="mahimahi", start_s=0.005), np.random.default_rng(0))


def test_written_file_is_little_endian_u32(tmp_path):
    traces.write(np.array([1, 0xFFFFFFFF], dtype=np.uint32), tmp_path / "x.cap")
    assert (tmp_path / "x.cap").read_bytes() == b"\x01\x00\x00\x00\xff\xff\xff\xff"


def test_attenuated_shannon_matches_tr_36942_by_hand():
    # 5 MHz: SNR 0 dB -> 0.6 * log2(2) = 0.6 bit/s/Hz -> 3 Mbit/s; 30 dB -> capped at 4.4 -> 22 Mbit/s; -11 dB -> 0
    rates = traces.attenuated_shannon_bps([0.0, 30.0, -11.0], 5e6)
    assert rates.tolist() == pytest.approx([3e6, 22e6, 0.0])


def test_rayleigh_power_has_unit_mean_and_fades_at_the_doppler_rate():
    rng = np.random.default_rng(3)
    slow = traces.rayleigh_power(60_000, 5.6, rng)  # 3 km/h at 2 GHz
    fast = traces.rayleigh_power(60_000, 55.6, rng)  # 30 km/h
    assert slow.mean() == pytest.approx(1.0, rel=0.25) and fast.mean() == pytest.approx(1.0, rel=0.1)
    # fades (10 dB below the mean) come and go more often at the higher Doppler
    crossings = [np.count_nonzero(np.diff((p < 0.1).astype(int)) == 1) for p in (slow, fast)]
    assert crossings[1] > 4 * crossings[0] > 0


def test_a_rayleigh_trace_is_configured_like_the_other_generators():
    spec = (
        CellConfig.model_validate(
            {"ues": [{"trace": {"generator": "rayleigh", "mean_snr_db": 15, "speed_kmh": 30, "duration_s": 10}}]}
        )
        .ues[0]
        .trace
    )
    trace = traces.build(spec, np.random.default_rng(1))
    assert trace.size == 10_000
    mean_mbps = traces.capacity_bps(trace).mean() / 1e6
    assert 5 < mean_mbps < 22  # below the 22 Mbit/s cap, above the rate at 0 dB
