"""The version-1.3 telemetry message and its codec, exactly as telemetry/SPEC.md lays it out.

The encoder writes 1.3 (128 bytes); the decoder also reads 1.0 payloads (96 bytes), whose 1.1 counters are 0, 1.1
payloads (112 bytes), whose resource-block fields are 0 (unknown), and 1.2 payloads (120 bytes); before 1.3 the
idle TTIs read as IDLE_NOT_COUNTED.
"""

from __future__ import annotations

import ipaddress
import math
import struct
from dataclasses import dataclass, field

from rnf_telemetry.topic import StreamKey, parse_topic

VERSION = 1
PAYLOAD_SIZE = 128  # version 1.3
PAYLOAD_SIZE_1_0 = 96  # a 1.0 payload: the fields before the queue discipline's counters
PAYLOAD_SIZE_1_1 = 112  # a 1.1 payload: the fields before the resource blocks
PAYLOAD_SIZE_1_2 = 120  # a 1.2 payload: the fields before the idle TTIs
IDLE_NOT_COUNTED = 0xFFFFFFFF  # `dl_idle_ttis` of a publisher that does not count them (SPEC.md)
MAX_PAYLOAD_SIZE = 0xFFFF  # the most the u16 `length` field can describe
FLAG_OUTAGE = 0x01
FLAG_UE_IP_VALID = 0x02
_KNOWN_FLAGS = FLAG_OUTAGE | FLAG_UE_IP_VALID

# Offsets and types in SPEC.md's payload table; "<" is little-endian and packed.
_LAYOUT_1_0 = struct.Struct("<BBHIHBB4sQQIIIIIIIIQQffII")
_LAYOUT_1_1 = struct.Struct("<IIII")  # appended at offset 96
_LAYOUT_1_2 = struct.Struct("<II")  # appended at offset 112
_LAYOUT_1_3 = struct.Struct("<II")  # appended at offset 120
assert _LAYOUT_1_0.size == PAYLOAD_SIZE_1_0 and _LAYOUT_1_0.size + _LAYOUT_1_1.size == PAYLOAD_SIZE_1_1
assert PAYLOAD_SIZE_1_1 + _LAYOUT_1_2.size == PAYLOAD_SIZE_1_2 and PAYLOAD_SIZE_1_2 + _LAYOUT_1_3.size == PAYLOAD_SIZE


class DecodeError(ValueError):
    """A message that breaks the contract. `kind` is one of SPEC.md's error kinds."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True)
class TelemetryMessage:
    """One export period of one UE bearer. Byte counts are bytes; times are as the field names say."""

    cell_id: int
    rnti: int
    lcid: int
    timestamp_ns: int
    tti: int
    seq: int
    period_us: int
    dl_queue_new_bytes: int = 0
    dl_queue_retx_bytes: int = 0
    dl_queue_sdus: int = 0
    dl_queue_limit_bytes: int = 0
    dl_queue_limit_sdus: int = 0
    dl_grant_ttis: int = 0
    dl_sched_new_bytes: int = 0
    dl_sched_retx_bytes: int = 0
    mean_mcs: float = math.nan
    mean_cqi: float = math.nan
    dl_dropped_sdus: int = 0
    dl_dropped_bytes: int = 0
    dl_ce_marked_sdus: int = 0
    dl_aqm_dropped_sdus: int = 0
    dl_aqm_dropped_bytes: int = 0
    ul_ece_marked_acks: int = 0
    dl_grant_prbs: int = 0
    cell_dl_prbs: int = 0
    dl_idle_ttis: int = IDLE_NOT_COUNTED
    dl_idle_capacity_bytes: int = 0
    ue_ip: str | None = None
    outage: bool = False
    version: int = field(default=VERSION, compare=False)

    @property
    def key(self) -> StreamKey:
        return StreamKey(self.cell_id, self.rnti, self.lcid)

    @property
    def queue_bytes(self) -> int:
        """RLC downlink queue q, new plus retransmission bytes."""
        return self.dl_queue_new_bytes + self.dl_queue_retx_bytes

    @property
    def sched_bytes(self) -> int:
        return self.dl_sched_new_bytes + self.dl_sched_retx_bytes

    @property
    def period_s(self) -> float:
        return self.period_us * 1e-6

    @property
    def idle_counted(self) -> bool:
        """Whether the publisher counts the TTIs the queue held nothing in, and the capacity they offered."""
        return self.dl_idle_ttis != IDLE_NOT_COUNTED

    @property
    def sched_rate_bps(self) -> float:
        """Scheduled downlink rate b over the period, bit/s."""
        return 8.0 * self.sched_bytes / self.period_s if self.period_us else 0.0


def encode(message: TelemetryMessage) -> bytes:
    """The 128-byte (version 1.3) payload of a message."""
    flags = (FLAG_OUTAGE if message.outage else 0) | (FLAG_UE_IP_VALID if message.ue_ip else 0)
    ip = ipaddress.IPv4Address(message.ue_ip).packed if message.ue_ip else bytes(4)
    return (
        _LAYOUT_1_0.pack(
            VERSION,
            flags,
            PAYLOAD_SIZE,
            message.cell_id,
            message.rnti,
            message.lcid,
            0,
            ip,
            message.timestamp_ns,
            message.tti,
            message.seq,
            message.period_us,
            message.dl_queue_new_bytes,
            message.dl_queue_retx_bytes,
            message.dl_queue_sdus,
            message.dl_queue_limit_bytes,
            message.dl_queue_limit_sdus,
            message.dl_grant_ttis,
            message.dl_sched_new_bytes,
            message.dl_sched_retx_bytes,
            message.mean_mcs,
            message.mean_cqi,
            message.dl_dropped_sdus,
            message.dl_dropped_bytes,
        )
        + _LAYOUT_1_1.pack(
            message.dl_ce_marked_sdus,
            message.dl_aqm_dropped_sdus,
            message.dl_aqm_dropped_bytes,
            message.ul_ece_marked_acks,
        )
        + _LAYOUT_1_2.pack(message.dl_grant_prbs, message.cell_dl_prbs)
        + _LAYOUT_1_3.pack(message.dl_idle_ttis, message.dl_idle_capacity_bytes)
    )


def encode_multipart(message: TelemetryMessage) -> list[bytes]:
    """The two ZeroMQ frames, topic and payload."""
    return [message.key.topic(), encode(message)]


def decode(payload: bytes) -> TelemetryMessage:
    """Decode a payload; raise DecodeError with SPEC.md's error kind when it breaks the contract."""
    if len(payload) < 4:
        raise DecodeError("truncated", f"{len(payload)} bytes, the header alone is 4")
    if len(payload) > MAX_PAYLOAD_SIZE:
        raise DecodeError("field", f"{len(payload)} bytes, more than a length field can describe ({MAX_PAYLOAD_SIZE})")
    if payload[0] != VERSION:
        raise DecodeError("version", f"version {payload[0]}, this decoder reads {VERSION}")
    length = int.from_bytes(payload[2:4], "little")
    if length < PAYLOAD_SIZE_1_0:
        raise DecodeError("field", f"length field {length} is below the version-1.0 size {PAYLOAD_SIZE_1_0}")
    if len(payload) < length:
        raise DecodeError("truncated", f"{len(payload)} bytes, the length field says {length}")
    if length not in (PAYLOAD_SIZE_1_0, PAYLOAD_SIZE_1_1, PAYLOAD_SIZE_1_2) and length < PAYLOAD_SIZE:
        raise DecodeError(
            "field",
            f"length field {length} cuts a version-1.1, 1.2 or 1.3 field "
            f"(96 for 1.0, 112 for 1.1, 120 for 1.2, at least {PAYLOAD_SIZE})",
        )
    (
        _version,
        flags,
        _length,
        cell_id,
        rnti,
        lcid,
        reserved,
        ip,
        timestamp_ns,
        tti,
        seq,
        period_us,
        queue_new,
        queue_retx,
        queue_sdus,
        limit_bytes,
        limit_sdus,
        grant_ttis,
        sched_new,
        sched_retx,
        mean_mcs,
        mean_cqi,
        dropped_sdus,
        dropped_bytes,
    ) = _LAYOUT_1_0.unpack_from(payload)
    # A 1.0 publisher has no queue discipline: nothing marked or dropped by one (SPEC.md, "Versioning").
    ce_marked, aqm_sdus, aqm_bytes, ece_acks = (
        _LAYOUT_1_1.unpack_from(payload, PAYLOAD_SIZE_1_0) if length >= PAYLOAD_SIZE_1_1 else (0, 0, 0, 0)
    )
    # Before 1.2 no publisher reported resource blocks: 0 is "unknown" (SPEC.md, `cell_dl_prbs`).
    grant_prbs, cell_prbs = _LAYOUT_1_2.unpack_from(payload, PAYLOAD_SIZE_1_1) if length >= PAYLOAD_SIZE_1_2 else (0, 0)
    idle_ttis, idle_capacity = (
        _LAYOUT_1_3.unpack_from(payload, PAYLOAD_SIZE_1_2) if length >= PAYLOAD_SIZE else (IDLE_NOT_COUNTED, 0)
    )
    if flags & ~_KNOWN_FLAGS:
        raise DecodeError("field", f"unknown flag bits 0x{flags & ~_KNOWN_FLAGS:02x}")
    if reserved:
        raise DecodeError("field", f"reserved byte is {reserved}, not 0")
    return TelemetryMessage(
        cell_id=cell_id,
        rnti=rnti,
        lcid=lcid,
        timestamp_ns=timestamp_ns,
        tti=tti,
        seq=seq,
        period_us=period_us,
        dl_queue_new_bytes=queue_new,
        dl_queue_retx_bytes=queue_retx,
        dl_queue_sdus=queue_sdus,
        dl_queue_limit_bytes=limit_bytes,
        dl_queue_limit_sdus=limit_sdus,
        dl_grant_ttis=grant_ttis,
        dl_sched_new_bytes=sched_new,
        dl_sched_retx_bytes=sched_retx,
        mean_mcs=mean_mcs,
        mean_cqi=mean_cqi,
        dl_dropped_sdus=dropped_sdus,
        dl_dropped_bytes=dropped_bytes,
        dl_ce_marked_sdus=ce_marked,
        dl_aqm_dropped_sdus=aqm_sdus,
        dl_aqm_dropped_bytes=aqm_bytes,
        ul_ece_marked_acks=ece_acks,
        dl_grant_prbs=grant_prbs,
        cell_dl_prbs=cell_prbs,
        dl_idle_ttis=idle_ttis,
        dl_idle_capacity_bytes=idle_capacity,
        ue_ip=str(ipaddress.IPv4Address(ip)) if flags & FLAG_UE_IP_VALID else None,
        outage=bool(flags & FLAG_OUTAGE),
    )


def decode_multipart(frames: list[bytes]) -> TelemetryMessage:
    """Decode a `[topic, payload]` ZeroMQ message and check that the topic agrees with the payload."""
    if len(frames) != 2:
        raise DecodeError("frames", f"{len(frames)} frames, expected 2 (topic, payload)")
    topic, payload = frames
    key = parse_topic(topic)
    if key is None:
        raise DecodeError("topic", f"{topic[:40]!r} is not a tlm1/ topic")
    message = decode(payload)
    if message.key != key:
        raise DecodeError("topic", f"topic names {key} but the payload is {message.key}")
    return message
