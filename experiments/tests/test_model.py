"""The throughput models on small profiles whose answers are worked out by hand in the comments."""

import math
import re

import numpy as np
import pytest
from click.testing import CliRunner
from rnf_cli.main import cli
from rnf_experiments import model


def profile(rates: list[float], sample_s: float) -> model.Profile:
    return model.Profile(np.asarray(rates, dtype=np.float64), sample_s)


def test_profile_averages_bytes_over_samples_and_drops_a_partial_one():
    # 2 TTIs of 1 ms per sample: 3000 B, 6000 B, 0 B -> 2, 4, 0 packets of 1500 B in 2 ms = 1000, 2000, 0 pkt/s;
    # the 7th TTI is a partial sample and is left out.
    p = model.profile_from_bytes([1500, 1500, 3000, 3000, 0, 0, 9000], 1e-3, 2e-3, 1500)
    assert p.rates_pps.tolist() == pytest.approx([1000, 2000, 0])
    assert p.duration_s == pytest.approx(0.006)
    with pytest.raises(ValueError, match="shorter than one sample"):
        model.profile_from_bytes([1500], 1e-3, 2e-3, 1500)


def test_spurious_timeout_condition_5_counts_abrupt_decreases():
    # xi between samples: 1000 -> 200: 800/200 = 4; 200 -> 200: 0; 200 -> 0: inf; 0 -> 0: 0 (no change);
    # 0 -> 1000: -1.
    rates = profile([1000, 200, 200, 0, 0, 1000], 0.1)
    assert model.relative_decrease(rates.rates_pps).tolist() == [4, 0, math.inf, 0, -1]
    # tau 10 ms, B 8: threshold 1 + 2 * 0.01 * b(t) / 10 = 3 after 1000 pkt/s (4 > 3: yes), 1.4 after 200 (inf:
    # yes) -> N_to = 2.
    assert model.spurious_timeouts(rates, model.PathParams(0.01, 8)) == 2
    # B 2: threshold 1 + 0.02 * 1000 / 4 = 6 after 1000 pkt/s, so 4 is no longer enough; the outage still is.
    assert model.spurious_timeouts(rates, model.PathParams(0.01, 2)) == 1


def test_epochs_a_and_b():
    # b 100 pkt/s, T 0.1 s, so b*T = 10. Epoch A from w0 6: 4 RTTs, t_A = 0.1 * (10 - 6) = 0.4 s, carrying
    # 4 RTTs of windows averaging 8: n_A = (6 * 0.4 + 0.4^2 / 0.2) / 0.1 = 32.
    assert model.epoch_a(100, 0.1, 6) == model.Epoch(pytest.approx(0.4), pytest.approx(32))
    # Epoch B from 10 to 20: t_B = (400 - 100) / 200 = 1.5 s at the link rate: n_B = 150.
    assert model.epoch_b(100, 0.1, 6, 20) == model.Epoch(pytest.approx(1.5), pytest.approx(150))
    # w0 12 above b*T: no epoch A, and epoch B from 12: (400 - 144) / 200 = 1.28 s.
    assert model.epoch_a(100, 0.1, 12) == model.NO_EPOCH
    assert model.epoch_b(100, 0.1, 12, 20) == model.Epoch(pytest.approx(1.28), pytest.approx(128))


def test_ren2011_on_a_constant_profile_is_the_reno_sawtooth():
    # b 100 pkt/s for 2 s, tau 0.09 s, B 9: T = 0.1, w_max = 100 * 0.09 + 9 + 1 = 19, w0 = 9.5.
    # t_A = 0.1 * (10 - 9.5) = 0.05, n_A = (9.5 * 0.05 + 0.0025 / 0.2) / 0.1 = 4.875;
    # t_B = (361 - 100) / 200 = 1.305, n_B = 130.5. No decrease: N_to = 0, p1 = 0.
    # Th = (4.875 + 130.5) / (0.05 + 1.305) = 99.908 pkt/s; N_d = 2 s / 1.355 s = 1.476 cycles.
    ren = model.ren2011(profile([100] * 20, 0.1), model.PathParams(0.09, 9))
    assert (ren.b, ren.rtt_min, ren.w_max, ren.w0) == pytest.approx((100, 0.1, 19, 9.5))
    assert (ren.a.t, ren.a.n, ren.b_epoch.t, ren.b_epoch.n) == pytest.approx((0.05, 4.875, 1.305, 130.5))
    # Slow start, eqs. (10)-(11): ceil(log2(10.5)) = 4 RTTs, w0 packets.
    assert (ren.c.t, ren.c.n) == pytest.approx((0.4, 9.5))
    assert (ren.n_to, ren.p1) == (0, 0.0)
    assert ren.n_d == pytest.approx(1.476, abs=1e-3)
    assert ren.throughput_pps == pytest.approx(99.908, abs=1e-3)


def test_ren2011_weighs_slow_starts_by_p1():
    # Samples of 0.5 s at 150, 150, 50, 50 pkt/s; tau 0.09, B 40. b~ = 100, T~ = 0.1, b*T = 10.
    # w_max = sqrt(((13.5 + 41)^2 + (4.5 + 41)^2) / 2) = sqrt(2520.25) = 50.2021, w0 = 25.1010 > 10: no epoch A.
    # t_B = (2520.25 - 630.0625) / 200 = 9.450938 s, n_B = 945.094; t_C = ceil(log2 26.101) * 0.1 = 0.5 s.
    # 150 -> 50: xi = 2 > 1 + 2 * 0.09 * 150 / 42 = 1.643: N_to = 1.
    rates, path = profile([150, 150, 50, 50], 0.5), model.PathParams(0.09, 40)
    # From the profile: one slow-start cycle (9.95 s) already outlasts the 2 s profile, so N_d = 1, p1 = 1:
    # Th = (25.1010 + 945.0938) / (0.5 + 9.450938) = 97.498 pkt/s.
    ren = model.ren2011(rates, path)
    assert (ren.n_to, ren.n_d, ren.p1) == (1, 1, 1.0)
    assert ren.throughput_pps == pytest.approx(97.498, abs=1e-3)
    # With N_d = 4 traced loss events: p1 = 0.25, Th = (6.2753 + 945.0938) / (0.125 + 9.450938) = 99.350.
    traced = model.ren2011(rates, path, n_d=4)
    assert (traced.p1, traced.p2) == (0.25, 0.75)
    assert traced.throughput_pps == pytest.approx(99.350, abs=1e-3)


def test_decrease_losses_and_their_kinds():
    # tau 10 ms, B 8: a decrease by d pkt/s loses ceil(d * 0.01 - 4) packets when positive:
    # 1000 -> 500: ceil(1) = 1; 500 -> 900: none; 900 -> 350: ceil(1.5) = 2; 350 -> 1000: none;
    # 1000 -> 100: ceil(5) = 5; 100 -> 0: 1 - 4 < 0, none.
    rates = profile([1000, 500, 900, 350, 1000, 100, 0], 0.1)
    losses = model.decrease_losses(rates, model.PathParams(0.01, 8))
    assert losses.tolist() == [1, 0, 2, 0, 5, 0]
    assert model.loss_kinds(losses) == (1, 1, 1)


def test_chan_ramjee2002_epochs_and_weights():
    # mu 100 pkt/s for 2 s, tau 0.09, B 9, T0 1 s: T = 0.1, mu*T = 10, W_f = 19, t_R = 0.1 + 9/100 = 0.19.
    # W01 = int(9.5) = 9, W02 = 4, W03 = 2.
    # A1: t 0.1 * (10 - 9) = 0.1, n (0.9 + 0.05) / 0.1 = 9.5; B1: t 1.305, n 130.5 -> one loss: 1.405 s, 140.
    # A2: t 0.6, n (2.4 + 1.8) / 0.1 = 42 -> two losses: 0.19 + 0.6 + 1.305 = 2.095 s, 172.5.
    # A3: t 0.8, n (1.6 + 3.2) / 0.1 = 48; t_ss = 0.1 * log2(2) = 0.1, n_ss = 2
    #   -> three losses: 0.19 + 1 + 0.1 + 0.8 + 1.305 = 3.395 s, 2 + 48 + 130.5 = 180.5.
    rates, path = profile([100] * 20, 0.1), model.PathParams(0.09, 9, rto_s=1.0)
    chan = model.chan_ramjee2002(rates, path)
    assert (chan.mu, chan.rtt_min, chan.w_f, chan.t0, chan.t_r) == pytest.approx((100, 0.1, 19, 1.0, 0.19))
    assert (chan.single.t, chan.single.n) == pytest.approx((1.405, 140))
    assert (chan.double.t, chan.double.n) == pytest.approx((2.095, 172.5))
    assert (chan.triple.t, chan.triple.n) == pytest.approx((3.395, 180.5))
    # A constant profile forces no multiple loss: 2 s / 1.405 s single losses, p = (1, 0, 0), 140 / 1.405.
    assert chan.events == pytest.approx((2 / 1.405, 0, 0))
    assert chan.throughput_pps == pytest.approx(99.644, abs=1e-3)
    # Traced events 2/1/1: p = 0.5/0.25/0.25, eq. (19) = (70 + 43.125 + 45.125) / (0.7025 + 0.52375 + 0.84875).
    traced = model.chan_ramjee2002(rates, path, kinds=(2, 1, 1))
    assert traced.p == (0.5, 0.25, 0.25)
    assert traced.throughput_pps == pytest.approx(158.25 / 2.075)


def test_rto_defaults_to_twice_the_mean_rtt():
    # Eq. (1) at b 100 pkt/s with q = B/2 = 4.5: 0.09 + 5.5 / 100 = 0.145 s; RTO = 0.29 s.
    assert model.rtt_mean(100, model.PathParams(0.09, 9)) == pytest.approx(0.145)
    assert model.rto(100, model.PathParams(0.09, 9)) == pytest.approx(0.29)
    assert model.rto(100, model.PathParams(0.09, 9, rto_s=1.5)) == 1.5


def test_padhye_approximate_model():
    # p 0.01, rtt 0.1, T0 1, b 2: 0.1 * sqrt(0.04 / 3) = 0.0115470;
    # 1 * min(1, 3 * sqrt(0.06 / 8)) * 0.01 * (1 + 32e-4) = 0.259808 * 0.01 * 1.0032 = 0.0026064; 1 / 0.0141534.
    assert model.padhye(0.01, 0.1, 1.0) == pytest.approx(70.654, abs=1e-3)
    assert model.padhye(0.0, 0.1, 1.0) == math.inf


def test_loss_events_group_drops_closer_than_the_gap():
    # Drops at 0.00 (1), 0.02 (2) -> one event of 3; 0.50 (1), 0.51 (1) -> 2; 2.00 (3) -> 3.
    events = model.loss_events([0.0, 0.01, 0.02, 0.5, 0.51, 2.0], [1, 0, 2, 1, 1, 3], gap_s=0.1)
    assert events.tolist() == [3, 2, 3]
    assert model.loss_kinds(events) == (0, 1, 2)
    assert model.loss_events([0.0, 0.01], [0, 0], gap_s=0.1).tolist() == []


def test_goodput_counts_the_mss():
    assert model.goodput_mbps(1000) == pytest.approx(1000 * 1448 * 8 / 1e6)


def test_cli_predicts_from_a_csv_trace(tmp_path):
    # 1.2 Mbit/s for 2 s = 100 packets/s of 1500 B; tau 90 ms, B 13500 B = 9 packets, T0 1 s: the fixtures above.
    # Eq. (15) 99.908 pkt/s = 1.157 Mbit/s of 1448-B segments; eq. (19) 99.644; Padhye with p = 1 / 135.375 and
    # rtt 0.145 s: 0.145 * sqrt(4p/3) + 1 * 3 sqrt(6p/8) * p * (1 + 32p^2) = 0.014390 + 0.001652 -> 62.33 pkt/s.
    trace = tmp_path / "steady.csv"
    trace.write_text("time_s,rate_mbps\n0,1.2\n2,0\n")
    options = ["--rtt-ms", "90", "--buffer-bytes", "13500", "--rto-ms", "1000"]
    result = CliRunner().invoke(cli, ["model", str(trace), *options])
    assert result.exit_code == 0, result.output
    assert "mean capacity 1.20 Mbit/s (100.0 packets/s of 1500 B)" in " ".join(result.output.split())
    # packets/s and goodput, in that order, per model (the text columns may wrap on a narrow terminal).
    for packets, goodput in (("99.9", "1.16"), ("99.6", "1.15"), ("62.3", "0.72")):
        assert re.search(rf"│\s+{re.escape(packets)} │\s+{re.escape(goodput)} │", result.output), (
            packets,
            result.output,
        )


def test_cli_names_a_bad_trace_file(tmp_path):
    trace = tmp_path / "broken.csv"
    trace.write_text("seconds,mbps\n0,1\n")
    result = CliRunner().invoke(cli, ["model", str(trace)])
    assert result.exit_code == 2
    assert f"{trace}:1: header must be" in result.output
    missing = CliRunner().invoke(cli, ["model", str(tmp_path / "nothing.csv")])
    assert missing.exit_code == 2
    assert f"{tmp_path / 'nothing.csv'}: no such trace file" in missing.output
