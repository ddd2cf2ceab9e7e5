"""What the RAN-feedback controllers are for, measured by the cell, not by the controllers: on the virtual cell at
a constant rate (the setting of the SMVS limit cycle: 6 Mbit/s, RLC queue 100 kB, backhaul 20 ms), the queue
settles at its reference, inside the band the configuration implies, with no RLC drop and the link busy; and when
the UE sends its ACKs in bunches at its scheduling-request occasions, as srsue does, `rnf`'s window, clocked by
what the eNB serves rather than by the ACKs, keeps the queue at its reference; and a web page beside the download
loads at its share of the link, not behind a queue. And on the latency suite's Markov channel, against end-to-end
CUBIC and BBR on the same trace, the controllers with their defaults meet issue 16's goals: what the testbed is for.

The references and bands are computed here by hand from the configuration (paper 000 (37)/(43) and the delay
target rule), the queue and the drops are the cell's reports, the sojourn time is the queue over the trace's
rate."""

import uuid
from pathlib import Path

import pytest
from rnf_experiments import report
from rnf_experiments.runner import run_scenario
from rnf_experiments.scenario import load_scenario

pytestmark = pytest.mark.root
SCENARIOS = Path(__file__).parents[1] / "scenarios"
RATE_BYTES_S = 750_000  # 6 Mbit/s
# utilization counts from the transfer's first byte: at a constant rate a queue held at its reference loses the link
# only while it first fills, about a loop (50 ms here), 0.6 % of 8 s; 0.998-1.000 measured in 20 runs of this
# module (2026-11-27). Before the count started at the first byte it was 0.969-0.981, with the handshakes in it.
UTILIZATION = 0.99


# A run whose proxy the host stood still for more than report.STALLED_SHARE of it (its steps more than two periods
# late) measures the host, not the controller: a 30 ms stall empties 22 kB of a queue held at 15 kB. On a busy host
# (2026-11-28, 1-5 % of a run in such steps) in band fell to 91-94 % for `smvs` and `rnf` with the loop right. Such an
# arm is run again, up to ATTEMPTS runs in all; an arm stalled every time is judged on its least stalled run.
ATTEMPTS = 5


# the arms the fixtures below choose from (name: its TOML table)
ARMS = {
    "smvs-bytes": "{name='smvs-bytes', kind='proxy', controller={kind='smvs', q0_bytes=50000}}",
    "smvs-target": "{name='smvs-target', kind='proxy', controller={kind='smvs', target_ms=20}}",
    "rnf-target": "{name='rnf-target', kind='proxy', controller={kind='rnf', target_ms=20}}",
    "smvs": "{name='smvs', kind='proxy', controller={kind='smvs'}}",
    "rnf": "{name='rnf', kind='proxy', controller={kind='rnf'}}",
    "cubic": "{name='cubic', cc='cubic'}",
    "bbr": "{name='bbr', cc='bbr'}",
}


def run_arms(tmp_path_factory, scenario_file: Path, settings: list[str], arms: dict[str, str]) -> dict[str, dict]:
    """Each arm (name: its TOML table) on the scenario with `settings`, with the proxy's retransmissions; an arm
    whose run the host stalled is run again."""
    best: dict[str, dict] = {}
    pending = list(arms)
    for _ in range(ATTEMPTS):
        prefix = "c" + uuid.uuid4().hex[:6]
        overrides = [
            *settings,
            "repetitions=1",
            f"cell.namespace_prefix='{prefix}'",
            "cell.telemetry.endpoint='tcp://127.0.0.1:5573'",
            f"arms=[{', '.join(arms[name] for name in pending)}]",
        ]
        scenario, raw = load_scenario(scenario_file, overrides)
        results = run_scenario(scenario, raw, overrides, tmp_path_factory.mktemp("control"))
        summary = report.summarize_results(results)
        for run in summary["runs"]:
            values = dict(summary["arms"][run["arm"]], stalled_share=run["decision_stalled_share"])
            # the controller's sender is the proxy's, in the core's namespace: its retransmissions are the ones the
            # controller could cause (the server's leg to the proxy is plain TCP over the wired link)
            values["proxy_retrans_segments"] = run["netstat"]["core"]["retrans_segments"]
            if run["arm"] not in best or values["stalled_share"] < best[run["arm"]]["stalled_share"]:
                best[run["arm"]] = values
        pending = [name for name in arms if best[name]["stalled_share"] > report.STALLED_SHARE]
        if not pending:
            break
    return best


def run_constant_rate(
    tmp_path_factory, ue: str, arms: dict[str, str], traffic: str = "[{kind='bulk'}]"
) -> dict[str, dict]:
    """Each arm at the constant rate (6 Mbit/s, RLC queue 100 kB, backhaul 20 ms) for 8 s, with `ue`'s settings."""
    settings = [
        "duration_s=8",
        "cell.ues=[{trace={generator='constant', rate_mbps=6}, backhaul_delay_ms=20, uplink_delay_ms=20, "
        f"queue_limit_bytes=100000{ue}}}]",
        f"traffic={traffic}",
    ]
    return run_arms(tmp_path_factory, SCENARIOS / "proxy-smoke.toml", settings, arms)


@pytest.fixture(scope="module")
def constant_rate(tmp_path_factory):
    names = ("smvs-bytes", "smvs-target", "rnf-target", "smvs")
    return run_constant_rate(tmp_path_factory, "", {n: ARMS[n] for n in names})


@pytest.fixture(scope="module")
def bunched_acks(tmp_path_factory):
    # the UE's packets wait for its next scheduling-request occasion, every 20 ms: its ACKs leave in bunches
    return run_constant_rate(tmp_path_factory, ", uplink_sr_period_ms=20", {"rnf-target": ARMS["rnf-target"]})


@pytest.fixture(scope="module")
def markov_channel(tmp_path_factory):
    # the latency suite's Markov channel (20 / 2 Mbit/s, mean sojourns 1 / 0.5 s, RLC queue 300 kB, backhaul 15 ms),
    # 10 s of its trace as `make demo` runs it, every arm on the same trace
    names = ("smvs", "rnf", "cubic", "bbr")
    return run_arms(
        tmp_path_factory, SCENARIOS / "latency" / "markov.toml", ["duration_s=10"], {n: ARMS[n] for n in names}
    )


@pytest.fixture(scope="module")
def page_beside_download(tmp_path_factory):
    # from 1 s, two web pages one after the other beside the download: paper 001's page, its three objects over
    # three connections at once
    return run_constant_rate(
        tmp_path_factory,
        "",
        {"smvs": ARMS["smvs"]},
        "[{kind='bulk'}, {kind='web', objects_bytes=[51500, 113200, 368500], pages=2, think_s=0.5, start_s=1}]",
    )


def test_smvs_with_the_papers_byte_reference_settles_in_its_band_without_loss(constant_rate):
    arm = constant_rate["smvs-bytes"]
    # q0 = 50000 B; band = half of min(q0, B_max - q0) = 25000 B (the default eps, rule (43))
    assert arm["rlc_drops_sdus"] == 0 and arm["proxy_retrans_segments"] == 0
    assert arm["band_fraction"] >= 0.95
    assert 25_000 < arm["queue_p50_bytes"] < 75_000 and arm["queue_p95_bytes"] < 75_000
    assert arm["utilization"] >= UTILIZATION


def test_smvs_with_a_delay_target_holds_the_sojourn_time(constant_rate):
    arm = constant_rate["smvs-target"]
    # q0 = 20 ms x 750 kB/s = 15000 B, band 7500 B = 10 ms: the queue drains in 10-30 ms
    assert arm["rlc_drops_sdus"] == 0 and arm["proxy_retrans_segments"] == 0
    assert arm["band_fraction"] >= 0.95
    assert 10 < arm["sojourn_p50_ms"] < 30 and arm["sojourn_p95_ms"] < 30
    assert arm["queue_p95_bytes"] < 22_500
    assert arm["utilization"] >= UTILIZATION


def test_rnf_with_a_delay_target_holds_its_reference_without_loss(constant_rate):
    arm = constant_rate["rnf-target"]
    # q_ref = 20 ms x 750 kB/s = 15000 B; the band the analysis counts is half of it, 7500 B = 10 ms, as for
    # smvs: the window feedback holds the queue's sojourn within 10-30 ms
    assert arm["rlc_drops_sdus"] == 0 and arm["proxy_retrans_segments"] == 0
    assert arm["band_fraction"] >= 0.95
    assert 10 < arm["sojourn_p50_ms"] < 30 and arm["sojourn_p95_ms"] < 30
    assert arm["utilization"] >= UTILIZATION


def test_smvs_with_its_defaults_keeps_the_link_busy_with_a_period_of_service_queued(constant_rate):
    arm = constant_rate["smvs"]
    # at a constant rate the link serves 7500 B every period: what a loop serves beyond what the law counted on
    # is a packet or two of rounding, so the forecast margin is 3000 B to 4500 B and the reference is its floor,
    # one period's service, 7500 B (10 ms of the rate); the band is half of it, 3750 B. So the queue's median lies
    # within 3750-11250 B (5-15 ms), but for the first half second, before the margin is known, when the
    # reference is a loop delay's worth of the rate (40 ms here)
    assert arm["rlc_drops_sdus"] == 0 and arm["proxy_retrans_segments"] == 0
    assert 3_750 < arm["queue_p50_bytes"] < 11_250 and 5 < arm["sojourn_p50_ms"] < 15
    assert arm["utilization"] >= UTILIZATION


def test_rnf_holds_its_reference_when_the_ue_bunches_its_acks(bunched_acks):
    arm = bunched_acks["rnf-target"]
    # q_ref = 20 ms x 750 kB/s = 15000 B. A window of TCP's unacknowledged bytes would swing with the ACKs, by up
    # to 20 ms of the rate (15000 B: the queue empties) between two occasions; clocked by what the eNB serves, the
    # queue stays within two full-size packets (3000 B, the queue's own granularity at a report) of q_ref
    assert arm["rlc_drops_sdus"] == 0 and arm["proxy_retrans_segments"] == 0
    assert 12_000 < arm["queue_p50_bytes"] < 18_000 and arm["queue_p95_bytes"] < 18_000
    assert arm["utilization"] >= UTILIZATION


def test_a_page_beside_a_download_loads_at_its_share_of_the_link(page_beside_download):
    arm = page_beside_download["smvs"]
    # The proxy shares the UE's quota among its connections, and the queue at the eNB holds about a period's
    # service (10 ms), so the page's three connections and the download share 750 kB/s as a processor would:
    # four at 187.5 kB/s until the 51.5 kB object is done (0.275 s), three at 250 kB/s for the 61.7 kB left of
    # the 113.2 kB one (0.247 s), two at 375 kB/s for the 255.3 kB left of the 368.5 kB one (0.681 s): 1.20 s. Before
    # the first byte, the handshake with the proxy and the request to the server and back, at least 40 + 20 + 20 +
    # 20 ms: no page loads in under 1.30 s. Measured 1.39-1.40 s in six runs (2026-11-30). Behind a deeper queue at
    # the eNB every round trip waits longer: in the same runs `itcp` (55 kB) 2.22-2.26 s, end-to-end CUBIC
    # (31-36 kB, slow-starting objects) 1.86-2.28 s, BBR (71-73 kB) 2.82-3.15 s. With the quota given to the oldest
    # connection first, the download took it all and no page completed.
    assert arm["flows_complete"] == 3 and arm["rlc_drops_sdus"] == 0
    assert 1.30 <= arm["ttsu_s"] <= 1.50


@pytest.mark.parametrize("controller", ["smvs", "rnf"])
def test_the_controllers_beat_the_senders_that_know_nothing_of_the_ran_on_the_markov_channel(
    markov_channel, controller
):
    # issue 16's goals, each against the same run's references: utilization at least 97 % and above CUBIC's and
    # BBR's (the mission: beat them in utilization and in delay), p95 one-way delay at most 0.5 x BBR's and 0.25 x
    # CUBIC's, no RLC drop and no retransmission by the proxy's sender. Measured in `make demo`'s runs of this
    # channel (2026-11-30, three runs): `smvs` 98.8-99.0 % at 35-44 ms, `rnf` 98.8-98.9 % at 48-57 ms, CUBIC 97.6 %
    # at 283-289 ms, BBR 89.4-92.0 % at 257-270 ms. On a host kept busy beside the run BBR served up to 99.1 % and
    # this failed: its transfer started 0.2 s later on the trace, still in startup when 2 Mbit/s stepped to 20
    # (docs/benchmarks.md). The comparison holds on a quiet host, as CI's is.
    arm, cubic, bbr = markov_channel[controller], markov_channel["cubic"], markov_channel["bbr"]
    assert arm["rlc_drops_sdus"] == 0 and arm["proxy_retrans_segments"] == 0
    assert arm["utilization"] >= 0.97
    assert arm["utilization"] > cubic["utilization"] and arm["utilization"] > bbr["utilization"]
    assert arm["delay_p95_ms"] <= 0.5 * bbr["delay_p95_ms"]
    assert arm["delay_p95_ms"] <= 0.25 * cubic["delay_p95_ms"]
