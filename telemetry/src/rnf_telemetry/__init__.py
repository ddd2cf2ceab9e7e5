"""The RAN telemetry contract (telemetry/SPEC.md): message type, codec, stream rules, ZeroMQ transport."""

from rnf_telemetry.message import (
    FLAG_OUTAGE,
    FLAG_UE_IP_VALID,
    PAYLOAD_SIZE,
    VERSION,
    DecodeError,
    TelemetryMessage,
    decode,
    decode_multipart,
    encode,
    encode_multipart,
)
from rnf_telemetry.topic import StreamKey, topic_filter

__all__ = [
    "FLAG_OUTAGE",
    "FLAG_UE_IP_VALID",
    "PAYLOAD_SIZE",
    "VERSION",
    "DecodeError",
    "StreamKey",
    "TelemetryMessage",
    "decode",
    "decode_multipart",
    "encode",
    "encode_multipart",
    "topic_filter",
]
