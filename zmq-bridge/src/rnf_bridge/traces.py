"""Gain traces: a UE's path gain over time, from a CSV file or a generator, as a `Schedule`.

The generators have the shapes of the virtual cell's capacity traces, in dB instead of Mbit/s: random
piecewise-constant with a period (paper 000 Fig. 11) and on/off outages. Pure: files in, schedules out, errors
naming the file and line.
"""

from __future__ import annotations

import csv
import math
import random
from pathlib import Path

from rnf_bridge.schedule import Schedule, ScheduleError

CSV_HEADER = ("time_s", "gain_db")
MAX_ROWS = 1_000_000


class TraceError(ValueError):
    """A trace that cannot be read or built; the message names the file and line, or the parameter."""


def read_csv(path: Path, loop: bool) -> Schedule:
    """`time_s,gain_db` rows: the gain from that time on. `-inf` is silence (an outage).

    Times start at 0 and increase. With `loop`, the last row's time is the length of the trace and its gain is
    not used; without, the last row's gain holds from its time on.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceError(f"{path}: no such trace file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise TraceError(f"{path}: cannot read: {error}") from None
    rows = list(csv.reader(text.splitlines()))
    if not rows or tuple(cell.strip() for cell in rows[0]) != CSV_HEADER:
        found = ",".join(rows[0]) if rows else ""
        raise TraceError(f"{path}:1: header must be `time_s,gain_db`, got {found[:40]!r}")
    times: list[float] = []
    gains: list[float] = []
    for number, row in enumerate(rows[1:], start=2):
        if not "".join(row).strip():
            continue
        if len(row) != 2:
            raise TraceError(f"{path}:{number}: expected 2 columns, got {len(row)}")
        try:
            time_s, gain_db = float(row[0]), float(row[1])
        except ValueError:
            raise TraceError(f"{path}:{number}: not a number: {','.join(row)[:40]!r}") from None
        if not times and time_s != 0:
            raise TraceError(f"{path}:{number}: the first time must be 0, got {time_s}")
        if times and not time_s > times[-1]:
            raise TraceError(f"{path}:{number}: time {time_s} s does not follow {times[-1]} s")
        times.append(time_s)
        gains.append(gain_db)
        if len(times) > MAX_ROWS:
            raise TraceError(f"{path}: more than {MAX_ROWS} rows")
    if not times:
        raise TraceError(f"{path}: no data rows")
    try:
        return Schedule(tuple(times), tuple(gains), loop)
    except ScheduleError as error:
        raise TraceError(f"{path}: {error}") from None


def piecewise(min_db: float, max_db: float, period_s: float, duration_s: float, seed: int) -> Schedule:
    """A gain drawn uniformly in [min_db, max_db] every `period_s`, held in between; loops after `duration_s`."""
    if not min_db <= max_db or not math.isfinite(min_db) or not math.isfinite(max_db):
        raise TraceError(f"need finite min_db <= max_db, got {min_db} and {max_db}")
    if period_s <= 0 or duration_s < period_s:
        raise TraceError(f"need 0 < period_s <= duration_s, got {period_s} and {duration_s}")
    periods = math.ceil(duration_s / period_s - 1e-9)
    if periods > MAX_ROWS:
        raise TraceError(f"{periods} periods is more than {MAX_ROWS}")
    rng = random.Random(seed)
    levels = tuple(rng.uniform(min_db, max_db) for _ in range(periods))
    # periods - 1 < duration_s / period_s - 1e-9, so every start is strictly before duration_s
    times = (*(i * period_s for i in range(periods)), duration_s)
    return Schedule(times, (*levels, levels[0]), loop=True)


def onoff(on_db: float, off_db: float, on_s: float, off_s: float) -> Schedule:
    """`on_s` at `on_db`, then `off_s` at `off_db` (-inf: an outage, no signal at all); loops."""
    if on_s <= 0 or off_s <= 0:
        raise TraceError(f"need on_s > 0 and off_s > 0, got {on_s} and {off_s}")
    return Schedule((0.0, on_s, on_s + off_s), (on_db, off_db, on_db), loop=True)
