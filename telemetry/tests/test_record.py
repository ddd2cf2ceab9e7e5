"""Line protocol formatting and the file recorder."""

import math

from rnf_telemetry.message import TelemetryMessage
from rnf_telemetry.record import FileRecorder, line, telemetry_fields


def test_line_protocol_escapes_and_types():
    text = line("cell ue", {"run": "a b", "ue": "1", "empty": ""}, {"q": 5, "r": 1.5, "ok": True, "s": 'x"y'}, 12)
    assert text == 'cell\\ ue,run=a\\ b,ue=1 q=5i,r=1.5,ok=true,s="x\\"y" 12'


def test_nan_fields_are_left_out_and_a_point_without_fields_is_skipped():
    assert line("m", {}, {"a": math.nan, "b": 1}, 1) == "m b=1i 1"
    assert line("m", {}, {"a": math.nan}, 1) is None


def test_the_idle_ttis_are_recorded_where_counted_and_left_out_where_not():
    period = {"cell_id": 1, "rnti": 0x46, "lcid": 3, "timestamp_ns": 0, "tti": 0, "seq": 0, "period_us": 10_000}
    counted = telemetry_fields(TelemetryMessage(**period, dl_idle_ttis=3, dl_idle_capacity_bytes=4_500))
    assert (counted["idle_ttis"], counted["idle_capacity_bytes"]) == (3, 4_500)
    never_idle = telemetry_fields(TelemetryMessage(**period, dl_idle_ttis=0))
    assert (never_idle["idle_ttis"], never_idle["idle_capacity_bytes"]) == (0, 0)
    # a publisher before contract 1.3: no field, rather than its 0xFFFFFFFF
    assert "idle_ttis" not in telemetry_fields(TelemetryMessage(**period))
    assert "idle_capacity_bytes" not in telemetry_fields(TelemetryMessage(**period))


def test_file_recorder_adds_base_tags(tmp_path):
    recorder = FileRecorder(tmp_path / "series.lp", base_tags={"run": "r1"})
    recorder.record("telemetry", {"ue": "0"}, {"q": 10}, 5)
    recorder.close()
    assert (tmp_path / "series.lp").read_text() == "telemetry,run=r1,ue=0 q=10i 5\n"
