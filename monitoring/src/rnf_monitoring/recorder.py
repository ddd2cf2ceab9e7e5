"""Recording to InfluxDB without ever blocking the caller: a bounded queue, a writer thread, the file beside it.

`InfluxRecorder.record` formats one line and puts it in a bounded queue; it never waits. A thread sends the queue
to InfluxDB's `/write` in batches every `flush_interval_s` (0.2 s, so a point is in the database well within a
second). While InfluxDB is slow or down, the thread retries the same batch with backoff and the queue fills up;
points beyond `capacity` are dropped and counted. When the server answers again, the backlog goes out in batches.

The writer reports on itself as the `recorder` measurement (grafana/SCHEMA.md): every second, and at close. At
close it flushes what it holds for up to `close_timeout_s`, counts what is left as dropped, and logs the counts
when anything was dropped or rejected. `FanOutRecorder` also writes the final counts into the results folder.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rnf_telemetry.record import FieldValue, FileRecorder, line

from rnf_monitoring.client import InfluxClient
from rnf_monitoring.influx import BATCH_LINES, InfluxTarget, Outcome, backoff_s, parse_url

log = logging.getLogger("rnf.monitoring")


@dataclass(frozen=True)
class RecorderStats:
    """Points written to InfluxDB, dropped (queue full, or still unsent at close) and rejected by the server."""

    written: int = 0
    dropped: int = 0
    rejected: int = 0

    def fields(self) -> dict[str, FieldValue]:
        """The `recorder` measurement's fields."""
        return {"written_points": self.written, "dropped_points": self.dropped, "rejected_points": self.rejected}

    def __str__(self) -> str:
        return f"{self.written} points written, {self.dropped} dropped, {self.rejected} rejected"


class InfluxRecorder:
    """The `Recorder` protocol (rnf_telemetry.record) on InfluxDB's v1 `/write` API."""

    def __init__(
        self,
        target: InfluxTarget,
        base_tags: Mapping[str, str] | None = None,
        *,
        source: str = "run",
        capacity: int = 100_000,
        flush_interval_s: float = 0.2,
        stats_interval_s: float = 1.0,
        timeout_s: float = 2.0,
        close_timeout_s: float = 5.0,
    ) -> None:
        self.target = target
        self._base_tags = dict(base_tags or {})
        self.source = source
        self.capacity = capacity
        self._client = InfluxClient(target, timeout_s)
        self._queue: queue.Queue[str] = queue.Queue(maxsize=capacity)
        self._flush_interval_s = flush_interval_s
        self._stats_interval_s = stats_interval_s
        self._close_timeout_s = close_timeout_s
        self._join_timeout_s = close_timeout_s + timeout_s + 1.0
        self._lock = threading.Lock()
        self._written = self._dropped = self._rejected = 0
        self._batch: list[str] = []  # the batch being sent: owned by the writer thread until it ends
        self._closing = threading.Event()
        self._deadline = 0.0
        self._thread = threading.Thread(target=self._run, name="rnf-influx-writer", daemon=True)
        self._thread.start()

    def record(self, measurement: str, tags: Mapping[str, str], fields: Mapping[str, FieldValue], time_ns: int) -> None:
        text = line(measurement, {**self._base_tags, **tags}, fields, time_ns)
        if text is not None:
            self._put(text)

    def stats(self) -> RecorderStats:
        with self._lock:
            return RecorderStats(self._written, self._dropped, self._rejected)

    def close(self) -> None:
        """Flush for up to `close_timeout_s`; what is still unsent then is counted as dropped."""
        if self._closing.is_set():
            return
        self._deadline = time.monotonic() + self._close_timeout_s
        self._put_stats()
        self._closing.set()
        self._thread.join(self._join_timeout_s)
        with self._lock:
            self._dropped += self._queue.qsize() + len(self._batch)
        stats = self.stats()
        if stats.dropped or stats.rejected:
            log.warning("InfluxDB %s: %s", self.target, stats)

    def _put(self, text: str) -> None:
        if self._closing.is_set():
            with self._lock:
                self._dropped += 1
            return
        try:
            self._queue.put_nowait(text)
        except queue.Full:
            with self._lock:
                self._dropped += 1

    def _put_stats(self) -> None:
        text = line("recorder", self._base_tags | {"source": self.source}, self.stats().fields(), time.time_ns())
        assert text is not None
        self._put(text)

    def _take(self) -> list[str]:
        batch: list[str] = []
        while len(batch) < BATCH_LINES:
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return batch

    def _run(self) -> None:
        failures = 0
        next_stats = time.monotonic() + self._stats_interval_s
        while True:
            closing = self._closing.is_set()
            if closing and time.monotonic() > self._deadline:
                return
            if not self._batch:
                if not closing and self._queue.qsize() < BATCH_LINES:
                    self._closing.wait(self._flush_interval_s)
                    closing = self._closing.is_set()
                if not closing and time.monotonic() >= next_stats:
                    self._put_stats()
                    next_stats = time.monotonic() + self._stats_interval_s
                self._batch = self._take()
                if not self._batch:
                    if closing:
                        return
                    continue
            result = self._client.write(self._batch)
            if result.outcome is Outcome.RETRY:
                failures += 1
                if failures == 1:
                    log.warning("InfluxDB %s: %s; holding up to %d points", self.target, result.message, self.capacity)
                pause = backoff_s(failures)
                if closing:
                    time.sleep(max(min(pause, self._deadline - time.monotonic()), 0.0))
                else:
                    self._closing.wait(pause)
                continue
            if failures:
                log.warning("InfluxDB %s answers again after %d failed attempts", self.target, failures)
                failures = 0
            if result.rejected and not self._rejected:
                log.warning(
                    "InfluxDB %s rejected %d points (further rejections only counted): %s",
                    self.target,
                    result.rejected,
                    result.message,
                )
            with self._lock:
                self._written += len(self._batch) - result.rejected
                self._rejected += result.rejected
            self._batch = []


class FanOutRecorder:
    """Every point to the results folder's file and to InfluxDB; at close, InfluxDB's final counts go in the file."""

    def __init__(self, file: FileRecorder, influx: InfluxRecorder) -> None:
        self.file = file
        self.influx = influx

    def record(self, measurement: str, tags: Mapping[str, str], fields: Mapping[str, FieldValue], time_ns: int) -> None:
        self.file.record(measurement, tags, fields, time_ns)
        self.influx.record(measurement, tags, fields, time_ns)

    def close(self) -> None:
        self.influx.close()
        self.file.record("recorder", {"source": self.influx.source}, self.influx.stats().fields(), time.time_ns())
        self.file.close()


def recorder_from_url(
    url: str | None,
    directory: Path,
    base_tags: Mapping[str, str] | None = None,
    *,
    source: str = "run",
    database: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> FileRecorder | FanOutRecorder:
    """What a run or the proxy records to: `directory/series.lp` always, and InfluxDB too when `url` is given.

    `source` tags the `recorder` points (`run`, `proxy`) so that two writers of one run stay apart. Raises
    rnf_foundation.errors.UserError for a malformed URL or conflicting credentials, before anything is opened.
    """
    target = parse_url(url, os.environ if environ is None else environ, database) if url is not None else None
    file = FileRecorder(directory / "series.lp", base_tags)
    if target is None:
        return file
    return FanOutRecorder(file, InfluxRecorder(target, base_tags, source=source))
