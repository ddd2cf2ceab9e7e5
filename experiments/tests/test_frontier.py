"""The ideal fixed-target sender against hand computations, and `rnf frontier` as a user runs it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from rnf_cli.main import cli
from rnf_experiments.frontier import FrontierPoint, Loop, delay_at, fifo_delays_ms, frontier, ideal_sender

LOOP = Loop(forward_ms=15, report_period_ms=10, window_ms=10)


def unwrapped(output: str) -> str:
    """The CLI's output with the console's line wraps (at its own width) undone."""
    return " ".join(output.split())


def test_fifo_delays_count_the_ttis_from_entering_to_leaving():
    # 3000 B enter in TTI 0; 1500 leave in TTI 0 and 1500 in TTI 2: the packets waited 0 and 2 ms
    assert fifo_delays_ms([3000, 0, 0, 0], [1500, 0, 1500, 0]).tolist() == [0.0, 2.0]


def test_at_a_constant_rate_the_queue_holds_the_target_and_every_byte_waits_target_over_rate():
    # 12 Mbit/s = 1500 B per ms; the first report (t = 10 ms) sees the rate, and the release at t = 10 lands at
    # 25 ms on a queue that just emptied (15000 B sent at t = 0 and served from 15 ms): from then on it holds
    # 15000 B, 10 ms of service, so the p95 one-way delay is the backhaul's 15 ms plus 10 ms
    point = ideal_sender(np.full(3000, 1500.0), 15000.0, LOOP)
    assert point.utilization == 1.0
    assert point.delay_p95_ms == 25.0
    assert point.queue_p50_bytes == 15000.0


def test_a_rate_that_doubles_costs_what_the_link_serves_beyond_arrivals_until_the_answer_lands():
    # 1500 B/ms until 1000 ms, then 3000 B/ms. The queue (15000 B) drains at 1500 B/ms net and is empty at the
    # end of TTI 1009; the report at 1010 sees the new rate and the answer lands at 1025, so TTIs 1010-1024
    # serve only the 1500 B that arrive: 15 x 1500 B lost of 985 x 1500 + 1000 x 3000 offered from 15 ms on
    capacity = np.concatenate([np.full(1000, 1500.0), np.full(1000, 3000.0)])
    point = ideal_sender(capacity, 15000.0, LOOP)
    assert point.utilization == pytest.approx(1 - 15 * 1500 / (985 * 1500 + 1000 * 3000), abs=1e-12)


def test_a_trace_no_longer_than_the_forward_delay_is_refused():
    with pytest.raises(ValueError, match="not longer than the forward delay"):
        ideal_sender(np.full(15, 1500.0), 15000.0, LOOP)


def test_the_envelope_keeps_only_points_no_other_beats_and_the_delay_at_a_utilization_is_the_least():
    capacity = np.concatenate([np.full(1000, 1500.0), np.full(1000, 3000.0)] * 3)
    targets, loops = [3000.0, 15000.0, 45000.0], [LOOP, Loop(15, 10, 100)]
    every = [ideal_sender(capacity, target, loop) for loop in loops for target in targets]

    def beats(o: FrontierPoint, p: FrontierPoint) -> bool:  # at least as good in both, better in one
        return (o.utilization, -o.delay_p95_ms) != (p.utilization, -p.delay_p95_ms) and (
            o.utilization >= p.utilization and o.delay_p95_ms <= p.delay_p95_ms
        )

    points = frontier(capacity, targets, loops)
    assert points and all(p in every for p in points)
    assert not any(beats(o, p) for p in points for o in every)  # what it keeps, nothing beats
    assert all(any(beats(o, p) for o in points) for p in every if p not in points)  # what it drops, a kept one beats
    assert 0 < len(points) < len(every)
    assert [p.delay_p95_ms for p in points] == sorted(p.delay_p95_ms for p in points)
    made = [FrontierPoint(1.0, 10, 0.90, 40.0, 0.0), FrontierPoint(2.0, 10, 0.97, 55.0, 0.0)]
    made.append(FrontierPoint(3.0, 100, 0.99, 50.0, 0.0))
    assert delay_at(made, 0.95) == 50.0
    assert delay_at(made, 0.90) == 40.0
    assert np.isnan(delay_at(made, 0.995))


def test_cli_prints_the_curve_and_sets_a_results_folders_arms_beside_it(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    arms = {
        "smvs": {"utilization": 0.999, "delay_p95_ms": 30.0},
        "bbr": {"utilization": 0.95, "delay_p95_ms": 80.0},
        "cubic": {"utilization": 0.99, "delay_p95_ms": 200.0},
    }
    (results / "summary.json").write_text(json.dumps({"arms": arms}))
    trace = '{ generator = "constant", rate_mbps = 12 }'  # 1 s, the cell's default backhaul (10 ms)
    result = CliRunner().invoke(cli, ["frontier", trace, "--results", str(results)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "ideal fixed-target sender" in result.output
    # every target loses at most the 8 ms before the first report's answer lands (< 3 %), so the smallest
    # reaches 97 %: 3000 B at 1500 B/ms, 2 ms of queue behind the 10 ms backhaul
    output = unwrapped(result.output)
    assert "goal: utilization >= 97 % at p95 <= 40.0 ms" in output
    assert "needs 12.0 ms there" in output
    # CUBIC's 99 % is under the 99.2 % the smallest target reaches: the same 12 ms, 0.30 x the goal's 40
    assert "at CUBIC's utilization, 99.0 %, it needs 12.0 ms (0.30 x the goal's)" in output
    wrong = CliRunner().invoke(cli, ["frontier", trace, "--results", str(results), "--point", "0.04"])
    assert wrong.exit_code != 0 and "no arm at point '0.04'" in wrong.output and "smvs" in wrong.output
    alone = CliRunner().invoke(cli, ["frontier", trace, "--point", "0.04"])
    assert alone.exit_code != 0 and "--point needs --results" in alone.output


def test_cli_says_when_the_goals_delay_is_under_the_least_any_target_reaches(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    arms = {"bbr": {"utilization": 0.95, "delay_p95_ms": 80.0}, "cubic": {"utilization": 0.99, "delay_p95_ms": 40.0}}
    (results / "summary.json").write_text(json.dumps({"arms": arms}))
    trace = '{ generator = "constant", rate_mbps = 12 }'  # 1500 B per 1 ms TTI, 1 s, backhaul 10 ms
    result = CliRunner().invoke(cli, ["frontier", trace, "--results", str(results)], terminal_width=200)
    assert result.exit_code == 0, result.output
    output = unwrapped(result.output)
    # The smallest target, 3000 B, is 2 ms of queue behind the 10 ms backhaul: no target waits less. Its first
    # 3000 B, sent at 0 ms before any report, are served in TTIs 10-11; the report at 10 ms answers with 4500 B
    # landing at 20 ms, so TTIs 12-19 serve nothing: 982 of the 990 TTIs counted from 10 ms, 99.2 %. A larger
    # target may serve more at the same 12 ms (the delay counts whole TTIs), never less.
    least = re.search(r"the least p95 delay any target reaches: ([\d.]+) ms, at ([\d.]+) %", output)
    assert least is not None, output
    assert float(least[1]) == 12.0
    assert 99.2 <= float(least[2]) < 100
    # the goal's delay, 0.25 x CUBIC's 40 ms, is 10 ms: under what any target reaches
    assert "at p95 <= 10.0 ms" in output
    assert "the goal's delay is under the least any target reaches (12.0 ms)" in output
    arms["cubic"]["delay_p95_ms"] = 48.0 + 1.0  # 12.25 ms: reachable, said no more
    (results / "summary.json").write_text(json.dumps({"arms": arms}))
    reachable = CliRunner().invoke(cli, ["frontier", trace, "--results", str(results)], terminal_width=200)
    assert reachable.exit_code == 0 and "under the least" not in unwrapped(reachable.output)
    assert "at CUBIC's utilization, 99.0 %" in unwrapped(reachable.output)
    arms["cubic"]["utilization"] = 0.96  # references under the 97 % goal ask nothing more of the controllers
    (results / "summary.json").write_text(json.dumps({"arms": arms}))
    below = CliRunner().invoke(cli, ["frontier", trace, "--results", str(results)], terminal_width=200)
    assert below.exit_code == 0 and "'s utilization," not in unwrapped(below.output)


def test_cli_says_when_no_target_reaches_the_references_utilization(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    arms = {"bbr": {"utilization": 0.95, "delay_p95_ms": 80.0}, "cubic": {"utilization": 0.995, "delay_p95_ms": 200.0}}
    (results / "summary.json").write_text(json.dumps({"arms": arms}))
    scenario = Path(__file__).parents[1] / "scenarios" / "latency" / "markov.toml"
    # a 6000 B queue limit leaves one target, 3000 B (up to half the limit, from two packets). On a constant
    # 12 Mbit/s it serves 99.2 % (as above, the backhaul now 15 ms): its first 3000 B land at 15 ms and the
    # first report's answer at 25, so TTIs 17-24 serve nothing, 8 of the 985 counted. CUBIC's 99.5 % is beyond it.
    settings = [
        "duration_s=1",
        "cell.ues.0.trace={generator='constant', rate_mbps=12}",
        "cell.ues.0.queue_limit_bytes=6000",
    ]
    command = ["frontier", "--scenario", str(scenario), *(f"--set={s}" for s in settings), "--results", str(results)]
    result = CliRunner().invoke(cli, command, terminal_width=200)
    assert result.exit_code == 0, result.output
    output = unwrapped(result.output)
    assert "the least p95 delay any target reaches: 17.0 ms, at 99.2 %" in output
    assert "at CUBIC's utilization, 99.5 %, no target reaches it" in output
