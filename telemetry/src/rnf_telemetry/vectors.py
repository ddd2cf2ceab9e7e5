"""Golden vectors of the contract: the cases, and reading and writing telemetry/vectors/.

Each valid vector is three files, NAME.topic (frame 1, ASCII), NAME.bin (frame 2) and NAME.json (the decoded
fields, flat, NaN written as null). Each decode-only vector (a payload of another minor revision, which a 1.3
encoder does not write) is decode/NAME.bin with decode/NAME.json, the fields a 1.3 decoder reads from it. Each
invalid vector is invalid/NAME.bin with invalid/NAME.json naming the SPEC.md error kind a decoder must report.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from rnf_telemetry.message import (
    IDLE_NOT_COUNTED,
    PAYLOAD_SIZE_1_0,
    PAYLOAD_SIZE_1_1,
    PAYLOAD_SIZE_1_2,
    TelemetryMessage,
    encode,
)

VALID: dict[str, TelemetryMessage] = {
    "basic": TelemetryMessage(
        cell_id=1,
        rnti=0x46,
        lcid=3,
        timestamp_ns=1_763_700_000_123_456_789,
        tti=123_456,
        seq=42,
        period_us=10_000,
        dl_queue_new_bytes=45_120,
        dl_queue_retx_bytes=1_500,
        dl_queue_sdus=31,
        dl_queue_limit_bytes=0,
        dl_queue_limit_sdus=128,
        dl_grant_ttis=9,
        dl_sched_new_bytes=19_872,
        dl_sched_retx_bytes=632,
        mean_mcs=17.25,
        mean_cqi=11.5,
        dl_dropped_sdus=2,
        dl_dropped_bytes=2_904,
        dl_ce_marked_sdus=5,
        dl_aqm_dropped_sdus=1,
        dl_aqm_dropped_bytes=1_452,
        ul_ece_marked_acks=3,
        dl_grant_prbs=178,
        cell_dl_prbs=25,
        dl_idle_ttis=1,
        dl_idle_capacity_bytes=2_208,
        ue_ip="172.16.0.2",
    ),
    "ip_unknown_no_grant": TelemetryMessage(
        cell_id=0x00019B01,
        rnti=0xFFF3,
        lcid=4,
        timestamp_ns=1,
        tti=0,
        seq=0,
        period_us=1_000,
        dl_queue_limit_bytes=300_000,
        dl_idle_ttis=1,
    ),
    "outage": TelemetryMessage(
        cell_id=7,
        rnti=0x3D,
        lcid=3,
        timestamp_ns=1_763_700_000_000_000_000,
        tti=98_765,
        seq=1_000,
        period_us=25_000,
        dl_queue_new_bytes=150_000,
        dl_queue_sdus=100,
        dl_queue_limit_bytes=300_000,
        dl_queue_limit_sdus=0,
        mean_cqi=0.0,
        ue_ip="10.45.0.9",
        outage=True,
    ),
    "extremes": TelemetryMessage(
        cell_id=0xFFFFFFFF,
        rnti=0xFFFF,
        lcid=0xFF,
        timestamp_ns=(1 << 64) - 1,
        tti=(1 << 64) - 1,
        seq=(1 << 32) - 1,
        period_us=(1 << 32) - 1,
        dl_queue_new_bytes=(1 << 32) - 1,
        dl_queue_retx_bytes=(1 << 32) - 1,
        dl_queue_sdus=(1 << 32) - 1,
        dl_queue_limit_bytes=(1 << 32) - 1,
        dl_queue_limit_sdus=(1 << 32) - 1,
        dl_grant_ttis=(1 << 32) - 1,
        dl_sched_new_bytes=(1 << 64) - 1,
        dl_sched_retx_bytes=(1 << 64) - 1,
        mean_mcs=28.0,
        mean_cqi=15.0,
        dl_dropped_sdus=(1 << 32) - 1,
        dl_dropped_bytes=(1 << 32) - 1,
        dl_ce_marked_sdus=(1 << 32) - 1,
        dl_aqm_dropped_sdus=(1 << 32) - 1,
        dl_aqm_dropped_bytes=(1 << 32) - 1,
        ul_ece_marked_acks=(1 << 32) - 1,
        dl_grant_prbs=(1 << 32) - 1,
        cell_dl_prbs=(1 << 32) - 1,
        dl_idle_ttis=(1 << 32) - 1,
        dl_idle_capacity_bytes=(1 << 32) - 1,
        ue_ip="255.255.255.255",
        outage=True,
    ),
}


def _with_length(payload: bytes, length: int) -> bytes:
    return payload[:2] + length.to_bytes(2, "little") + payload[4:]


def _decode_only() -> dict[str, tuple[bytes, TelemetryMessage]]:
    basic = encode(VALID["basic"])
    counters_1_1: dict[str, Any] = {"dl_ce_marked_sdus": 0, "dl_aqm_dropped_sdus": 0, "dl_aqm_dropped_bytes": 0}
    prbs_1_2: dict[str, Any] = {"dl_grant_prbs": 0, "cell_dl_prbs": 0}
    idle_1_3: dict[str, Any] = {"dl_idle_ttis": IDLE_NOT_COUNTED, "dl_idle_capacity_bytes": 0}
    return {
        # A 1.0 publisher's payload: the 1.1 counters and the 1.2 resource blocks read as 0, the idle TTIs as not
        # counted.
        "v1_0_basic": (
            _with_length(basic[:PAYLOAD_SIZE_1_0], PAYLOAD_SIZE_1_0),
            dataclasses.replace(VALID["basic"], **counters_1_1, **prbs_1_2, **idle_1_3, ul_ece_marked_acks=0),
        ),
        # A 1.1 publisher's payload: the 1.2 resource blocks read as 0 (unknown), the idle TTIs as not counted.
        "v1_1_basic": (
            _with_length(basic[:PAYLOAD_SIZE_1_1], PAYLOAD_SIZE_1_1),
            dataclasses.replace(VALID["basic"], **prbs_1_2, **idle_1_3),
        ),
        # A 1.2 publisher's payload: the idle TTIs read as not counted.
        "v1_2_basic": (
            _with_length(basic[:PAYLOAD_SIZE_1_2], PAYLOAD_SIZE_1_2),
            dataclasses.replace(VALID["basic"], **idle_1_3),
        ),
        # A later minor revision's: 8 bytes this revision does not know, ignored.
        "later_minor": (_with_length(basic + bytes(range(0xA0, 0xA8)), len(basic) + 8), VALID["basic"]),
    }


DECODE_ONLY = _decode_only()


def _invalid() -> dict[str, tuple[bytes, str]]:
    basic = encode(VALID["basic"])
    future_minor = _with_length(basic + b"\x00" * 8, len(basic) + 8)
    return {
        "empty": (b"", "truncated"),
        "truncated_header": (basic[:3], "truncated"),
        "truncated_body": (basic[:95], "truncated"),
        "truncated_counters_1_1": (basic[:111], "truncated"),
        "truncated_prbs_1_2": (basic[:119], "truncated"),
        "truncated_idle_1_3": (basic[:127], "truncated"),
        "length_beyond_payload": (future_minor[: len(basic) + 4], "truncated"),
        "length_cuts_a_1_1_field": (_with_length(basic, 100), "field"),
        "length_cuts_a_1_2_field": (_with_length(basic, 116), "field"),
        "length_cuts_a_1_3_field": (_with_length(basic, 124), "field"),
        "version_2": (b"\x02" + basic[1:], "version"),
        "version_0": (b"\x00" + basic[1:], "version"),
        "unknown_flag": (basic[:1] + b"\x83" + basic[2:], "field"),
        "reserved_byte_set": (basic[:11] + b"\x01" + basic[12:], "field"),
        "length_too_small": (basic[:2] + (64).to_bytes(2, "little") + basic[4:], "field"),
    }


INVALID = _invalid()


def message_to_json(message: TelemetryMessage) -> dict[str, object]:
    fields = dataclasses.asdict(message)
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in sorted(fields.items())}


def message_from_json(fields: dict[str, object]) -> TelemetryMessage:
    values = {k: (math.nan if v is None and k.startswith("mean_") else v) for k, v in fields.items()}
    return TelemetryMessage(**values)  # type: ignore[arg-type]


def write(directory: Path) -> None:
    """Write every vector into `directory` (telemetry/vectors/)."""
    (directory / "invalid").mkdir(parents=True, exist_ok=True)
    (directory / "decode").mkdir(parents=True, exist_ok=True)
    for name, (payload, message) in DECODE_ONLY.items():
        (directory / "decode" / f"{name}.bin").write_bytes(payload)
        (directory / "decode" / f"{name}.json").write_text(json.dumps(message_to_json(message), indent=1) + "\n")
    for name, message in VALID.items():
        (directory / f"{name}.topic").write_bytes(message.key.topic())
        (directory / f"{name}.bin").write_bytes(encode(message))
        (directory / f"{name}.json").write_text(json.dumps(message_to_json(message), indent=1) + "\n")
    for name, (payload, kind) in INVALID.items():
        (directory / "invalid" / f"{name}.bin").write_bytes(payload)
        (directory / "invalid" / f"{name}.json").write_text(json.dumps({"error": kind}) + "\n")
