"""The control protocol: JSON requests to the bridge's REP socket and its replies. Pure: bytes in, commands out.

Requests (one JSON object each):

    {"command": "status"}
    {"command": "set_gain", "ue": "ue1", "gain_db": -10}
    {"command": "load_trace", "ue": "ue1", "times_s": [0, 5, 10], "gains_db": [0, -10, 0], "loop": true}

A gain may be `"-inf"` (silence). Replies are `{"ok": true, ...}` or `{"ok": false, "error": "..."}`; a change
reports `at_sample`, the first sample (counted from srsenb's first) that has the new gain in both directions.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from rnf_bridge.schedule import Schedule, ScheduleError


class ControlError(ValueError):
    """A request the bridge cannot carry out; the message goes back to the client."""


@dataclass(frozen=True)
class Status:
    pass


@dataclass(frozen=True)
class SetGain:
    ue: str
    gain_db: float


@dataclass(frozen=True)
class LoadTrace:
    ue: str
    schedule: Schedule


Command = Status | SetGain | LoadTrace


def encode_gain(gain_db: float) -> float | str:
    """A gain as strict JSON allows it: silence (-inf dB) as the string "-inf"."""
    return "-inf" if gain_db == -math.inf else gain_db


def _gain(value: Any, field: str) -> float:
    if value == "-inf":
        return -math.inf
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or value == math.inf:
        raise ControlError(f'{field} must be a number in dB or "-inf", got {value!r}')
    return float(value)


def _ue(request: dict[str, Any], ue_names: Collection[str]) -> str:
    ue = request.get("ue")
    if ue not in ue_names:
        raise ControlError(f"no UE {ue!r}; the bridge has {', '.join(sorted(ue_names))}")
    return str(ue)


def parse(data: bytes, ue_names: Collection[str]) -> Command:
    """The command in a request; ControlError says what is wrong with it."""
    try:
        request = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ControlError(f"not JSON: {error}") from None
    if not isinstance(request, dict):
        raise ControlError('a request is a JSON object with a "command"')
    fields = {
        "status": {"command"},
        "set_gain": {"command", "ue", "gain_db"},
        "load_trace": {"command", "ue", "times_s", "gains_db", "loop"},
    }
    command = request.get("command")
    if command not in fields:
        raise ControlError(f"unknown command {command!r}; commands: {', '.join(fields)}")
    if unknown := set(request) - fields[command]:
        raise ControlError(f"{command}: unknown fields {', '.join(sorted(unknown))}")
    if missing := fields[command] - set(request) - {"loop"}:
        raise ControlError(f"{command}: missing {', '.join(sorted(missing))}")
    if command == "status":
        return Status()
    ue = _ue(request, ue_names)
    if command == "set_gain":
        return SetGain(ue, _gain(request["gain_db"], "gain_db"))
    times, gains, loop = request["times_s"], request["gains_db"], request.get("loop", True)
    if not isinstance(times, list) or not isinstance(gains, list) or not isinstance(loop, bool):
        raise ControlError("load_trace: times_s and gains_db are lists, loop is true or false")
    if not all(isinstance(t, int | float) and not isinstance(t, bool) for t in times):
        raise ControlError("load_trace: times_s must hold numbers (seconds)")
    try:
        schedule = Schedule(
            tuple(float(t) for t in times), tuple(_gain(g, f"gains_db[{i}]") for i, g in enumerate(gains)), loop
        )
    except ScheduleError as error:
        raise ControlError(f"load_trace: {error}") from None
    return LoadTrace(ue, schedule)


def reply(**fields: Any) -> bytes:
    return json.dumps({"ok": True, **fields}, allow_nan=False).encode()


def failure(message: str) -> bytes:
    return json.dumps({"ok": False, "error": message}).encode()
