"""SMVS (paper 000 eq. 36) against hand-computed steps."""

import random
from dataclasses import dataclass

import pytest
from rnf_proxy.control import AckSample, Mode, RanSample, Tick
from rnf_proxy.feedback import step_many
from rnf_proxy.smvs import Smvs, SmvsBank, SmvsConfig, SmvsParams, resolve

TS = 0.01
# The paper's law, sgn(S) and the served rate: delta*Ts = 0.5, eps*Ts = 1000 B, band = 1000 / 0.5 = 2000 B;
# alpha = 0.5 keeps the arithmetic short.
HAND = SmvsConfig(
    ts_s=TS,
    q0_bytes=10_000,
    b_max_bytes=20_000,
    delta=50,
    eps=100_000,
    alpha=0.5,
    d=1,
    switching="sign",
    channel_rate=False,
)


def report(queue, served, outage=False, limit=0, cqi=float("nan"), idle=float("nan")):
    return RanSample(queue=queue, served=served, period_s=TS, outage=outage, queue_limit=limit, cqi=cqi, idle=idle)


@dataclass
class PlantRun:
    queues: list[float]
    quotas: list[int]
    d: int
    ds: list[int]  # the quotas counted in flight at each step
    in_band: float  # steps with |q - q0| < band, after 2 s: the loop estimator's warm-up (1 s) and a second to settle
    swing: float  # max - min of the queue over the last second
    drops: float


def run_plant(config, loop, rate=lambda k: 750_000, b_max=100_000, steps=600, min_rtt=0.041, straddle=0.0):
    """SMVS against an eNB queue whose arrivals are the quotas `loop` steps old, served at `rate(k)` bytes/s; with
    `straddle`, a random fraction of each quota up to it arrives one period later (it crossed the report's boundary)."""
    rng = random.Random(loop)
    smvs = Smvs(config)
    smvs.update(AckSample(acked=0, interval_s=TS, in_flight=0, min_rtt_s=min_rtt, srtt_s=min_rtt), now=0.0)
    released, late, queue, queues, inside, drops, ds = [0] * (loop + 1), [0.0] * (loop + 1), 0.0, [], [], 0.0, []
    for k in range(steps):
        level = queue + (1 - late[-loop]) * released[-loop] + late[-loop - 1] * released[-loop - 1]
        served = min(level, rate(k) * TS)
        dropped = max(0.0, level - served - b_max)
        queue = level - served - dropped
        drops += dropped
        sample = RanSample(
            queue=round(queue), served=round(served), period_s=TS, queue_limit=b_max, dropped=round(dropped)
        )
        released.append(smvs.update(sample, now=k * TS).limit)
        late.append(rng.uniform(0, straddle))
        ds.append(smvs.d)
        state = smvs.state()
        queues.append(queue)
        inside.append(abs(queue - state.q0) < state.band)
    tail = queues[-100:]
    return PlantRun(
        queues, released[loop + 1 :], smvs.d, ds, sum(inside[200:]) / len(inside[200:]), max(tail) - min(tail), drops
    )


def test_three_steps_match_the_hand_computation():
    smvs = Smvs(HAND)
    # k=1: b = 0, b_bar = 0, eta = 0; S = 0 - 10000 - 0 + 0 = -10000
    # w = (0 + 0 - 0.5*(-10000) - (0 + 1000)*sgn(-10000)) = 5000 + 1000 = 6000
    first = smvs.update(report(0, 0), now=0.0)
    assert first.mode is Mode.QUOTA and first.limit == 6000 and first.step_s == TS
    assert smvs.state().s == pytest.approx(-10_000)
    # k=2: b = 200000, b_bar = 100000, eta = 1000; eta_l = 0, eta_u = 1000 -> eta_1 = eta_2 = 500
    # S = 4000 - 10000 - 2*1*100000*0.01 + 6000 = -2000
    # w = 1000 + 500 - 0.5*(-2000) - (500 + 1000)*(-1) = 4000
    second = smvs.update(report(4_000, 2_000), now=TS)
    assert smvs.state().b_bar == pytest.approx(100_000)
    assert smvs.state().s == pytest.approx(-2_000)
    assert second.limit == 4000
    # k=3: b = 300000, b_bar = 200000, eta = 1000; S = 9000 - 10000 - 4000 + (6000 + 4000) = 5000
    # w = 2000 + 500 - 0.5*5000 - 1500 = -1500, clipped to 0
    third = smvs.update(report(9_000, 3_000), now=2 * TS)
    state = smvs.state()
    assert state.s == pytest.approx(5_000)
    assert third.limit == 0 and state.w == 0
    assert state.band == pytest.approx(2_000)
    assert state.in_band is True  # |9000 - 10000| < 2000
    assert [first.step, second.step, third.step] == [1, 2, 3]


def test_band_is_computed_from_the_formula_not_copied_from_the_paper():
    paper = SmvsParams(ts=0.025, q0=100, b_max=200, delta=35, eps=20, alpha=0.85, gamma=13, d=1, horizon=40)
    assert paper.band == pytest.approx(4.0)  # the paper prints 40
    section_5_2 = SmvsParams(ts=0.2, q0=100, b_max=200, delta=4, eps=20, alpha=0.85, gamma=13, d=1, horizon=5)
    assert section_5_2.band == pytest.approx(20.0)


def test_byte_reference_defaults_follow_the_paper_rules_from_the_reported_queue_limit():
    paper = SmvsConfig(q0_bytes=150_000, switching="sign")
    assert resolve(paper) is None  # eps needs B_max, unknown until telemetry reports it
    params = resolve(paper, reported_b_max=300_000)
    assert params.q0 == 150_000 and params.target_s is None
    assert params.delta * params.ts == pytest.approx(0.875)
    assert params.band == pytest.approx(75_000)  # half of min(q0, B_max - q0)
    assert params.horizon == 100  # 1 s of 10 ms steps


def test_queue_limit_from_telemetry_starts_control_with_a_byte_reference():
    smvs = Smvs(SmvsConfig(q0_bytes=150_000))
    assert smvs.update(report(0, 0), now=0.0).mode is Mode.WINDOW  # no B_max yet: the fallback
    decision = smvs.update(report(0, 0, limit=300_000), now=TS)
    assert decision.mode is Mode.QUOTA
    assert smvs.state().q0 == 150_000 and smvs.bank.params(smvs.row).b_max == 300_000


def test_the_default_reference_is_a_delay_target_of_one_loop_delay():
    params = resolve(SmvsConfig())
    assert params is not None and params.target_s == 0.0  # 0: the loop delay, measured
    assert resolve(SmvsConfig(target_ms=20)).target_s == pytest.approx(0.02)
    with pytest.raises(ValueError, match="exclude each other"):
        SmvsConfig(q0_bytes=50_000, target_ms=20)


def test_a_delay_target_converts_to_bytes_at_the_served_rate():
    smvs = Smvs(HAND.model_copy(update={"q0_bytes": None, "target_ms": 20.0, "eps": None, "b_max_bytes": 300_000}))
    for k in range(10):
        smvs.update(report(20_000, 7_500), now=k * TS)  # 750 kB/s every period
    state = smvs.state()
    # q0 = 0.02 s x 750000 B/s = 15000 B; band = half of min(q0, B_max - q0) = 7500 B
    assert state.q0 == pytest.approx(15_000)
    assert state.band == pytest.approx(7_500)


def test_the_time_to_bytes_rate_follows_a_tenfold_drop_within_three_periods():
    update = {"q0_bytes": None, "target_ms": 50.0, "eps": None, "b_max_bytes": 300_000, "alpha": 0.85}
    smvs = Smvs(HAND.model_copy(update=update))
    for k in range(50):
        smvs.update(report(50_000, 25_000), now=k * TS)  # 2.5 MB/s (20 Mbit/s): q0 = 125000 B
    assert smvs.state().q0 == pytest.approx(125_000)
    for k in range(50, 53):
        smvs.update(report(50_000, 2_500), now=k * TS)  # 250 kB/s
    # the fast estimate weighs a new period by 1/2: 250000 + 2250000 / 8 = 531250 B/s after three periods,
    # q0 = 0.05 x 531250 = 26562.5 B, within 2.2x of the new rate's 12500 B; b_bar (the paper's alpha = 0.85)
    # still says 0.25e6 + 2.25e6 x 0.85^3 = 1.63 MB/s
    assert smvs.state().q0 == pytest.approx(26_562.5)


def test_a_long_target_is_capped_so_that_reference_and_band_fit_under_the_guarded_limit():
    smvs = Smvs(HAND.model_copy(update={"q0_bytes": None, "target_ms": 200.0, "eps": None, "b_max_bytes": 300_000}))
    for k in range(10):
        smvs.update(report(100_000, 25_000), now=k * TS)  # 2.5 MB/s: 200 ms would be 500000 B
    # B_max less the margin (0.04 x 300000 + 3000 = 15000 B) holds q0 + q0/2 (the widest band): q0 = 285000 / 1.5;
    # the band is then half of min(190000, 300000 - 190000) = 55000 B
    assert smvs.state().q0 == pytest.approx(190_000)
    assert smvs.state().band == pytest.approx(55_000)


def test_the_guard_keeps_queue_and_quotas_in_flight_under_the_limit():
    config = HAND.model_copy(update={"b_max_bytes": 100_000, "q0_bytes": 50_000})
    guarded, unguarded = Smvs(config), Smvs(config.model_copy(update={"overflow_guard": False}))
    for smvs in (guarded, unguarded):
        # k=1: b = b_bar = 2.5 MB/s, eta = 0; S = 0 - 50000 - 2*25000 + 0 = -100000; w = 25000 + 50000 + 1000
        assert smvs.update(report(0, 25_000), now=0.0).limit == 76_000
    # k=2: S = 0 - 50000 - 50000 + 76000 = -24000; the law: w = 25000 + 12000 + 1000 = 38000
    assert unguarded.update(report(0, 25_000), now=TS).limit == 38_000
    # guarded: if nothing is served from now on, queue + in flight + w <= B_max - margin, the margin
    # 0.04 x 100000 + 3000 = 7000 B: w = 100000 - 7000 - 0 - 76000 = 17000
    assert guarded.update(report(0, 25_000), now=TS).limit == 17_000


def test_the_loop_delay_is_measured_and_the_limit_cycle_of_the_rtt_rule_is_gone():
    # a plant whose quotas reach the queue three steps after their decision, telemetry without delay (the
    # virtual cell's loop with 20 ms of backhaul); 6 Mbit/s constant, B_max 100 kB, q0 50 kB
    measured = run_plant(SmvsConfig(q0_bytes=50_000), loop=3)
    assert measured.d == 2  # quotas in flight: the loop delay less the one in this period's arrivals
    paper = run_plant(SmvsConfig(q0_bytes=50_000, loop_delay="rtt", switching="sign"), loop=3)
    assert paper.d == 3  # ceil(41 ms / 2 / 10 ms): 2d = 6 quotas counted, 4 of them already in q(k)
    band = 25_000  # half of min(q0, B_max - q0)
    assert paper.swing > band  # the limit cycle: the predictor counts arrived quotas twice
    assert measured.swing < band / 4 and measured.in_band == 1.0 and measured.drops == 0


@pytest.mark.parametrize("loop", [1, 2, 3, 4, 6])
def test_the_loop_delay_is_learnt_from_smooth_quotas(loop):
    # without chatter the quota follows the rate smoothly; its changes, the rate's noise (+-30 % per period
    # here), still carry the loop delay. The RTT says 20 ms: a first guess of 1 + ceil(10 ms / Ts) = 2 steps, and
    # a loop of up to 2 + ceil(2 x 20 ms / Ts) = 6 steps that the path allows; the plant's loop is `loop`
    rng = random.Random(loop)
    rates = [750_000 * (0.7 + 0.6 * rng.random()) for _ in range(1_500)]
    result = run_plant(SmvsConfig(q0_bytes=50_000), loop=loop, rate=lambda k: rates[k], steps=1_500, min_rtt=0.02)
    assert result.d == loop - 1
    assert result.in_band == 1.0 and result.drops == 0


@pytest.mark.parametrize("straddle", [0.2, 0.5])
def test_the_laws_answer_to_the_last_report_is_not_taken_for_a_one_step_loop(straddle):
    # loop 3 steps at a constant 6 Mbit/s; up to `straddle` of each quota crosses the report's boundary and arrives
    # a period later, as when the proxy's steps come 5-15 ms apart: a period that brought more is followed by one
    # that brought less, and the law released less after it. That answer is one step old, but it is the law's, not
    # the plant's: the quotas still arrive 3 steps after their decision, or 4 for the part that straddles, so the
    # loop learnt is 3 (2 quotas in flight), or 4 where up to half of each quota straddles (mean 1/4)
    result = run_plant(SmvsConfig(target_ms=20), loop=3, steps=1_500, straddle=straddle)
    assert set(result.ds[200:]) == {2 if straddle < 0.25 else 3}
    assert result.in_band == 1.0 and result.drops == 0


def test_a_tenfold_rate_drop_is_drained_to_target_plus_band_within_the_derived_bound():
    # 20 -> 2 Mbit/s with a 20 ms target, loop 3 steps. At the drop the queue holds q0 = T b1 = 50000 B and the
    # loop's quotas, L b1 Ts = 75000 B more; nothing more is needed, so it drains at b2 = 250 kB/s:
    # (T + L Ts) b1 / b2 = 0.5 s, plus 5 periods for the rate estimate. Then the sojourn q/b2 stays under
    # target + band = 30 ms (7500 B), and nothing is dropped at B_max = 300 kB.
    result = run_plant(
        SmvsConfig(target_ms=20), loop=3, b_max=300_000, steps=1_000, rate=lambda k: 2_500_000 if k < 400 else 250_000
    )
    bound_steps = round((0.5 + 5 * TS) / TS)
    assert result.drops == 0
    after = result.queues[400 + bound_steps :]
    assert max(after) <= 7_500
    assert max(result.queues[400 : 400 + bound_steps // 2]) > 7_500  # the bound is not vacuous


def test_the_boundary_layer_step_matches_the_hand_computation():
    smvs = Smvs(HAND.model_copy(update={"switching": "saturated", "delta": 25}))
    # delta*Ts = 0.25: phi = (eta_2 + eps*Ts) / (1/2 - 0.25), the layer in which the gain on S is 1/2
    # k=1: eta_2 = 0, phi = 1000 / 0.25 = 4000; S = -10000 is beyond it, sgn = -1
    # w = 0 + 0 - 0.25*(-10000) + 1000 = 3500
    assert smvs.update(report(0, 0), now=0.0).limit == 3500
    # k=2: b = 200000, b_bar = 100000, eta = 1000 -> eta_1 = eta_2 = 500; phi = 1500 / 0.25 = 6000
    # S = 4000 - 10000 - 2*1000 + 3500 = -4500, inside: -4500 / 6000 = -0.75
    # the feed-forward is b_bar*Ts without eta_1: w = 1000 - 0.25*(-4500) - 1500*(-0.75) = 1000 + 1125 + 1125
    assert smvs.update(report(4_000, 2_000), now=TS).limit == 3250
    assert smvs.state().s == pytest.approx(-4_500)


def test_the_default_law_has_no_chatter_at_a_constant_rate():
    # 6 Mbit/s constant (7500 B per step), loop 3 steps: settled, the quota is the rate, b Ts, every step
    # (S = 0 leaves only b_bar Ts + eta_1); the paper's sgn keeps switching its full amplitude around it
    saturated = run_plant(SmvsConfig(q0_bytes=50_000), loop=3)
    paper = run_plant(SmvsConfig(q0_bytes=50_000, switching="sign"), loop=3)
    assert max(saturated.quotas[-100:]) - min(saturated.quotas[-100:]) <= 2
    assert max(paper.quotas[-100:]) - min(paper.quotas[-100:]) > 7_500
    assert saturated.in_band == 1.0 and saturated.drops == 0


def test_the_boundary_layer_stays_stable_when_the_loop_delay_is_off_by_a_step():
    # quotas reach the queue 4 steps after their decision, but d = 1 counts 2 in flight where 3 are: the gain
    # of 1/2 inside the layer keeps the loop stable for a delay off by one step (it would be up to 2/3); the
    # paper's delta*Ts = 0.875 with sgn does not (a limit cycle)
    saturated = run_plant(SmvsConfig(q0_bytes=50_000, loop_delay="rtt", d=1), loop=4)
    paper = run_plant(SmvsConfig(q0_bytes=50_000, loop_delay="rtt", d=1, switching="sign"), loop=4)
    band = 25_000
    assert saturated.swing < band / 10 and saturated.in_band == 1.0
    assert paper.swing > band / 2


def test_a_starved_period_is_served_at_the_rate_the_cqi_offers():
    config = SmvsConfig(q0_bytes=50_000, b_max_bytes=300_000)
    learnt, censored = Smvs(config), Smvs(config.model_copy(update={"channel_rate": False}))
    for smvs in (learnt, censored):
        for k in range(10):  # backlogged at CQI 7 (1.4766 bit/RE): 2500 B per period, 250 kB/s
            smvs.update(report(20_000, 2_500, cqi=7.0), now=k * TS)
        # the queue ran empty (it served the 1000 B that arrived) while the CQI rose to 15 (5.5547 bit/RE)
        smvs.update(report(0, 1_000, cqi=15.0), now=10 * TS)
    assert learnt.state().b == pytest.approx(250_000 / 1.4766 * 5.5547)
    assert censored.state().b == pytest.approx(100_000)
    # a fractional mean CQI lies between the table's rows: 7.5 -> (1.4766 + 1.9141) / 2
    learnt.update(report(0, 1_000, cqi=7.5), now=11 * TS)
    assert learnt.state().b == pytest.approx(250_000 / 1.4766 * (1.4766 + 1.9141) / 2)


def test_a_queue_that_ran_dry_between_two_reports_is_served_at_the_rate_the_enb_counts():
    # data waited at both reports, but the eNB counts 1500 B the link offered in TTIs that found the queue empty
    # (telemetry 1.3): the period served 1000 B of 2500 B, 250 kB/s, where without the count it looks backlogged
    # at the 100 kB/s it served
    config = SmvsConfig(q0_bytes=50_000, b_max_bytes=300_000)
    counted, unseen = Smvs(config), Smvs(config)
    for k in range(10):
        counted.update(report(20_000, 2_500, cqi=7.0, idle=0), now=k * TS)
        unseen.update(report(20_000, 2_500, cqi=7.0), now=k * TS)
    counted.update(report(20_000, 1_000, cqi=7.0, idle=1_500), now=10 * TS)
    unseen.update(report(20_000, 1_000, cqi=7.0), now=10 * TS)
    assert counted.state().b == pytest.approx(250_000)
    assert unseen.state().b == pytest.approx(100_000)


def test_the_default_reference_is_the_98th_percentile_of_the_forecast_error_over_the_loop():
    # d = 1 with the RTT rule: 2 quotas in flight, a loop of L = 3 steps. The law counts on L b_bar Ts per loop;
    # at a constant 2500 B per period every error is 0, until one period serves 10000 B: the three loops that
    # hold it served 15000 B against the 7500 B counted on three steps earlier.
    smvs = Smvs(SmvsConfig(loop_delay="rtt", d=1, b_max_bytes=300_000))
    for k in range(60):
        smvs.update(report(20_000, 2_500), now=k * TS)
    # errors from step 4 on (the first forecast is step 1's): 57 of them, all 0; the reference is the floor
    assert smvs.state().q0 == 3_000
    for k, served in zip(range(60, 63), (10_000, 2_500, 2_500), strict=True):
        smvs.update(report(20_000, served), now=k * TS)
    # 60 errors: 57 zeros and three of 7500 B; the 98th percentile is the ceil(0.02 x 60) = 2nd largest
    assert smvs.state().q0 == pytest.approx(7_500)


def test_the_recorder_shows_the_reserve_the_default_reference_holds_and_no_reserve_for_a_byte_reference():
    # 60 backlogged periods of 2500 B at CQI 7 (1.4766 bit/RE): the rate per unit of efficiency is learnt, 57
    # forecast errors (> 50) make the margin the reference, and every byte offered kept the reserve at 0. Then
    # the queue runs empty having served 1000 B where the channel offered 2500 B: 1500 B lost, and the reserve
    # grows by half of it less 2 % of the 2500 B offered, 725 B.
    default, in_bytes = Smvs(SmvsConfig(b_max_bytes=300_000)), Smvs(SmvsConfig(q0_bytes=50_000, b_max_bytes=300_000))
    for smvs in (default, in_bytes):
        for k in range(60):
            smvs.update(report(20_000, 2_500, cqi=7), now=k * TS)
        assert smvs.state().fields().get("reserve_bytes", 0) == 0
        smvs.update(report(0, 1_000, cqi=7), now=60 * TS)
    assert default.state().fields()["reserve_bytes"] == 725
    assert "reserve_bytes" not in in_bytes.state().fields()


def test_at_the_start_a_starved_queue_doubles_the_rate_per_loop_delay():
    # no period backlogged yet, so no rate per unit of CQI efficiency: an empty queue that served all 1000 B
    # that arrived says the link could carry more. No RTT yet: the loop is 1 + d = 2 steps, 2^(1/2) per step.
    smvs = Smvs(SmvsConfig(q0_bytes=50_000, b_max_bytes=300_000))
    rates = []
    for k in range(4):
        smvs.update(report(0, 1_000), now=k * TS)
        rates.append(smvs.state().b)
    assert rates == pytest.approx([100_000, 100_000 * 2**0.5, 200_000, 200_000 * 2**0.5])
    # once the queue held data for a whole period, the served rate is the link's again
    smvs.update(report(5_000, 1_000), now=4 * TS)
    smvs.update(report(5_000, 1_000), now=5 * TS)
    assert smvs.state().b == pytest.approx(100_000)


def test_outage_freezes_the_average_and_releases_nothing_then_resumes_at_once():
    smvs = Smvs(HAND)
    for k in range(20):
        smvs.update(report(10_000, 2_000), now=k * TS)
    bank, row = smvs.bank, smvs.row
    b_bar, etas = bank.b_bar[row], (bank.eta_low[row].copy(), bank.eta_high[row].copy())
    outage = smvs.update(report(10_000, 0, outage=True), now=20 * TS)
    assert outage.limit == 0 and smvs.state().outage
    assert bank.b_bar[row] == b_bar
    assert (bank.eta_low[row] == etas[0]).all() and (bank.eta_high[row] == etas[1]).all()
    second = smvs.update(report(10_000, 0, outage=True), now=21 * TS)
    assert second.limit == 0 and smvs.state().outage and bank.b_bar[row] == b_bar
    resumed = smvs.update(report(10_000, 2_000), now=22 * TS)
    assert not smvs.state().outage
    # the two outage steps released nothing: S = 0 - 2*b_bar*Ts + (0 + 0) = -4000 with b_bar = 200000,
    # so the quota jumps above b_bar*Ts at once
    assert smvs.state().s == pytest.approx(-4_000, abs=1)
    assert resumed.limit > 2_000


def test_a_period_that_served_nothing_unflagged_is_a_sample_of_the_rate_not_an_outage():
    # a recorded drive trace's gaps: leaving them out of eq. (19) would make b_bar the rate while serving
    smvs = Smvs(HAND)
    for k in range(20):
        smvs.update(report(10_000, 2_000), now=k * TS)
    b_bar = smvs.bank.b_bar[smvs.row]
    smvs.update(report(10_000, 0), now=20 * TS)
    assert not smvs.state().outage
    assert smvs.bank.b_bar[smvs.row] == pytest.approx(0.5 * b_bar)  # alpha = 0.5, b = 0


def test_idle_link_with_an_empty_queue_is_not_an_outage():
    smvs = Smvs(HAND)
    smvs.update(report(0, 0), now=0.0)
    smvs.update(report(0, 0), now=TS)
    assert not smvs.state().outage


def test_eta_bounds_use_the_horizon_only():
    smvs = Smvs(HAND.model_copy(update={"eta_horizon_s": 2 * TS}))
    bank, row = smvs.bank, smvs.row
    smvs.update(report(0, 0), now=0.0)
    smvs.update(report(0, 5_000), now=TS)  # b_bar = 250000, eta = (500000 - 250000) * Ts = 2500
    assert bank.eta_high[row].max() == pytest.approx(2_500)
    smvs.update(report(0, 2_500), now=2 * TS)  # eta = 0
    smvs.update(report(0, 2_500), now=3 * TS)  # eta = 0: the 2500 has left the two-step horizon
    assert bank.blocks == 2 and bank.eta_high[row].max() == pytest.approx(0)


def test_a_long_horizon_forgets_by_blocks():
    smvs = Smvs(HAND.model_copy(update={"eta_horizon_s": 100 * TS}))  # 100 steps in 10 blocks of 10
    bank, row = smvs.bank, smvs.row
    smvs.update(report(0, 0), now=0.0)
    smvs.update(report(0, 5_000), now=TS)  # a large eta in step 2 (block 0)
    for k in range(2, 100):
        smvs.update(report(0, 2_500), now=k * TS)
    assert bank.eta_high[row].max() > 1_000  # 99 steps later: still within the horizon
    for k in range(100, 110):
        smvs.update(report(0, 2_500), now=k * TS)
    assert bank.eta_high[row].max() < 1_000  # block 0 was reused: forgotten


@pytest.mark.parametrize(
    ("arrivals", "loop"),
    [
        ((25_000,), 1 + 1),  # the first initial window in the report after the one that counted the release
        ((6_000, 9_000), 2 + 1),  # spread over two reports: the loop ends when an initial window (14480 B) is in
        ((0, 0, 14_000, 1_000), 4 + 1),
    ],
)
def test_until_the_estimator_is_trusted_the_loop_is_the_first_releases_not_the_rtts(arrivals, loop):
    # srsue's ACKs wait for its scheduling-request occasions, so the RTT (41 ms here: 1 + ceil(20.5 / 10) = 4
    # steps) says little of the downlink's loop. The proxy released 30000 B for step 1 (counted with step 2's
    # report); the step whose report shows an initial window of it in the queue ends the loop: step 2 +
    # len(arrivals) - 1, a loop of that less step 1.
    smvs = Smvs(SmvsConfig(b_max_bytes=300_000))
    smvs.update(AckSample(acked=0, interval_s=TS, in_flight=0, min_rtt_s=0.041, srtt_s=0.041), now=0.0)
    smvs.update(RanSample(queue=0, served=0, period_s=TS, released=0), now=TS)
    smvs.update(RanSample(queue=0, served=0, period_s=TS, released=30_000), now=2 * TS)
    assert smvs.d == 4 - 1  # the RTT's loop until the release is seen arriving
    queue = 0
    for k, arrived in enumerate(arrivals, start=3):
        queue += arrived
        smvs.update(RanSample(queue=queue, served=0, period_s=TS, released=0), now=k * TS)
    assert smvs.d == loop - 1


def test_nothing_is_learnt_of_the_loop_before_the_first_release():
    # A UE whose connection waits through a gap in its link reports for 1.5 s before the proxy releases anything
    # toward it, longer than the estimator's warm-up of 100 steps. What arrives meanwhile is no quota's; here it
    # follows the decided quotas 8 steps later, as strong a coincidence as there can be. From step 150 on the proxy
    # releases each quota, which reaches the queue 2 steps after its decision: the first release's loop, 1 quota in
    # flight, until the estimator has had 100 steps of releases (step 250).
    rng = random.Random(8)
    smvs = Smvs(SmvsConfig(b_max_bytes=300_000))
    smvs.update(AckSample(acked=0, interval_s=TS, in_flight=0, min_rtt_s=0.041, srtt_s=0.041), now=0.0)
    first_release, decided, queue, in_flight = 150, {}, 0.0, {}
    for k in range(1, 250):
        if k <= first_release:
            arrived = decided.get(k - 8, 0)
        else:
            arrived = decided[k - 2] if k - 2 >= first_release else 0
        served = min(queue + arrived, 750_000 * (0.7 + 0.6 * rng.random()) * TS)
        queue += arrived - served
        released = decided[k - 1] if k - 1 >= first_release else 0
        sample = RanSample(
            queue=round(queue), served=round(served), period_s=TS, queue_limit=300_000, released=released
        )
        decided[k] = smvs.update(sample, now=k * TS).limit
        in_flight[k] = smvs.d
    assert len(set(decided[k] for k in range(100, first_release))) > 10  # the quotas moved: there was a lag to see
    assert {in_flight[k] for k in range(first_release + 2, 250)} == {1}


def test_a_quota_that_found_no_data_is_not_counted_on_its_way():
    # A UE's handshake waits 4.2 s in a gap of its link. Meanwhile the law decides a quota every step, but the
    # connection is not up and the proxy releases none of it. When the handshake completes, its RTT (4.2 s) makes the
    # start-up loop 1 + d with d at its cap, 50 steps, and S(k) counts the last 50 quotas on their way: counting the
    # decided ones, a few kB each, the next quotas were 0 for 45 steps (0.45 s) with the link up again
    # (Verizon-EVDO-driving from 135.8 s, 2026-11-29). None of them left, so the step after answers with a quota.
    smvs = Smvs(SmvsConfig(b_max_bytes=300_000))
    decided = []
    for k in range(1, 421):
        report = RanSample(queue=60, served=0, period_s=TS, queue_limit=300_000, released=0)  # the SYN-ACK waits
        decided.append(smvs.update(report, now=k * TS).limit)
    assert sum(decided[-50:]) > 14_480  # more than the start-up's reference was decided, and none of it released
    smvs.update(AckSample(acked=0, interval_s=TS, in_flight=0, min_rtt_s=4.2, srtt_s=4.2), now=4.2)
    report = RanSample(queue=0, served=60, period_s=TS, queue_limit=300_000, released=0)
    assert smvs.update(report, now=4.21).limit > 0
    assert smvs.d == 50


def test_without_the_proxys_count_of_releases_the_start_up_keeps_the_rtts_loop():
    smvs = Smvs(SmvsConfig(b_max_bytes=300_000))
    smvs.update(AckSample(acked=0, interval_s=TS, in_flight=0, min_rtt_s=0.041, srtt_s=0.041), now=0.0)
    for k, queue in enumerate((0, 0, 25_000, 25_000), start=1):
        smvs.update(RanSample(queue=queue, served=0, period_s=TS), now=k * TS)  # released: NaN, not known
    assert smvs.d == 4 - 1


def test_d_comes_from_half_the_minimum_rtt_when_not_configured():
    smvs = Smvs(HAND.model_copy(update={"d": None}))
    smvs.update(report(0, 0), now=0.0)
    assert smvs.d == 1  # the paper's value until an RTT is known
    smvs.update(AckSample(acked=0, interval_s=TS, in_flight=0, min_rtt_s=0.025, srtt_s=0.03), now=TS)
    smvs.update(report(0, 0), now=2 * TS)
    assert smvs.d == 2  # ceil(0.0125 / 0.01)


def test_stale_telemetry_hands_the_ue_to_the_ack_clocked_fallback_and_back():
    smvs = Smvs(HAND)
    for k in range(10):
        smvs.update(report(10_000, 2_000), now=k * TS)
        smvs.update(AckSample(acked=2_000, interval_s=TS, in_flight=20_000, min_rtt_s=0.04, srtt_s=0.05), now=k * TS)
    assert smvs.update(Tick(), now=9 * TS + 4.9 * TS).mode is Mode.QUOTA  # within 5 periods: fresh
    stale = smvs.update(Tick(), now=9 * TS + 5.5 * TS)
    assert stale.mode is Mode.WINDOW and smvs.state().fallback
    assert stale.limit == pytest.approx(200_000 * 0.04, rel=0.01)  # estimate x minimum RTT
    back = smvs.update(report(10_000, 2_000), now=0.2)
    assert back.mode is Mode.QUOTA and not smvs.state().fallback
    # the w history restarts at b_bar*Ts per step: S = 10000 - 10000 - 2*2000 + 2*2000 = 0
    assert smvs.state().s == pytest.approx(0, abs=1)


def test_a_burst_of_many_ues_steps_exactly_as_each_ue_alone():
    rng = random.Random(7)
    bank = SmvsBank(HAND)
    together = [Smvs(bank=bank) for _ in range(50)]
    alone = [Smvs(HAND) for _ in range(50)]
    for k in range(30):
        samples = [
            report(rng.randrange(0, 20_000), rng.randrange(0, 4_000), outage=rng.random() < 0.05) for _ in range(50)
        ]
        # a UE twice in one burst (a late message) is stepped twice, in order
        burst = [*together, together[3]]
        decisions = step_many(burst, [*samples, samples[3]], now=k * TS)
        expected = [c.update(s, now=k * TS) for c, s in zip(alone, samples, strict=True)]
        expected[3] = alone[3].update(samples[3], now=k * TS)
        assert decisions[:3] + decisions[4:50] == expected[:3] + expected[4:]
        assert decisions[50] == expected[3]
