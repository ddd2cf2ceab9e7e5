"""Reading back what the recorder writes."""

from rnf_experiments.lineprotocol import parse_line
from rnf_telemetry.record import line


def test_round_trip_with_escapes():
    text = line("cell", {"run": "a b,c", "ue": "1"}, {"q": 5, "r": 1.5, "ok": True, "s": 'x "y", z'}, 12)
    point = parse_line(text)
    assert point.measurement == "cell"
    assert point.tags == {"run": "a b,c", "ue": "1"}
    assert point.fields == {"q": 5, "r": 1.5, "ok": True, "s": 'x "y", z'}
    assert point.time_ns == 12
