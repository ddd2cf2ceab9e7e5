"""SMVS parameter rules (paper 000, (43) and Sec. 5.2), and the predicted quasi-sliding band they imply.

- reaching law: delta > 0, eps > 0 and delta*Ts < 1 (and delta*Ts close to 1 for a short transient);
- (43): the band eps*Ts/(1 - delta*Ts) below min(q0, B_max - q0), so the queue neither empties nor overflows;
- Sec. 5.2: Ts < B_max/b_bar, or the queue drains within one step and oscillates between empty and full
  (23.76 % utilization in the paper's example); and Ts < T_b/2 for a variation period T_b (sampling theorem).

A rule that needs a quantity nobody gave (B_max, b_bar, T_b) is reported as not checked, not as passed.
"""

from __future__ import annotations

from dataclasses import dataclass

from rnf_proxy.smvs import SmvsParams


@dataclass(frozen=True)
class Rule:
    name: str
    holds: bool | None  # None: not checked, an input is missing
    detail: str


@dataclass(frozen=True)
class Report:
    params: SmvsParams
    band: float  # bytes, eps*Ts/(1 - delta*Ts)
    rules: tuple[Rule, ...]

    @property
    def broken(self) -> list[Rule]:
        return [rule for rule in self.rules if rule.holds is False]

    @property
    def ok(self) -> bool:
        return not self.broken


def check(params: SmvsParams, b_bar: float | None = None, t_b: float | None = None) -> Report:
    """The rules for these parameters; `b_bar` in bytes/s, `t_b` (period of the bandwidth variation) in s."""
    ts, delta, eps, q0, b_max = params.ts, params.delta, params.eps, params.q0, params.b_max
    band = params.band
    rules = [
        Rule("delta > 0 and eps > 0", delta > 0 and eps > 0, f"delta = {delta:g} 1/s, eps = {eps:g} B/s"),
        Rule("delta*Ts < 1 (reaching law)", delta * ts < 1, f"delta*Ts = {delta * ts:.3f}; close to 1 is faster"),
    ]
    if b_max is None:
        rules.append(Rule("band < min(q0, B_max - q0) (43)", None, "B_max unknown: give it or read it from telemetry"))
        rules.append(Rule("Ts < B_max/b_bar (Sec. 5.2)", None, "B_max unknown"))
    else:
        margin = min(q0, b_max - q0)
        rules.append(
            Rule("band < min(q0, B_max - q0) (43)", band < margin, f"band {band:.0f} B vs margin {margin:.0f} B")
        )
        if b_bar is None or b_bar <= 0:
            rules.append(Rule("Ts < B_max/b_bar (Sec. 5.2)", None, "b_bar not given"))
        else:
            drain = b_max / b_bar
            rules.append(
                Rule("Ts < B_max/b_bar (Sec. 5.2)", ts < drain, f"Ts = {ts:g} s vs B_max/b_bar = {drain:.4g} s")
            )
    if t_b is None:
        rules.append(Rule("Ts < T_b/2 (Sec. 5.2)", None, "variation period T_b not given"))
    else:
        rules.append(Rule("Ts < T_b/2 (Sec. 5.2)", ts < t_b / 2, f"Ts = {ts:g} s vs T_b/2 = {t_b / 2:g} s"))
    return Report(params, band, tuple(rules))


def describe(report: Report) -> list[str]:
    """Human-readable lines: the parameters, the predicted band and each rule."""
    p = report.params
    b_max = f"{p.b_max:.0f} B" if p.b_max is not None else "from telemetry"
    lines = [
        f"Ts = {p.ts:g} s, q0 = {p.q0:.0f} B, B_max = {b_max}, delta = {p.delta:g} 1/s, eps = {p.eps:g} B/s, "
        f"alpha = {p.alpha:g}, gamma = {p.gamma:g}, d = {p.d if p.d is not None else 'from RTT'}",
        f"predicted band: |q - q0| < {report.band:.0f} B, q in ({p.q0 - report.band:.0f}, {p.q0 + report.band:.0f}) B",
    ]
    marks = {True: "ok  ", False: "FAIL", None: "--  "}
    lines += [f"{marks[rule.holds]} {rule.name}: {rule.detail}" for rule in report.rules]
    return lines
