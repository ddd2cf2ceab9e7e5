"""The Python codec against the hand-written vectors of telemetry/vectors/spec (bytes typed from SPEC.md).

Unlike the golden vectors next to them, which `rnf telemetry write-vectors` regenerates with this very codec, these
bytes and values are written by hand and change only with SPEC.md: moving a flag or a field in the codec fails here
whatever the generated vectors say. The C++ codec of enb-patches/ meets the same files in
enb-patches/tests/test_standalone.py.
"""

import json
import math
from pathlib import Path

import pytest
from rnf_telemetry import spec_vectors
from rnf_telemetry.message import DecodeError, TelemetryMessage, decode, decode_multipart, encode, encode_multipart

TELEMETRY = Path(__file__).resolve().parents[1]
SPEC = TELEMETRY / "SPEC.md"
DIRECTORY = TELEMETRY / "vectors" / "spec"
LAYOUT = spec_vectors.read_layout(SPEC)
VECTORS = spec_vectors.load(DIRECTORY, SPEC)
VALID = sorted(name for name, vector in VECTORS.items() if vector.valid)
ENCODED = sorted(name for name in VALID if not VECTORS[name].decode_only)
INVALID = sorted(name for name, vector in VECTORS.items() if not vector.valid)
# Fields that are constants of version 1, or carried by the flags: not message fields of their own.
NOT_MESSAGE_FIELDS = {"version", "flags", "length", "reserved", "ue_ipv4"}


def expected_message(name: str) -> TelemetryMessage:
    fields = spec_vectors.golden_fields(VECTORS[name])
    fields = {k: (math.nan if v is None and k.startswith("mean_") else v) for k, v in fields.items()}
    return TelemetryMessage(**fields)  # type: ignore[arg-type]


def same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN, and infinities of the same sign."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b


def test_spec_table_is_read_as_the_document_states_it():
    assert LAYOUT.flags == {"OUTAGE": 0x01, "UE_IP_VALID": 0x02}
    assert [(f.offset, f.name) for f in LAYOUT.fields[:4]] == [
        (0, "version"),
        (1, "flags"),
        (2, "length"),
        (4, "cell_id"),
    ]
    assert sum(f.size for f in LAYOUT.fields) == spec_vectors.FULL_SIZE == 128
    assert [(f.offset, f.name) for f in LAYOUT.fields if f.offset >= spec_vectors.OLDER_SIZES[0]] == [
        (96, "dl_ce_marked_sdus"),
        (100, "dl_aqm_dropped_sdus"),
        (104, "dl_aqm_dropped_bytes"),
        (108, "ul_ece_marked_acks"),
        (112, "dl_grant_prbs"),
        (116, "cell_dl_prbs"),
        (120, "dl_idle_ttis"),
        (124, "dl_idle_capacity_bytes"),
    ]
    for before, after in zip(LAYOUT.fields, LAYOUT.fields[1:], strict=False):
        assert before.offset + before.size == after.offset


def test_vectors_cover_every_field_bound_and_every_flag_bit():
    values = [VECTORS[name].values for name in ENCODED]
    for spec_field in LAYOUT.fields:
        if spec_field.name in NOT_MESSAGE_FIELDS:
            continue
        seen = [v[spec_field.name] for v in values]
        if spec_field.type == "f32":
            assert any(math.isnan(x) for x in seen), spec_field.name  # type: ignore[arg-type]
            assert 0.0 in seen and any(math.isinf(x) for x in seen), spec_field.name  # type: ignore[arg-type]
        else:
            assert 0 in seen and (1 << (8 * spec_field.size)) - 1 in seen, spec_field.name
    floats = {v[name] for v in values for name in ("mean_mcs", "mean_cqi")}
    assert {math.inf, -math.inf, 3.4028234663852886e38, 2.0**-149} <= floats  # f32's ends
    assert {v["flags"] for v in values} == {(), ("OUTAGE",), ("UE_IP_VALID",), ("OUTAGE", "UE_IP_VALID")}
    assert {v["ue_ipv4"] for v in values if v["flags"] in {("UE_IP_VALID",), ("OUTAGE", "UE_IP_VALID")}} >= {
        "0.0.0.0",
        "255.255.255.255",
    }
    known = sum(LAYOUT.flags.values())
    unknown_flags = [v.payload[1] & ~known for v in VECTORS.values() if not v.valid and len(v.payload) > 1]
    assert {bit for bit in range(8) for flags in unknown_flags if flags == 1 << bit} == {2, 3, 4, 5, 6, 7}
    assert {VECTORS[name].error for name in INVALID} == {"field", "truncated", "version"}


@pytest.mark.parametrize("name", VALID)
def test_python_decodes_the_hand_bytes_to_the_hand_values(name):
    decoded = decode(VECTORS[name].payload)
    expected = expected_message(name)
    for field in ("version", *(f for f in expected.__dataclass_fields__ if f != "version")):
        assert same(getattr(decoded, field), getattr(expected, field)), field
    assert decode_multipart([str(VECTORS[name].topic).encode(), VECTORS[name].payload]).key == expected.key


@pytest.mark.parametrize("name", ENCODED)
def test_python_encodes_the_hand_values_to_the_hand_bytes(name):
    message = expected_message(name)
    assert encode(message).hex(" ") == VECTORS[name].payload.hex(" ")
    assert encode_multipart(message)[0] == str(VECTORS[name].topic).encode("ascii")


@pytest.mark.parametrize("name", INVALID)
def test_python_rejects_the_hand_bytes_with_their_kind(name):
    with pytest.raises(DecodeError) as raised:
        decode(VECTORS[name].payload)
    assert raised.value.kind == VECTORS[name].error


def test_golden_layout_written_for_other_codecs_keeps_bytes_and_values(tmp_path):
    spec_vectors.write_golden(VECTORS, tmp_path)
    assert sorted(p.stem for p in tmp_path.glob("*.bin")) == ENCODED
    assert sorted(p.stem for p in (tmp_path / "decode").glob("*.bin")) == ["later_minor", "v1_0", "v1_1", "v1_2"]
    assert '"ul_ece_marked_acks": 0' in (tmp_path / "decode" / "v1_0.json").read_text()
    assert '"cell_dl_prbs": 0' in (tmp_path / "decode" / "v1_1.json").read_text()
    # SPEC.md, "Versioning": before 1.3 the idle TTIs read as not counted, 0xFFFFFFFF, not 0
    for older in ("v1_0", "v1_1", "v1_2"):
        fields = json.loads((tmp_path / "decode" / f"{older}.json").read_text())
        assert (fields["dl_idle_ttis"], fields["dl_idle_capacity_bytes"]) == (4294967295, 0), older
    assert sorted(p.stem for p in (tmp_path / "invalid").glob("*.bin")) == INVALID
    assert (tmp_path / "maxima.bin").read_bytes() == VECTORS["maxima"].payload
    assert '"mean_cqi": Infinity' in (tmp_path / "maxima.json").read_text()
    assert '"mean_mcs": null' in (tmp_path / "outage_only.json").read_text()
    assert (tmp_path / "invalid" / "invalid_empty.bin").read_bytes() == b""


@pytest.mark.parametrize(
    ("line", "complaint"),
    [
        ("00 00         # rnti = 0", "SPEC.md puts rnti"),  # where cell_id belongs
        ("00 00 00      # cell_id = 0", "SPEC.md puts cell_id"),  # three bytes for a u32
        ("00 00 00 00   # cellid = 0", "not a field"),
    ],
)
def test_a_line_that_disagrees_with_the_spec_table_is_refused(tmp_path, line, complaint):
    text = (DIRECTORY / "zeros.hex").read_text().replace("00 00 00 00               # cell_id = 0", line)
    (tmp_path / "broken.hex").write_text(text)
    with pytest.raises(spec_vectors.VectorError, match=complaint):
        spec_vectors.load(tmp_path, SPEC)


def test_a_value_that_does_not_fit_its_field_is_refused(tmp_path):
    text = (DIRECTORY / "zeros.hex").read_text().replace("# rnti = 0", "# rnti = 0x10000")
    (tmp_path / "broken.hex").write_text(text)
    with pytest.raises(spec_vectors.VectorError, match="does not fit"):
        spec_vectors.load(tmp_path, SPEC)


@pytest.mark.parametrize("nan", ["01 00 c0 7f", "00 00 c0 ff", "01 00 80 7f"], ids=["payload", "negative", "signaling"])
def test_any_nan_pattern_decodes_as_nan(nan):
    # SPEC.md: publishers write 00 00 c0 7f, decoders read any NaN as NaN.
    payload = bytearray(VECTORS["ip_zero_valid"].payload)
    payload[80:84] = bytes.fromhex(nan)
    assert math.isnan(decode(bytes(payload)).mean_mcs)


def test_a_1_0_vector_lists_only_the_1_0_fields_and_decodes_with_the_1_1_counters_zero():
    v1_0 = VECTORS["v1_0"]
    assert v1_0.decode_only and len(v1_0.payload) == 96 and "dl_ce_marked_sdus" not in v1_0.values
    # the same bytes as `offsets` but for the length field, which says 96
    assert v1_0.payload[4:] == VECTORS["offsets"].payload[4:96]
    decoded = decode(v1_0.payload)
    assert (decoded.dl_ce_marked_sdus, decoded.ul_ece_marked_acks, decoded.dl_dropped_bytes) == (0, 0, 0x5F5E5D5C)


def test_a_1_1_vector_lists_only_the_1_1_fields_and_decodes_with_the_resource_blocks_unknown():
    v1_1 = VECTORS["v1_1"]
    assert v1_1.decode_only and len(v1_1.payload) == 112 and "dl_grant_prbs" not in v1_1.values
    assert v1_1.payload[4:] == VECTORS["offsets"].payload[4:112]
    decoded = decode(v1_1.payload)
    assert (decoded.dl_grant_prbs, decoded.cell_dl_prbs, decoded.ul_ece_marked_acks) == (0, 0, 0x6F6E6D6C)


def test_a_1_2_vector_lists_only_the_1_2_fields_and_decodes_with_the_idle_ttis_not_counted():
    v1_2 = VECTORS["v1_2"]
    assert v1_2.decode_only and len(v1_2.payload) == 120 and "dl_idle_ttis" not in v1_2.values
    assert v1_2.payload[4:] == VECTORS["offsets"].payload[4:120]
    decoded = decode(v1_2.payload)
    assert (decoded.dl_idle_ttis, decoded.dl_idle_capacity_bytes, decoded.cell_dl_prbs) == (0xFFFFFFFF, 0, 0x77767574)


def test_a_1_3_vector_without_its_1_3_fields_is_refused(tmp_path):
    text = (DIRECTORY / "zeros.hex").read_text()
    (tmp_path / "short.hex").write_text(text.split("00 00 00 00               # dl_idle_ttis")[0])
    with pytest.raises(spec_vectors.VectorError, match="missing"):
        spec_vectors.load(tmp_path, SPEC)


def test_a_1_2_vector_without_its_1_2_fields_is_refused(tmp_path):
    text = (DIRECTORY / "zeros.hex").read_text()
    (tmp_path / "short.hex").write_text(text.split("00 00 00 00               # dl_grant_prbs")[0])
    with pytest.raises(spec_vectors.VectorError, match="missing"):
        spec_vectors.load(tmp_path, SPEC)


def test_a_1_1_vector_without_its_1_1_fields_is_refused(tmp_path):
    text = (DIRECTORY / "zeros.hex").read_text()
    (tmp_path / "short.hex").write_text(text.split("00 00 00 00               # dl_ce_marked_sdus")[0])
    with pytest.raises(spec_vectors.VectorError, match="missing"):
        spec_vectors.load(tmp_path, SPEC)
