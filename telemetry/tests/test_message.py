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


def test_every_case_has_committed_vector_files():
    assert VALID_NAMES == sorted(vectors.VALID)
    assert INVALID_NAMES == sorted(vectors.INVALID)


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
        (2, "<H", 96),
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
    ]
    payload = bytearray(96)
    for offset, fmt, value in parts:
        struct.pack_into(fmt, payload, offset, value)
    payload[12:16] = bytes([172, 16, 0, 2])
    assert bytes(payload) == (VECTORS / "basic.bin").read_bytes()


def test_longer_payload_of_a_later_minor_revision_is_read():
    message = vectors.VALID["basic"]
    extended = bytearray(encode(message) + b"\xaa" * 8)
    extended[2:4] = (104).to_bytes(2, "little")
    assert decode(bytes(extended)) == message


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
