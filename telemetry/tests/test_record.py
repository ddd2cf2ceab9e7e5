"""Line protocol formatting and the file recorder."""

import math

from rnf_telemetry.record import FileRecorder, line


def test_line_protocol_escapes_and_types():
    text = line("cell ue", {"run": "a b", "ue": "1", "empty": ""}, {"q": 5, "r": 1.5, "ok": True, "s": 'x"y'}, 12)
    assert text == 'cell\\ ue,run=a\\ b,ue=1 q=5i,r=1.5,ok=true,s="x\\"y" 12'


def test_nan_fields_are_left_out_and_a_point_without_fields_is_skipped():
    assert line("m", {}, {"a": math.nan, "b": 1}, 1) == "m b=1i 1"
    assert line("m", {}, {"a": math.nan}, 1) is None


def test_file_recorder_adds_base_tags(tmp_path):
    recorder = FileRecorder(tmp_path / "series.lp", base_tags={"run": "r1"})
    recorder.record("telemetry", {"ue": "0"}, {"q": 10}, 5)
    recorder.close()
    assert (tmp_path / "series.lp").read_text() == "telemetry,run=r1,ue=0 q=10i 5\n"
