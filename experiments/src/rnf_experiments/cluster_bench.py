"""`python -m rnf_experiments.cluster_bench`: what the Dask engine costs (docs/benchmarks.md, "Studies on a cluster").

On loopback, with a real `dask scheduler` and `rnf worker` processes: the round trip of an empty task; a 16-block
study of the virtual cell on one worker and on two, with the per-block overhead (the study's wall-clock time less its
arms' own, per block); and the spread of one arm's p95 delay over repetitions run locally, with and without an idle
worker (heartbeats) beside it. Run it as root, alone on the machine (`flock /work/bench.lock ...`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

RNF = [sys.executable, "-m", "rnf_cli"]
DASK = str(Path(sys.executable).with_name("dask"))
SCENARIO = """
name = "bench"
duration_s = {duration}
repetitions = {repetitions}
seed = 5
[cell]
kind = "virtual"
[[cell.ues]]
trace = {{ generator = "piecewise", min_mbps = 5, max_mbps = 15, period_s = 0.2, duration_s = 30 }}
backhaul_delay_ms = 10
uplink_delay_ms = 10
{arms}
"""
TWO_ARMS = '[[arms]]\nname = "cubic"\n[[arms]]\nname = "bbr"\ncc = "bbr"\n'
SWEEP = '[sweep]\nparameter = "delay"\nkeys = ["cell.ues.0.backhaul_delay_ms"]\nvalues = [5, 10, 15, 20]\n'


def _wait(predicate: object, timeout: float) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := predicate():  # type: ignore[operator]
            return found
        time.sleep(0.1)
    raise SystemExit("timed out starting the cluster")


class LocalCluster:
    """A scheduler and `workers` rnf workers on 127.0.0.1, as separate processes."""

    def __init__(self, root: Path, workers: int) -> None:
        self.processes: list[subprocess.Popen[bytes]] = []
        scheduler_file = root / "scheduler.json"
        self.processes.append(
            subprocess.Popen(
                [
                    DASK,
                    "scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--no-dashboard",
                    "--no-show",
                    "--scheduler-file",
                    str(scheduler_file),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        _wait(scheduler_file.exists, 60)
        self.address = str(_wait(lambda: json.loads(scheduler_file.read_text() or "{}").get("address"), 10))
        for index in range(workers):
            log = root / f"worker{index}.log"
            self.processes.append(
                subprocess.Popen(
                    [*RNF, "worker", "--scheduler", self.address], stdout=log.open("wb"), stderr=subprocess.STDOUT
                )
            )
            _wait(lambda log=log: "connected" in log.read_text(), 60)

    def close(self) -> None:
        for process in reversed(self.processes):
            process.terminate()
            process.wait(30)


def empty_task_round_trip(address: str, count: int = 50) -> list[float]:
    from distributed import Client

    with Client(address, set_as_default=False) as client:
        times = []
        for index in range(count):
            started = time.perf_counter()
            client.submit(int, index, pure=False).result()
            times.append(time.perf_counter() - started)
    return times


def study(root: Path, workers: int, duration: float) -> dict[str, float]:
    """A 16-block study (2 arms x 4 points x 4 repetitions) on `workers` workers: wall time and overhead."""
    scenario = root / f"study{workers}.toml"
    scenario.write_text(SCENARIO.format(duration=duration, repetitions=4, arms=TWO_ARMS) + SWEEP)
    (root / f"cluster{workers}").mkdir()
    cluster = LocalCluster(root / f"cluster{workers}", workers)
    try:
        started = time.monotonic()
        output = root / f"out{workers}"
        subprocess.run([*RNF, "run", str(scenario), "--scheduler", cluster.address, "--output", str(output)],
                       check=True, capture_output=True)  # fmt: skip
        wall = time.monotonic() - started
        if workers == 1:
            round_trip = empty_task_round_trip(cluster.address)
    finally:
        cluster.close()
    (results,) = output.iterdir()
    runs = [json.loads(p.read_text()) for p in results.glob("runs/*/run.json")]
    arms = sum(
        (datetime.fromisoformat(r["ended"]) - datetime.fromisoformat(r["started"])).total_seconds() for r in runs
    )
    blocks = len({r["block"] for r in runs})
    figures = {"workers": workers, "blocks": blocks, "wall_s": wall, "arms_s": arms,
               "overhead_per_block_s": (wall * workers - arms) / blocks}  # fmt: skip
    if workers == 1:
        figures["empty_task_ms_median"] = statistics.median(round_trip) * 1e3
        figures["empty_task_ms_p90"] = sorted(round_trip)[int(0.9 * len(round_trip))] * 1e3
    return figures


def p95_spread(root: Path, idle_worker: bool, repetitions: int, duration: float) -> dict[str, float]:
    """One arm's p95 delay over repetitions of a local run, with or without an idle worker beside it."""
    name = "idle" if idle_worker else "alone"
    scenario = root / f"spread-{name}.toml"
    scenario.write_text(SCENARIO.format(duration=duration, repetitions=repetitions, arms='[[arms]]\nname = "cubic"\n'))
    cluster = None
    if idle_worker:
        (root / f"cluster-{name}").mkdir()
        cluster = LocalCluster(root / f"cluster-{name}", 1)
    try:
        output = root / f"out-{name}"
        subprocess.run([*RNF, "run", str(scenario), "--output", str(output)], check=True, capture_output=True)
    finally:
        if cluster is not None:
            cluster.close()
    (results,) = output.iterdir()
    p95 = [run["delay_p95_ms"] for run in json.loads((results / "summary.json").read_text())["runs"]]
    return {"idle_worker": idle_worker, "runs": len(p95), "p95_mean_ms": statistics.mean(p95),
            "p95_stdev_ms": statistics.stdev(p95), "p95_range_ms": max(p95) - min(p95)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=2.0, help="seconds per arm in the 16-block study")
    parser.add_argument("--spread-repetitions", type=int, default=8)
    parser.add_argument("--spread-duration", type=float, default=5.0)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root: the trials build network namespaces")
    with tempfile.TemporaryDirectory(prefix="rnf-cluster-bench-") as folder:
        root = Path(folder)
        for figures in (
            study(root, 1, args.duration),
            study(root, 2, args.duration),
            p95_spread(root, False, args.spread_repetitions, args.spread_duration),
            p95_spread(root, True, args.spread_repetitions, args.spread_duration),
        ):
            print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}), flush=True)


if __name__ == "__main__":
    main()
