"""Recording of time series as InfluxDB line protocol: the interface every component writes to.

The embedded default is a local file per run (`series.lp`); an InfluxDB writer (issue: monitoring) implements
the same `Recorder` protocol. Writes never block the caller's control path beyond formatting one line.
"""

from __future__ import annotations

import io
import math
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from rnf_telemetry.message import TelemetryMessage

FieldValue = int | float | bool | str

_TAG_ESCAPE = re.compile(r"([,= ])")
_MEASUREMENT_ESCAPE = re.compile(r"([, ])")


def _escape_tag(text: str) -> str:
    return _TAG_ESCAPE.sub(r"\\\1", text)


def _format_field(value: FieldValue) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}i"
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else repr(value)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def line(measurement: str, tags: Mapping[str, str], fields: Mapping[str, FieldValue], time_ns: int) -> str | None:
    """One line of line protocol; None when no field has a value (NaN fields are left out)."""
    formatted = {key: _format_field(value) for key, value in fields.items()}
    field_text = ",".join(f"{_escape_tag(key)}={text}" for key, text in formatted.items() if text is not None)
    if not field_text:
        return None
    tag_text = "".join(f",{_escape_tag(k)}={_escape_tag(v)}" for k, v in sorted(tags.items()) if v != "")
    name = _MEASUREMENT_ESCAPE.sub(r"\\\1", measurement)
    return f"{name}{tag_text} {field_text} {time_ns}"


def telemetry_fields(message: TelemetryMessage) -> dict[str, int | float | bool | str]:
    """The `telemetry` measurement's fields (grafana/SCHEMA.md)."""
    return {
        "seq": message.seq,
        "tti": message.tti,
        "period_us": message.period_us,
        "queue_bytes": message.queue_bytes,
        "queue_new_bytes": message.dl_queue_new_bytes,
        "queue_retx_bytes": message.dl_queue_retx_bytes,
        "queue_sdus": message.dl_queue_sdus,
        "queue_limit_bytes": message.dl_queue_limit_bytes,
        "queue_limit_sdus": message.dl_queue_limit_sdus,
        "sched_new_bytes": message.dl_sched_new_bytes,
        "sched_retx_bytes": message.dl_sched_retx_bytes,
        "sched_rate_bps": message.sched_rate_bps,
        "grant_ttis": message.dl_grant_ttis,
        "mean_mcs": message.mean_mcs,
        "mean_cqi": message.mean_cqi,
        "dropped_sdus": message.dl_dropped_sdus,
        "dropped_bytes": message.dl_dropped_bytes,
        "ce_marked_sdus": message.dl_ce_marked_sdus,
        "aqm_dropped_sdus": message.dl_aqm_dropped_sdus,
        "aqm_dropped_bytes": message.dl_aqm_dropped_bytes,
        "ece_marked_acks": message.ul_ece_marked_acks,
        "grant_prbs": message.dl_grant_prbs,
        "cell_prbs": message.cell_dl_prbs,
        "outage": message.outage,
        # contract 1.3; left out where the publisher does not count them, rather than written as its 0xFFFFFFFF
        **(
            {"idle_ttis": message.dl_idle_ttis, "idle_capacity_bytes": message.dl_idle_capacity_bytes}
            if message.idle_counted
            else {}
        ),
    }


def telemetry_tags(message: TelemetryMessage) -> dict[str, str]:
    return {"cell": str(message.cell_id), "rnti": str(message.rnti), "lcid": str(message.lcid)}


class Recorder(Protocol):
    """Where series go. Implementations are thread-safe and never raise on a failing backend."""

    def record(
        self, measurement: str, tags: Mapping[str, str], fields: Mapping[str, FieldValue], time_ns: int
    ) -> None: ...

    def close(self) -> None: ...


class FileRecorder:
    """Appends line protocol to a local file, buffered; the results folder's `series.lp`."""

    def __init__(self, path: Path, base_tags: Mapping[str, str] | None = None) -> None:
        self.path = path
        self._base_tags = dict(base_tags or {})
        self._file: io.TextIOWrapper = path.open("a", encoding="utf-8", buffering=1 << 16)
        self._lock = threading.Lock()
        self.points = 0

    def record(self, measurement: str, tags: Mapping[str, str], fields: Mapping[str, FieldValue], time_ns: int) -> None:
        text = line(measurement, {**self._base_tags, **tags}, fields, time_ns)
        if text is None:
            return
        with self._lock:
            self._file.write(text + "\n")
            self.points += 1

    def close(self) -> None:
        with self._lock:
            self._file.close()


class NullRecorder:
    """Records nothing, for commands run without a results folder."""

    def record(self, measurement: str, tags: Mapping[str, str], fields: Mapping[str, FieldValue], time_ns: int) -> None:
        return None

    def close(self) -> None:
        return None
