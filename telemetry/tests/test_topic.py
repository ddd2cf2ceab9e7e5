"""Topics: fixed width, so a ZeroMQ prefix selects exactly one cell or one UE."""

import pytest
from rnf_telemetry.topic import StreamKey, parse_topic, topic_filter


def test_topic_round_trip():
    key = StreamKey(cell_id=1, rnti=0x46, lcid=3)
    assert key.topic() == b"tlm1/00000001/0046/03"
    assert parse_topic(key.topic()) == key


def test_ue_filter_does_not_match_a_longer_rnti():
    ue = topic_filter(cell_id=1, rnti=0x46)
    assert StreamKey(1, 0x46, 3).topic().startswith(ue)
    assert not StreamKey(1, 0x460, 3).topic().startswith(ue)
    assert not StreamKey(0x10, 0x46, 3).topic().startswith(topic_filter(cell_id=1))


@pytest.mark.parametrize(
    "topic",
    [
        b"",
        b"tlm2/00000001/0046/03",
        b"tlm1/1/46/3",
        b"tlm1/0000000G/0046/03",
        b"tlm1/00000001/0046/03\n",  # exact: no trailing byte, not even the newline a `$` would let through
        b"tlm1/00000001/0046/03\x00",
        b"tlm1/00000001/0046/030",
        b" tlm1/00000001/0046/03",
        b"tlm1/00000001/0046/03/",
    ],
)
def test_malformed_topics_do_not_parse(topic):
    assert parse_topic(topic) is None


def test_rnti_filter_needs_a_cell():
    with pytest.raises(ValueError):
        topic_filter(rnti=5)
