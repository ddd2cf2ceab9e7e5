"""Telemetry topics: the fixed-width ASCII first frame that lets ZeroMQ filter by cell and UE."""

from __future__ import annotations

import re
from dataclasses import dataclass

TOPIC_PREFIX = "tlm1/"
_TOPIC_RE = re.compile(rb"tlm1/([0-9a-f]{8})/([0-9a-f]{4})/([0-9a-f]{2})")


@dataclass(frozen=True, order=True)
class StreamKey:
    """One telemetry stream: a UE bearer in a cell."""

    cell_id: int
    rnti: int
    lcid: int

    def topic(self) -> bytes:
        return f"{TOPIC_PREFIX}{self.cell_id:08x}/{self.rnti:04x}/{self.lcid:02x}".encode("ascii")

    def __str__(self) -> str:
        return f"cell {self.cell_id} rnti 0x{self.rnti:04x} lcid {self.lcid}"


def parse_topic(topic: bytes) -> StreamKey | None:
    """The stream a topic names, or None when it is not exactly a version-1 telemetry topic (no byte more)."""
    match = _TOPIC_RE.fullmatch(topic)
    if match is None:
        return None
    return StreamKey(int(match[1], 16), int(match[2], 16), int(match[3], 16))


def topic_filter(cell_id: int | None = None, rnti: int | None = None) -> bytes:
    """The ZeroMQ subscription prefix for every cell, one cell, or one UE of a cell."""
    if rnti is not None and cell_id is None:
        raise ValueError("filtering by RNTI needs a cell id")
    prefix = TOPIC_PREFIX
    if cell_id is not None:
        prefix += f"{cell_id:08x}/"
    if rnti is not None:
        prefix += f"{rnti:04x}/"
    return prefix.encode("ascii")
