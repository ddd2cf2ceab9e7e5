import json
import math

import pytest
from rnf_bridge import control
from rnf_bridge.schedule import Schedule

UES = ("ue1", "ue2")


def parse(request: object) -> control.Command:
    return control.parse(json.dumps(request).encode(), UES)


def test_status_set_gain_and_load_trace_are_understood():
    assert parse({"command": "status"}) == control.Status()
    assert parse({"command": "set_gain", "ue": "ue2", "gain_db": -10}) == control.SetGain("ue2", -10.0)
    assert parse({"command": "load_trace", "ue": "ue1", "times_s": [0, 5, 10], "gains_db": [0, -10, 0]}) == (
        control.LoadTrace("ue1", Schedule((0.0, 5.0, 10.0), (0.0, -10.0, 0.0), loop=True))
    )


def test_silence_is_the_string_minus_inf_both_ways():
    assert parse({"command": "set_gain", "ue": "ue1", "gain_db": "-inf"}) == control.SetGain("ue1", -math.inf)
    assert control.encode_gain(-math.inf) == "-inf" and control.encode_gain(-3.0) == -3.0
    trace = parse({"command": "load_trace", "ue": "ue1", "times_s": [0, 1], "gains_db": [0, "-inf"], "loop": False})
    assert trace == control.LoadTrace("ue1", Schedule((0.0, 1.0), (0.0, -math.inf), loop=False))


@pytest.mark.parametrize(
    ("request_bytes", "message"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "a JSON object"),
        (b'{"command": "reboot"}', "unknown command 'reboot'; commands: status, set_gain, load_trace"),
        (b'{"command": "status", "verbose": true}', "status: unknown fields verbose"),
        (b'{"command": "set_gain", "ue": "ue1"}', "set_gain: missing gain_db"),
        (b'{"command": "set_gain", "ue": "ue9", "gain_db": 0}', "no UE 'ue9'; the bridge has ue1, ue2"),
        (b'{"command": "set_gain", "ue": "ue1", "gain_db": "loud"}', "gain_db must be a number in dB"),
        (b'{"command": "set_gain", "ue": "ue1", "gain_db": true}', "gain_db must be a number in dB"),
        (b'{"command": "set_gain", "ue": "ue1", "gain_db": Infinity}', "gain_db must be a number in dB"),
        (b'{"command": "set_gain", "ue": "ue1", "gain_db": NaN}', "gain_db must be a number in dB"),
        (b'{"command": "load_trace", "ue": "ue1", "times_s": 5, "gains_db": [0]}', "times_s and gains_db are lists"),
        (b'{"command": "load_trace", "ue": "ue1", "times_s": ["0"], "gains_db": [0]}', "times_s must hold numbers"),
        (b'{"command": "load_trace", "ue": "ue1", "times_s": [0, 1], "gains_db": [0, "x"]}', "gains_db[1] must be"),
        (b'{"command": "load_trace", "ue": "ue1", "times_s": [0, 2, 1], "gains_db": [0, 0, 0]}', "does not follow"),
    ],
)
def test_bad_requests_are_refused_with_a_reason(request_bytes, message):
    with pytest.raises(control.ControlError) as raised:
        control.parse(request_bytes, UES)
    assert message in str(raised.value)


def test_replies_are_strict_json():
    assert json.loads(control.reply(ue="ue1", at_sample=5)) == {"ok": True, "ue": "ue1", "at_sample": 5}
    assert json.loads(control.failure("no UE 'x'")) == {"ok": False, "error": "no UE 'x'"}
    with pytest.raises(ValueError):
        control.reply(gain_db=-math.inf)
