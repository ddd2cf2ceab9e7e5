"""`rnf proxy` (run the split proxy) and `rnf params check` (SMVS parameter rules and predicted band)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click
from rich.console import Console
from rich.live import Live
from rnf_foundation.config import validate
from rnf_foundation.errors import UserError
from rnf_foundation.numbers import FiniteFloat
from rnf_foundation.signals import run_until_signal
from rnf_telemetry.record import FileRecorder, NullRecorder, Recorder

from rnf_proxy import params as rules
from rnf_proxy.config import ProxyConfig, load, parse
from rnf_proxy.proxy import Proxy
from rnf_proxy.smvs import SmvsConfig, resolve

console = Console(highlight=False, soft_wrap=True)


def _status(proxy: Proxy, elapsed: float) -> str:
    stats = proxy.stats()
    return (
        f"{elapsed:6.0f} s  {proxy.config.controller.kind}  UEs {stats['ues']}  flows {stats['flows_active']} "
        f"(opened {stats.get('flows_opened', 0)}, reset {stats.get('flows_reset', 0)})  "
        f"down {stats['bytes_down'] / 1e6:.1f} MB  up {stats['bytes_up'] / 1e6:.1f} MB  "
        f"telemetry {stats.get('telemetry_accepted', 0)} (lost {stats.get('telemetry_lost', 0)})"
    )


async def _serve(config: ProxyConfig, recorder: Recorder, duration: float | None) -> None:
    async with Proxy(config, recorder) as proxy:
        started = asyncio.get_running_loop().time()
        with Live(_status(proxy, 0.0), console=console, refresh_per_second=2, transient=False) as live:
            while duration is None or asyncio.get_running_loop().time() - started < duration:
                await asyncio.sleep(0.5)
                live.update(_status(proxy, asyncio.get_running_loop().time() - started))


@click.command("proxy")
@click.argument("config_file", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--namespace", help="Network namespace to relay in (the cell's core), overriding the file.")
@click.option("--controller", "kind", type=click.Choice(["smvs", "rnf", "itcp", "clamp", "ewma"]), help="Kind.")
@click.option("--duration", type=FiniteFloat(min=0.1), help="Stop after this many seconds.")
@click.option("--record", type=click.Path(file_okay=False, path_type=Path), help="Write series.lp here.")
def proxy(
    config_file: Path | None, namespace: str | None, kind: str | None, duration: float | None, record: Path | None
) -> None:
    """Run the split proxy described by CONFIG_FILE (TOML; defaults: transparent, smvs, loopback telemetry)."""
    config = load(config_file) if config_file else ProxyConfig()
    data = config.model_dump()
    if namespace:
        data["namespace"] = namespace
    if kind and kind != config.controller.kind:
        data["controller"] = {"kind": kind}
    config = parse(data, str(config_file or "command line"))
    recorder: Recorder = NullRecorder()
    if record:
        record.mkdir(parents=True, exist_ok=True)
        recorder = FileRecorder(record / "series.lp", {"component": "proxy"})
    try:
        run_until_signal(_serve(config, recorder, duration))
    finally:
        recorder.close()


@click.group("params")
def params() -> None:
    """Controller parameters against the papers' rules."""


@params.command("check")
@click.argument("config_file", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--ts", type=FiniteFloat(min=0, min_open=True), help="Ts, s (the telemetry period).")
@click.option("--q0", type=click.IntRange(min=1), help="Reference queue q0, bytes.")
@click.option("--target-ms", type=FiniteFloat(min=0, min_open=True), help="Delay target, ms (q0 = rate x target).")
@click.option(
    "--loop-ms",
    type=FiniteFloat(min=0, min_open=True),
    help="Loop delay, ms: the reference before the margin is known.",
)
@click.option(
    "--switching", type=click.Choice(["saturated", "sign"]), help="sgn(S) in a boundary layer, or sgn (the paper's)."
)
@click.option("--b-max", type=click.IntRange(min=1), help="eNB queue limit B_max, bytes.")
@click.option("--delta", type=FiniteFloat(min=0, min_open=True), help="delta, 1/s.")
@click.option("--eps", type=FiniteFloat(min=0, min_open=True), help="eps, bytes/s.")
@click.option("--rate-mbps", type=FiniteFloat(min=0, min_open=True), help="Mean rate b_bar, Mbit/s.")
@click.option("--variation-period", type=FiniteFloat(min=0, min_open=True), help="T_b, s.")
def check(
    config_file: Path | None,
    ts: float | None,
    q0: int | None,
    target_ms: float | None,
    loop_ms: float | None,
    switching: str | None,
    b_max: int | None,
    delta: float | None,
    eps: float | None,
    rate_mbps: float | None,
    variation_period: float | None,
) -> None:
    """Check SMVS parameters (paper 000, rule (43) and Sec. 5.2) and print the predicted band; with a delay
    target (the default), at the rate --rate-mbps, in bytes and milliseconds."""
    smvs = load(config_file).controller if config_file else SmvsConfig()
    if not isinstance(smvs, SmvsConfig):
        raise UserError(f"{config_file}: controller.kind is {smvs.kind!r}; the rules are SMVS's")
    overrides = {
        "ts_s": ts,
        "q0_bytes": q0,
        "target_ms": target_ms,
        "switching": switching,
        "b_max_bytes": b_max,
        "delta": delta,
        "eps": eps,
    }
    data = smvs.model_dump() | {k: v for k, v in overrides.items() if v is not None}
    smvs = validate(SmvsConfig, data, str(config_file or "options"))
    resolved = resolve(smvs)
    if resolved is None and smvs.b_max_bytes is not None:
        raise UserError(f"q0 = {smvs.q0_bytes} B is not below B_max = {smvs.b_max_bytes} B: give eps, or a smaller q0")
    if resolved is None:
        raise UserError("B_max is needed to fill in the default eps for q0 in bytes: give --b-max (or eps)")
    b_bar = rate_mbps * 1e6 / 8 if rate_mbps else None
    loop_s = loop_ms / 1000 if loop_ms else None
    report = rules.check(resolved, b_bar=b_bar, t_b=variation_period, loop_s=loop_s)
    for line in rules.describe(report):
        console.print(line, style="red" if line.startswith("FAIL") else None)
    if not report.ok:
        raise SystemExit(1)
