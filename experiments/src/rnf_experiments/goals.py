"""The latency suite's goals, checked from results folders (docs/benchmarks.md, issue 16): per scenario and sweep
point, each controller arm's utilization, its p95 one-way delay as a ratio of end-to-end BBR's and CUBIC's in
the same run and its RLC drops, against the goals, and its steps in band beside them (shown, not judged: the band
goal counts only where the rate holds for longer than 1 s, and summary.json's fraction counts every step after
reaching).

    python -m rnf_experiments.goals results/*-latency-*

Prints one Markdown table per folder, ready for docs/benchmarks.md; exit 0 whatever the verdicts (it reports,
it does not judge a run's validity), 1 when a folder had no summary to report.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rnf_foundation.errors import UserError

from rnf_experiments import analysis

UTILIZATION_GOAL = 0.97
BBR_DELAY_GOAL = 0.5  # p95 one-way delay at most this fraction of end-to-end BBR's
CUBIC_DELAY_GOAL = 0.25
CONTROLLERS = ("smvs", "rnf")
REFERENCES = ("bbr", "cubic")


@dataclass(frozen=True)
class Verdict:
    arm: str
    point: str
    utilization: float
    delay_p95_ms: float
    vs_bbr: float
    vs_cubic: float
    drops: float
    band: float

    @property
    def met(self) -> bool:
        return (
            self.utilization >= UTILIZATION_GOAL
            and self.vs_bbr <= BBR_DELAY_GOAL
            and self.vs_cubic <= CUBIC_DELAY_GOAL
            and self.drops == 0
        )


def verdicts(summary: dict[str, Any]) -> list[Verdict]:
    """The controller arms of one summary.json against the references of the same sweep point."""
    arms: dict[str, dict[str, Any]] = summary["arms"]
    result = []
    for key, values in arms.items():
        arm, _, point = key.partition(" @ ")
        if arm not in CONTROLLERS:
            continue
        at = f" @ {point}" if point else ""
        bbr, cubic = (arms.get(reference + at, {}).get("delay_p95_ms", math.nan) for reference in REFERENCES)
        delay = values["delay_p95_ms"]
        result.append(
            Verdict(
                arm,
                point,
                values["utilization"],
                delay,
                delay / bbr,
                delay / cubic,
                values["rlc_drops_sdus"],
                values["band_fraction"],
            )
        )
    return result


def markdown(name: str, summary: dict[str, Any]) -> str:
    arms = summary["arms"]
    lines = [
        f"**{name}**",
        "",
        "| arm | util. % | delay p95 ms | x BBR | x CUBIC | drops | in band % | goals |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for key, values in arms.items():
        lines.append(
            f"| {key} | {values['utilization'] * 100:.1f} | {values['delay_p95_ms']:.1f} | | | "
            f"{values['rlc_drops_sdus']:.0f} | {_percent(values['band_fraction'])} | |"
        )
    for verdict in verdicts(summary):
        key = verdict.arm + (f" @ {verdict.point}" if verdict.point else "")
        row = next(i for i, line in enumerate(lines) if line.startswith(f"| {key} |"))
        lines[row] = (
            f"| **{key}** | {verdict.utilization * 100:.1f} | {verdict.delay_p95_ms:.1f} | {verdict.vs_bbr:.2f} | "
            f"{verdict.vs_cubic:.2f} | {verdict.drops:.0f} | {_percent(verdict.band)} | "
            f"{'met' if verdict.met else 'missed'} |"
        )
    return "\n".join(lines)


def _percent(value: float) -> str:
    return "-" if math.isnan(value) else f"{value * 100:.1f}"


def main(folders: list[str]) -> int:
    """Prints each folder's table; a folder without a readable summary.json (a run still going, or one that
    failed) is named on stderr and left out, and makes the exit status 1."""
    left_out = 0
    for folder in folders:
        path = Path(folder) / "summary.json"
        if not path.exists():
            print(f"goals: {path}: no such file (a run still going, or one that failed): left out", file=sys.stderr)
            left_out += 1
            continue
        try:
            summary = analysis.read_summary(path)
        except UserError as error:
            print(f"goals: {error}: left out", file=sys.stderr)
            left_out += 1
            continue
        print(markdown(summary.get("scenario") or Path(folder).name, summary), end="\n\n")
    return 1 if left_out else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
