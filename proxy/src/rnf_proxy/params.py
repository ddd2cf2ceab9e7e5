"""SMVS parameter rules (paper 000, (43) and Sec. 5.2), and the predicted quasi-sliding band they imply.

- reaching law: delta > 0, eps > 0 and delta*Ts < 1 (and delta*Ts close to 1 for a short transient);
- (43): the band eps*Ts/(1 - delta*Ts) below min(q0, B_max - q0), so the queue neither empties nor overflows;
- Sec. 5.2: Ts < B_max/b_bar, or the queue drains within one step and oscillates between empty and full
  (23.76 % utilization in the paper's example); and Ts < T_b/2 for a variation period T_b (sampling theorem).

A rule that needs a quantity nobody gave (B_max, b_bar, T_b) is reported as not checked, not as passed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rnf_proxy.smvs import DEFAULT_BAND_FRACTION, SmvsParams


@dataclass(frozen=True)
class Rule:
    name: str
    holds: bool | None  # None: not checked, an input is missing
    detail: str


@dataclass(frozen=True)
class Report:
    params: SmvsParams
    band: float  # bytes, eps*Ts/(1 - delta*Ts); inf when unknown
    rules: tuple[Rule, ...]
    q0: float | None = None  # bytes, as checked (a delay target at the given rate)
    rate: float | None = None  # bytes/s, the rate checked at

    @property
    def broken(self) -> list[Rule]:
        return [rule for rule in self.rules if rule.holds is False]

    @property
    def ok(self) -> bool:
        return not self.broken


def reference(params: SmvsParams, b_bar: float | None, loop_s: float | None) -> tuple[float | None, float | None]:
    """q0 and eps in bytes and bytes/s: the configured ones, or with a delay target those the law takes at the
    rate `b_bar` (bytes/s) and the loop delay `loop_s` (the reference by default until the forecast margin, which
    only a run measures, is known); None where an input is missing."""
    if params.target_s is None:
        return params.q0, params.eps
    target = params.target_s or loop_s
    if b_bar is None or b_bar <= 0 or not target:
        return None, None if math.isnan(params.eps) else params.eps
    q0 = target * b_bar
    if not math.isnan(params.eps):
        return q0, params.eps
    margin = min(q0, params.b_max - q0) if params.b_max is not None else q0
    return q0, DEFAULT_BAND_FRACTION * margin * (1 - params.delta * params.ts) / params.ts


def check(
    params: SmvsParams, b_bar: float | None = None, t_b: float | None = None, loop_s: float | None = None
) -> Report:
    """The rules for these parameters; `b_bar` in bytes/s, `t_b` (period of the bandwidth variation) and
    `loop_s` (the loop delay: the default reference before the forecast margin is known) in s. With a delay
    target the rules are checked at the rate `b_bar`, in bytes and in milliseconds of that rate."""
    ts, delta, b_max = params.ts, params.delta, params.b_max
    q0, eps = reference(params, b_bar, loop_s)
    band = eps * ts / (1 - delta * ts) if eps is not None and delta * ts < 1 else math.inf
    rate = b_bar if b_bar and b_bar > 0 else None

    def amount(value: float) -> str:
        return f"{value:.0f} B" + (f" ({value / rate * 1000:.1f} ms)" if rate else "")

    eps_text = f"{eps:g} B/s" if eps is not None else "with q0"
    rules = [
        Rule(
            "delta > 0 and eps > 0", delta > 0 and (eps is None or eps > 0), f"delta = {delta:g} 1/s, eps = {eps_text}"
        ),
        Rule("delta*Ts < 1 (reaching law)", delta * ts < 1, f"delta*Ts = {delta * ts:.3f}; close to 1 is faster"),
    ]
    if b_max is None:
        rules.append(Rule("band < min(q0, B_max - q0) (43)", None, "B_max unknown: give it or read it from telemetry"))
        rules.append(Rule("Ts < B_max/b_bar (Sec. 5.2)", None, "B_max unknown"))
    else:
        if q0 is None:
            rules.append(Rule("band < min(q0, B_max - q0) (43)", None, "a delay target needs the rate (and the loop)"))
        else:
            margin = min(q0, b_max - q0)
            detail = f"band {amount(band)} vs margin {amount(margin)}"
            rules.append(Rule("band < min(q0, B_max - q0) (43)", band < margin, detail))
        if rate is None:
            rules.append(Rule("Ts < B_max/b_bar (Sec. 5.2)", None, "b_bar not given"))
        else:
            drain = b_max / rate
            rules.append(
                Rule("Ts < B_max/b_bar (Sec. 5.2)", ts < drain, f"Ts = {ts:g} s vs B_max/b_bar = {drain:.4g} s")
            )
    if t_b is None:
        rules.append(Rule("Ts < T_b/2 (Sec. 5.2)", None, "variation period T_b not given"))
    else:
        rules.append(Rule("Ts < T_b/2 (Sec. 5.2)", ts < t_b / 2, f"Ts = {ts:g} s vs T_b/2 = {t_b / 2:g} s"))
    return Report(params, band, tuple(rules), q0, rate)


def describe(report: Report) -> list[str]:
    """Human-readable lines: the parameters, the predicted band and each rule."""
    p = report.params
    b_max = f"{p.b_max:.0f} B" if p.b_max is not None else "from telemetry"
    if p.target_s is None:
        reference = f"q0 = {p.q0:.0f} B"
    else:
        reference = f"target = {p.target_s * 1000:g} ms" if p.target_s else "target = the loop delay"
    eps = "with q0" if math.isnan(p.eps) else f"{p.eps:g} B/s"
    lines = [
        f"Ts = {p.ts:g} s, {reference}, B_max = {b_max}, delta = {p.delta:g} 1/s, eps = {eps}, "
        f"alpha = {p.alpha:g}, gamma = {p.gamma:g}, d = {p.d if p.d is not None else 'measured'}",
    ]
    if report.q0 is None or math.isinf(report.band):
        lines.append(
            "predicted band: not known without the rate (--rate-mbps) and, for the default reference, --loop-ms"
        )
    else:
        q0, band = report.q0, report.band
        at = f" at {report.rate * 8 / 1e6:g} Mbit/s" if report.rate and p.target_s is not None else ""
        in_ms = f", {band / report.rate * 1000:.1f} ms" if report.rate else ""
        lines.append(f"predicted band{at}: |q - q0| < {band:.0f} B{in_ms}, q in ({q0 - band:.0f}, {q0 + band:.0f}) B")
    marks = {True: "ok  ", False: "FAIL", None: "--  "}
    lines += [f"{marks[rule.holds]} {rule.name}: {rule.detail}" for rule in report.rules]
    return lines
