"""The codec against SPEC.md's layout and the golden vectors."""

import json
import math
import struct
from pathlib import Path

import pytest
from rnf_telemetry import vectors
from rnf_telemetry.message import DecodeError, TelemetryMessage, decode, decode_multipart, encode

VECTORS = Path(__file__).parents[1] / "vectors"
VALID_NAMES = sorted(p.stem for p in VECTORS.glob("*.bin"))
INVALID_NAMES = sorted(p.stem for p in (VECTORS / "invalid").glob("*.bin"))
DECODE_NAMES = sorted(p.stem for p in (VECTORS / "decode").glob("*.bin"))


def test_every_case_has_committed_vector_files():
    assert VALID_NAMES == sorted(vectors.VALID)
    assert INVALID_NAMES == sorted(vectors.INVALID)
    assert DECODE_NAMES == sorted(vectors.DECODE_ONLY) == ["later_minor", "v1_0_basic", "v1_1_basic", "v1_2_basic"]


@pytest.mark.parametrize("name", DECODE_NAMES)
def test_a_payload_of_another_minor_revision_decodes_to_its_json(name):
    decoded = decode((VECTORS / "decode" / f"{name}.bin").read_bytes())
    expected = json.loads((VECTORS / "decode" / f"{name}.json").read_text())
    assert vectors.message_to_json(decoded) == expected


def test_a_1_0_payload_reads_the_1_1_counters_as_zero_and_nothing_else_changes():
    payload = (VECTORS / "decode" / "v1_0_basic.bin").read_bytes()
    assert len(payload) == 96 and payload[2:4] == b"\x60\x00"
    assert payload[4:96] == (VECTORS / "basic.bin").read_bytes()[4:96]
    decoded = decode(payload)
    assert (
        decoded.dl_ce_marked_sdus,
        decoded.dl_aqm_dropped_sdus,
        decoded.dl_aqm_dropped_bytes,
        decoded.ul_ece_marked_acks,
        decoded.dl_grant_prbs,
        decoded.cell_dl_prbs,
    ) == (0, 0, 0, 0, 0, 0)
    assert (decoded.dl_idle_ttis, decoded.dl_idle_capacity_bytes) == (0xFFFFFFFF, 0) and not decoded.idle_counted
    assert decoded.dl_dropped_bytes == 2_904


def test_a_1_1_payload_reads_the_resource_blocks_as_unknown_and_nothing_else_changes():
    payload = (VECTORS / "decode" / "v1_1_basic.bin").read_bytes()
    assert len(payload) == 112 and payload[2:4] == b"\x70\x00"
    assert payload[4:112] == (VECTORS / "basic.bin").read_bytes()[4:112]
    decoded = decode(payload)
    assert (decoded.dl_grant_prbs, decoded.cell_dl_prbs) == (0, 0)
    assert (decoded.dl_idle_ttis, decoded.dl_idle_capacity_bytes) == (0xFFFFFFFF, 0) and not decoded.idle_counted
    assert (decoded.ul_ece_marked_acks, decoded.dl_dropped_bytes) == (3, 2_904)


def test_a_1_2_payload_reads_the_idle_ttis_as_not_counted_and_nothing_else_changes():
    payload = (VECTORS / "decode" / "v1_2_basic.bin").read_bytes()
    assert len(payload) == 120 and payload[2:4] == b"\x78\x00"
    assert payload[4:120] == (VECTORS / "basic.bin").read_bytes()[4:120]
    decoded = decode(payload)
    assert (decoded.dl_idle_ttis, decoded.dl_idle_capacity_bytes) == (0xFFFFFFFF, 0) and not decoded.idle_counted
    assert (decoded.dl_grant_prbs, decoded.cell_dl_prbs) == (178, 25)
    assert decode((VECTORS / "basic.bin").read_bytes()).idle_counted


@pytest.mark.parametrize("name", VALID_NAMES)
def test_golden_payload_decodes_to_its_json(name):
    decoded = decode((VECTORS / f"{name}.bin").read_bytes())
    expected = json.loads((VECTORS / f"{name}.json").read_text())
    assert vectors.message_to_json(decoded) == expected


@pytest.mark.parametrize("name", VALID_NAMES)
def test_json_encodes_to_golden_payload_and_topic(name):
    message = vectors.message_from_json(json.loads((VECTORS / f"{name}.json").read_text()))
    assert encode(message) == (VECTORS / f"{name}.bin").read_bytes()
    assert message.key.topic() == (VECTORS / f"{name}.topic").read_bytes()


@pytest.mark.parametrize("name", INVALID_NAMES)
def test_invalid_vector_is_rejected_with_its_kind(name):
    expected = json.loads((VECTORS / "invalid" / f"{name}.json").read_text())["error"]
    with pytest.raises(DecodeError) as raised:
        decode((VECTORS / "invalid" / f"{name}.bin").read_bytes())
    assert raised.value.kind == expected


def test_basic_vector_matches_spec_table_assembled_by_hand():
    # Offsets from SPEC.md, packed field by field, independently of the codec's struct format.
    parts = [
        (0, "<B", 1),
        (1, "<B", 0x02),
        (2, "<H", 128),
        (4, "<I", 1),
        (8, "<H", 0x46),
        (10, "<B", 3),
        (11, "<B", 0),
        (16, "<Q", 1_763_700_000_123_456_789),
        (24, "<Q", 123_456),
        (32, "<I", 42),
        (36, "<I", 10_000),
        (40, "<I", 45_120),
        (44, "<I", 1_500),
        (48, "<I", 31),
        (52, "<I", 0),
        (56, "<I", 128),
        (60, "<I", 9),
        (64, "<Q", 19_872),
        (72, "<Q", 632),
        (80, "<f", 17.25),
        (84, "<f", 11.5),
        (88, "<I", 2),
        (92, "<I", 2_904),
        (96, "<I", 5),
        (100, "<I", 1),
        (104, "<I", 1_452),
        (108, "<I", 3),
        (112, "<I", 178),
        (116, "<I", 25),
        (120, "<I", 1),
        (124, "<I", 2_208),
    ]
    payload = bytearray(128)
    for offset, fmt, value in parts:
        struct.pack_into(fmt, payload, offset, value)
    payload[12:16] = bytes([172, 16, 0, 2])
    assert bytes(payload) == (VECTORS / "basic.bin").read_bytes()


def test_longer_payload_of_a_later_minor_revision_is_read():
    message = vectors.VALID["basic"]
    extended = bytearray(encode(message) + b"\xaa" * 8)
    extended[2:4] = (136).to_bytes(2, "little")
    assert decode(bytes(extended)) == message


def test_a_payload_longer_than_any_length_field_is_a_field_error():
    longest = bytearray(encode(vectors.VALID["basic"]) + bytes(0xFFFF - 128))
    longest[2:4] = (0xFFFF).to_bytes(2, "little")
    assert decode(bytes(longest)) == vectors.VALID["basic"]
    with pytest.raises(DecodeError) as raised:
        decode(bytes(longest) + b"\0")
    assert raised.value.kind == "field" and "65536 bytes" in raised.value.detail


def test_a_topic_with_a_trailing_newline_is_a_topic_error():
    message = vectors.VALID["basic"]
    with pytest.raises(DecodeError) as raised:
        decode_multipart([message.key.topic() + b"\n", encode(message)])
    assert raised.value.kind == "topic"


def test_derived_rate_and_queue():
    message = TelemetryMessage(
        cell_id=1,
        rnti=70,
        lcid=3,
        timestamp_ns=0,
        tti=0,
        seq=0,
        period_us=10_000,
        dl_queue_new_bytes=1000,
        dl_queue_retx_bytes=500,
        dl_sched_new_bytes=12_000,
        dl_sched_retx_bytes=500,
    )
    assert message.queue_bytes == 1500
    assert message.sched_rate_bps == pytest.approx(10e6)


def test_nan_means_no_grant_and_survives_the_round_trip():
    message = decode(encode(vectors.VALID["ip_unknown_no_grant"]))
    assert math.isnan(message.mean_mcs) and message.ue_ip is None


def test_topic_disagreeing_with_payload_is_a_topic_error():
    payload = encode(vectors.VALID["basic"])
    with pytest.raises(DecodeError) as raised:
        decode_multipart([b"tlm1/00000001/0047/03", payload])
    assert raised.value.kind == "topic"


@pytest.mark.parametrize("frames", [[b"only one"], [b"a", b"b", b"c"]])
def test_wrong_frame_count_is_a_frames_error(frames):
    with pytest.raises(DecodeError) as raised:
        decode_multipart(frames)
    assert raised.value.kind == "frames"


def _payload(**fields: int) -> bytes:
    """basic's payload with some header bytes replaced: `version`, `flags`, `length` (u16), `reserved`."""
    payload = bytearray(encode(vectors.VALID["basic"]))
    offsets = {"version": (0, 1), "flags": (1, 1), "length": (2, 2), "reserved": (11, 1)}
    for name, value in fields.items():
        offset, size = offsets[name]
        payload[offset : offset + size] = value.to_bytes(size, "little")
    return bytes(payload)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"\x01\x00\x60", "truncated: 3 bytes, the header alone is 4"),
        (_payload()[:4], "truncated: 4 bytes, the length field says 128"),  # a whole header, no body
        (_payload()[:95], "truncated: 95 bytes, the length field says 128"),
        (_payload()[:127], "truncated: 127 bytes, the length field says 128"),
        (_payload(version=3), "version: version 3, this decoder reads 1"),  # byte 0; byte 1 (flags) is 2
        (_payload(length=95), "field: length field 95 is below the version-1.0 size 96"),
        (
            _payload(length=108),
            "field: length field 108 cuts a version-1.1, 1.2 or 1.3 field (96 for 1.0, 112 for 1.1, 120 for 1.2, "
            "at least 128)",
        ),
        (
            _payload(length=116),
            "field: length field 116 cuts a version-1.1, 1.2 or 1.3 field (96 for 1.0, 112 for 1.1, 120 for 1.2, "
            "at least 128)",
        ),
        (
            _payload(length=124),
            "field: length field 124 cuts a version-1.1, 1.2 or 1.3 field (96 for 1.0, 112 for 1.1, 120 for 1.2, "
            "at least 128)",
        ),
        (_payload(flags=0x06), "field: unknown flag bits 0x04"),  # the outage bit's neighbour, beside a known bit
        (_payload(reserved=7), "field: reserved byte is 7, not 0"),
    ],
    ids=[
        "3-bytes",
        "header-only",
        "95-bytes",
        "127-bytes",
        "version-3",
        "length-95",
        "length-108",
        "length-116",
        "length-124",
        "flag-0x04",
        "reserved-7",
    ],
)
def test_a_decode_error_says_what_is_wrong_with_the_payload(payload, message):
    # the text is what `rnf telemetry listen` and the stream statistics show a user
    with pytest.raises(DecodeError) as raised:
        decode(payload)
    assert str(raised.value) == message
    assert raised.value.detail == message.split(": ", 1)[1]


def test_a_frame_error_and_a_topic_error_say_what_they_saw():
    payload = encode(vectors.VALID["basic"])
    with pytest.raises(DecodeError) as raised:
        decode_multipart([payload])
    assert str(raised.value) == "frames: 1 frames, expected 2 (topic, payload)"
    long_topic = b"tlm2/" + b"x" * 60  # not tlm1: shown cut to its first 40 bytes
    with pytest.raises(DecodeError) as raised:
        decode_multipart([long_topic, payload])
    assert (raised.value.kind, raised.value.detail) == ("topic", f"{long_topic[:40]!r} is not a tlm1/ topic")
    with pytest.raises(DecodeError) as raised:
        decode_multipart([b"tlm1/00000001/0047/03", payload])
    assert raised.value.detail == "topic names cell 1 rnti 0x0047 lcid 3 but the payload is cell 1 rnti 0x0046 lcid 3"
