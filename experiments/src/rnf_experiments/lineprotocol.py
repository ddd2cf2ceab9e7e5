"""Reading back the line protocol that rnf_telemetry.record writes (results folders' series.lp)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_UNESCAPED_SPACE = re.compile(r"(?<!\\) ")
_UNESCAPED_COMMA = re.compile(r'(?<!\\),(?=(?:[^"]*"[^"]*")*[^"]*$)')
_UNESCAPED_EQUALS = re.compile(r"(?<!\\)=")


@dataclass(frozen=True)
class Point:
    measurement: str
    tags: dict[str, str]
    fields: dict[str, int | float | bool | str]
    time_ns: int


def _unescape(text: str) -> str:
    return re.sub(r"\\([ ,=\\\"])", r"\1", text)


def _value(text: str) -> int | float | bool | str:
    if text.startswith('"'):
        return _unescape(text[1:-1])
    if text in ("true", "false"):
        return text == "true"
    if text.endswith("i"):
        return int(text[:-1])
    return float(text)


def parse_line(text: str) -> Point:
    head, rest = _UNESCAPED_SPACE.split(text, maxsplit=1)
    field_text, time_text = rest.rsplit(" ", 1)
    name, *tag_parts = _UNESCAPED_COMMA.split(head)
    tags = {}
    for part in tag_parts:
        key, value = _UNESCAPED_EQUALS.split(part, maxsplit=1)
        tags[_unescape(key)] = _unescape(value)
    fields = {}
    for part in _UNESCAPED_COMMA.split(field_text):
        key, value = _UNESCAPED_EQUALS.split(part, maxsplit=1)
        fields[_unescape(key)] = _value(value)
    return Point(_unescape(name), tags, fields, int(time_text))


def read(path: Path, measurement: str | None = None) -> Iterator[Point]:
    with path.open(encoding="utf-8") as handle:
        for text in handle:
            text = text.rstrip("\n")
            if not text or text.startswith("#"):
                continue
            if measurement is not None and not text.startswith(measurement + ","):
                continue
            yield parse_line(text)
