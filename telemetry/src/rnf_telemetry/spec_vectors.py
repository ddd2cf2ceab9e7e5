"""Hand-written vectors of the contract: telemetry/vectors/spec/NAME.hex, read without any codec.

Each file holds a payload's bytes written by hand as hex, one SPEC.md field per line, with a comment naming the
field and the value it decodes to. The loader checks each line against SPEC.md's payload table itself (the field at
that offset, its size), so a vector cannot drift from the document; it never packs or unpacks a value. The codecs
under test (Python, C++) must produce exactly these bytes from the values, and decode the bytes to the values.

    # free text (what the vector is for)
    topic tlm1/00000001/0046/03       the topic frame, for a valid vector
    error field                       the SPEC.md error kind, for an invalid one (instead of `topic`)
    from NAME                         start from NAME's bytes and values (then only `@` lines follow)
    01 00 00 00   # cell_id = 1       the next bytes: one field, in SPEC order; values are ints (0x.. allowed),
                                      floats (nan, inf, -inf), an IPv4 address, or flags (OUTAGE | UE_IP_VALID, none)
    @11 01        # reserved = 1      bytes at an offset, over what `from` gave
    truncate 95                       keep only the first 95 bytes
    aa bb         # extra = why       bytes past the fields SPEC.md knows (a later minor revision), after them all

A valid vector lists the fields its `length` covers: every field of the table for 128 or more, the version-1.0
fields for 96, the version-1.1 fields for 112, the version-1.2 fields for 120 (SPEC.md, "Versioning"). Those of
1.0, 1.1, 1.2 or longer than 128 are read, not written, by a 1.3 encoder: `decode_only`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

TELEMETRY = Path(__file__).resolve().parents[2]
SPEC = TELEMETRY / "SPEC.md"
DIRECTORY = TELEMETRY / "vectors" / "spec"

_SIZES = {"u8": 1, "u16": 2, "u32": 4, "u64": 8, "f32": 4, "4 bytes": 4}
_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|\s*`(\w+)`\s*\|")
_FLAG = re.compile(r"bit (\d+) `(\w+)`")
_LINE = re.compile(r"^(?:@(\d+)\s+)?((?:[0-9a-fA-F]{2}\s*)+)#\s*(\w+)\s*=\s*(.+?)\s*$")
OLDER_SIZES = (96, 112, 120)  # the payloads of versions 1.0, 1.1 and 1.2: SPEC.md's fields before these offsets
FULL_SIZE = 128  # version 1.3: every field of SPEC.md's table (test_spec_vectors checks the table's sum)
# What a decoder reads for a field an older payload does not carry, where it is not 0 (SPEC.md, "Versioning").
NOT_CARRIED: dict[str, int] = {"dl_idle_ttis": 0xFFFFFFFF}
EXTRA = "extra"  # bytes past the fields of the table


class VectorError(ValueError):
    """A vector file that does not follow its format or SPEC.md's table."""


@dataclass(frozen=True)
class SpecField:
    offset: int
    type: str
    name: str

    @property
    def size(self) -> int:
        return _SIZES[self.type]


@dataclass(frozen=True)
class Layout:
    """SPEC.md's payload table and flag bits, as the document states them."""

    fields: tuple[SpecField, ...]
    flags: dict[str, int]

    def at(self, offset: int) -> SpecField | None:
        return next((f for f in self.fields if f.offset == offset), None)

    def named(self, name: str) -> SpecField:
        found = next((f for f in self.fields if f.name == name), None)
        if found is None:
            raise VectorError(f"{name} is not a field of SPEC.md's payload table")
        return found


def read_layout(spec: Path = SPEC) -> Layout:
    """The payload table and the flags of SPEC.md."""
    fields: list[SpecField] = []
    flags: dict[str, int] = {}
    for line in spec.read_text(encoding="utf-8").splitlines():
        row = _ROW.match(line)
        if row is None:
            continue
        fields.append(SpecField(int(row[1]), row[2], row[3]))
        if row[3] == "flags":
            flags = {name: 1 << int(bit) for bit, name in _FLAG.findall(line)}
    if not fields or not flags:
        raise VectorError(f"{spec}: no payload table or no flag bits found")
    return Layout(tuple(fields), flags)


Value = int | float | str | tuple[str, ...]


@dataclass
class SpecVector:
    """One hand-written vector: the payload, and the topic and field values (valid) or the error kind (invalid)."""

    name: str
    description: str
    payload: bytes
    values: dict[str, Value] = field(default_factory=dict)
    topic: str | None = None
    error: str | None = None
    texts: dict[str, str] = field(default_factory=dict)  # each field's value as written in the comment

    @property
    def valid(self) -> bool:
        return self.error is None

    @property
    def decode_only(self) -> bool:
        """A valid payload that a current encoder does not write: a 1.0, 1.1 or 1.2 one, or a later minor revision's."""
        return self.valid and len(self.payload) != FULL_SIZE


def _value(layout: Layout, spec_field: SpecField, text: str) -> Value:
    if spec_field.name == "flags":
        names = tuple(sorted(n.strip() for n in text.split("|") if n.strip() not in ("", "none")))
        unknown = [n for n in names if n not in layout.flags]
        if unknown:
            raise VectorError(f"flags {unknown} are not in SPEC.md")
        return names
    if spec_field.name == "ue_ipv4":
        if re.fullmatch(r"\d{1,3}(\.\d{1,3}){3}", text) is None:
            raise VectorError(f"ue_ipv4 = {text} is not a dotted IPv4 address")
        return text
    if spec_field.type == "f32":
        return float(text)
    value = int(text, 0)
    if not 0 <= value < 1 << (8 * spec_field.size):
        raise VectorError(f"{spec_field.name} = {text} does not fit its {spec_field.type}")
    return value


def parse(name: str, text: str, known: dict[str, SpecVector], layout: Layout) -> SpecVector:
    """One vector file's text; `known` holds the vectors a `from` line may name."""
    vector = SpecVector(name, "", b"")
    payload = bytearray()
    described: list[str] = []
    sequential = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        where = f"{name}.hex:{number}"
        if not line:
            continue
        if line.startswith("#"):
            described.append(line.lstrip("# "))
            continue
        keyword, _, rest = line.partition(" ")
        if keyword == "topic":
            vector.topic = rest.strip()
        elif keyword == "error":
            vector.error = rest.strip()
        elif keyword == "from":
            base = known.get(rest.strip())
            if base is None or payload:
                raise VectorError(f"{where}: `from {rest.strip()}` needs a vector read before, and must come first")
            payload = bytearray(base.payload)
            vector.texts = dict(base.texts)
            sequential = -1
        elif keyword == "truncate":
            del payload[int(rest, 0) :]
        else:
            match = _LINE.match(line)
            if match is None:
                raise VectorError(f"{where}: expected `HEX # field = value`, got {line!r}")
            data = bytes.fromhex(match[2])
            if match[3] == EXTRA:
                if match[1] is not None or sequential != sum(f.size for f in layout.fields):
                    raise VectorError(f"{where}: extra bytes come after every field of SPEC.md, without an @offset")
                payload += data
                sequential += len(data)
                continue
            spec_field = layout.named(match[3])
            if match[1] is None:
                if sequential < 0:
                    raise VectorError(f"{where}: after `from`, bytes need an @offset")
                offset = sequential
                sequential += len(data)
            else:
                offset = int(match[1])
            if spec_field.offset != offset or spec_field.size != len(data):
                raise VectorError(
                    f"{where}: {len(data)} bytes at offset {offset}, but SPEC.md puts {spec_field.name} "
                    f"({spec_field.type}) at offset {spec_field.offset}"
                )
            if len(payload) < offset:
                raise VectorError(f"{where}: offset {offset} is past the {len(payload)} bytes so far")
            payload[offset : offset + len(data)] = data
            vector.texts[spec_field.name] = match[4]
    vector.payload = bytes(payload)
    vector.description = " ".join(described)
    if (vector.topic is None) == (vector.error is None):
        raise VectorError(f"{name}.hex: a vector has either a topic (valid) or an error kind (invalid)")
    if vector.valid:
        length = int(vector.texts.get("length", "0"), 0)
        carried = [f for f in layout.fields if length not in OLDER_SIZES or f.offset + f.size <= length]
        missing = [f.name for f in carried if f.name not in vector.texts]
        extra = [n for n in vector.texts if n not in {f.name for f in carried}]
        if missing or extra or len(vector.payload) != max(length, sum(f.size for f in carried)):
            raise VectorError(
                f"{name}.hex: length {length}: fields {missing} missing, {extra} not carried, or "
                f"{len(vector.payload)} bytes"
            )
        # Only a valid vector's comments are values; an invalid one's name what was broken ("bit 5").
        try:
            vector.values = {f.name: _value(layout, f, vector.texts[f.name]) for f in carried}
        except ValueError as error:
            raise VectorError(f"{name}.hex: {error}") from error
    return vector


def load(directory: Path = DIRECTORY, spec: Path = SPEC) -> dict[str, SpecVector]:
    """Every vector of `directory`, by name; a `from` line may name any vector of the directory."""
    layout = read_layout(spec)
    texts = {path.stem: path.read_text(encoding="utf-8") for path in sorted(directory.glob("*.hex"))}
    loaded: dict[str, SpecVector] = {}
    pending = dict(texts)
    while pending:
        ready = [n for n, t in pending.items() if (m := re.search(r"^from (\w+)", t, re.M)) is None or m[1] in loaded]
        if not ready:
            raise VectorError(f"`from` lines name vectors that do not exist or form a cycle: {sorted(pending)}")
        for name in ready:
            loaded[name] = parse(name, pending.pop(name), loaded, layout)
    return dict(sorted(loaded.items()))


def golden_fields(vector: SpecVector, layout: Layout | None = None) -> dict[str, object]:
    """A valid vector's values in the golden vectors' JSON form (telemetry/vectors/README.md): the decoded
    message's fields, `ue_ip` null unless UE_IP_VALID, NaN as null; the fields a 1.0, 1.1 or 1.2 payload does not
    carry are 0, or NOT_CARRIED's value (SPEC.md, "Versioning")."""
    layout = layout or read_layout()
    values: dict[str, Value] = {f.name: 0 for f in layout.fields} | NOT_CARRIED | vector.values
    flags, ip = values.pop("flags"), values.pop("ue_ipv4")
    assert isinstance(flags, tuple) and isinstance(ip, str)
    # Constants of a valid version-1 payload, not fields of the decoded message.
    length, reserved = values.pop("length"), values.pop("reserved")
    if (
        reserved != 0
        or values["version"] != 1
        or not isinstance(length, int)
        or not (length in OLDER_SIZES or FULL_SIZE <= length)
    ):
        raise VectorError(
            f"{vector.name}: a valid vector has version 1, length 96, 112, 120 or at least 128, reserved 0"
        )
    fields: dict[str, object] = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in values.items()}
    fields["outage"] = "OUTAGE" in flags
    fields["ue_ip"] = ip if "UE_IP_VALID" in flags else None
    return dict(sorted(fields.items()))


def write_golden(vectors: dict[str, SpecVector], directory: Path) -> None:
    """Write the vectors in the golden vectors' file layout (NAME.topic, NAME.bin, NAME.json, decode/, invalid/),
    for codecs whose tests read that layout (the C++ `telemetry_message_test VECTORS_DIR`). Infinities are written
    as JSON's non-standard `Infinity`, which strtof reads."""
    (directory / "invalid").mkdir(parents=True, exist_ok=True)
    (directory / "decode").mkdir(parents=True, exist_ok=True)
    for name, vector in vectors.items():
        if vector.decode_only:
            (directory / "decode" / f"{name}.bin").write_bytes(vector.payload)
            (directory / "decode" / f"{name}.json").write_text(json.dumps(golden_fields(vector), indent=1) + "\n")
        elif vector.valid:
            assert vector.topic is not None
            (directory / f"{name}.topic").write_bytes(vector.topic.encode("ascii"))
            (directory / f"{name}.bin").write_bytes(vector.payload)
            (directory / f"{name}.json").write_text(json.dumps(golden_fields(vector), indent=1) + "\n")
        else:
            (directory / "invalid" / f"{name}.bin").write_bytes(vector.payload)
            (directory / "invalid" / f"{name}.json").write_text(json.dumps({"error": vector.error}) + "\n")
