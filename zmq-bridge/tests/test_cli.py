"""`rnf bridge` as a user runs it: the venv's CLI starts the flowgraph under /usr/bin/python3 and steers it."""

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import zmq
from conftest import indices

RATE = 1.92e6
BLOCK = 480  # per 1 ms: a quarter of real time at 1.92e6, plenty for a test on a shared machine


def write_config(folder: Path, radios) -> Path:
    """The radios' bridge, bound on free ports; ue1 at 0 dB, ue2 at -20 dB."""
    ues = "".join(
        f'\n[[ues]]\ntx = "{ue.tx_endpoint}"\nrx = "tcp://127.0.0.1:0"\ngain_db = {gain}\n'
        for ue, gain in zip(radios.ues, (0, -20), strict=False)
    )
    path = folder / "bridge.toml"
    path.write_text(
        f'sample_rate = {RATE}\ncontrol = "tcp://127.0.0.1:0"\npeer_timeout_s = 1.0\n\n'
        f'[enb]\ntx = "{radios.enb.tx_endpoint}"\nrx = "tcp://127.0.0.1:0"\n{ues}'
    )
    return path


def rnf_bridge(rnf: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([rnf, "bridge", *map(str, arguments)], capture_output=True, text=True, timeout=60)


def wait_until(condition, what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_run_then_status_set_gain_and_load_trace_steer_the_running_bridge(rnf, make_radios, tmp_path):
    radios = make_radios(ues=2, block=BLOCK, subframes=10_000, period_s=1e-3)
    ready_file = tmp_path / "ready.json"
    (tmp_path / "dip.csv").write_text("time_s,gain_db\n0,-6\n0.05,-inf\n0.1,0\n")
    bridge = subprocess.Popen(
        [rnf, "bridge", "run", write_config(tmp_path, radios), "--ready-file", ready_file],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(ready_file.exists, "the bridge's ready file")
        ready = json.loads(ready_file.read_text())
        control = ready["control"]
        radios.start(ready["enb_rx"], {name: ue["rx"] for name, ue in ready["ues"].items()})

        status = rnf_bridge(rnf, "status", "--control", control)
        assert status.returncode == 0, status.stderr
        assert "bridge at 1.92 Msample/s" in status.stdout and "ue2" in status.stdout
        as_json = json.loads(rnf_bridge(rnf, "status", "--json", "--control", control).stdout)
        assert [ue["gain_db"] for ue in as_json["ues"]] == [0.0, -20.0]

        set_gain = rnf_bridge(rnf, "set-gain", "ue1", "-10", "--control", control)
        assert set_gain.returncode == 0, set_gain.stderr
        gain_at = int(re.fullmatch(r"ue1: gain -10.0 dB from sample (\d+)\n", set_gain.stdout)[1])

        load = rnf_bridge(rnf, "load-trace", "ue2", tmp_path / "dip.csv", "--once", "--control", control)
        assert load.returncode == 0, load.stderr
        trace_at = int(re.fullmatch(r"ue2: trace of 3 rows from sample (\d+)\n", load.stdout)[1])

        wait_until(lambda: radios.enb.received_count > max(gain_at, trace_at) + 0.15 * RATE, "samples past the trace")
        radios.close()  # srsenb and the UEs go away: the bridge stops by itself
        assert bridge.wait(timeout=20) == 0
        log = bridge.stderr.read()
    finally:
        if bridge.poll() is None:
            bridge.kill()
    assert "has probably gone away" in log

    count = radios.enb.received_count
    index = np.arange(count)
    ue1_amplitude = np.where(index < gain_at, 1.0, 10 ** (-10 / 20))
    trace_db = np.select(
        [index < trace_at, index < trace_at + 0.05 * RATE, index < trace_at + 0.1 * RATE], [-20.0, -6.0, -np.inf], 0.0
    )
    ue2_amplitude = np.where(np.isinf(trace_db), 0.0, 10 ** (trace_db / 20))
    np.testing.assert_allclose(radios.enb.received[:count].real, index * ue1_amplitude, rtol=1e-6)
    np.testing.assert_allclose(radios.enb.received[:count].imag, index * ue2_amplitude, rtol=1e-6)
    ue1 = radios.ues[0].received[: radios.ues[0].received_count]
    np.testing.assert_array_equal(indices(ue1.real, ue1_amplitude[: len(ue1)]), np.arange(len(ue1)))


def test_a_refused_request_is_one_line_with_the_reason(rnf, make_radios, tmp_path):
    radios = make_radios(ues=2)
    ready_file = tmp_path / "ready.json"
    bridge = subprocess.Popen([rnf, "bridge", "run", write_config(tmp_path, radios), "--ready-file", ready_file])
    try:
        wait_until(ready_file.exists, "the bridge's ready file")
        control = json.loads(ready_file.read_text())["control"]
        result = rnf_bridge(rnf, "set-gain", "ue9", "-3", "--control", control)
        assert result.returncode == 2
        assert result.stderr == "Error: the bridge refused: no UE 'ue9'; the bridge has ue1, ue2\n"
        result = rnf_bridge(rnf, "set-gain", "ue1", "loud", "--control", control)
        assert result.returncode == 2 and "DB must be a gain in dB or -inf, got 'loud'" in result.stderr
        bridge.terminate()
        assert bridge.wait(timeout=20) == 0
    finally:
        if bridge.poll() is None:
            bridge.kill()


def test_a_bridge_that_is_not_there_is_reported(rnf, context):
    silent = context.socket(zmq.REP)  # binds, never answers
    silent.bind("tcp://127.0.0.1:0")
    endpoint = silent.getsockopt_string(zmq.LAST_ENDPOINT)
    result = rnf_bridge(rnf, "status", "--control", endpoint)
    assert result.returncode == 2
    assert f"no answer from the bridge at {endpoint} within 3 s: is it running?" in result.stderr
    silent.close()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_run_stops_cleanly_on_sigterm_and_sigint_and_takes_the_flowgraph_with_it(rnf, make_radios, tmp_path, signum):
    radios = make_radios(ues=1)
    ready_file = tmp_path / "ready.json"
    bridge = subprocess.Popen(
        [rnf, "bridge", "run", write_config(tmp_path, radios), "--ready-file", ready_file],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(ready_file.exists, "the bridge's ready file")
        child = json.loads(ready_file.read_text())["pid"]
        bridge.send_signal(signum)
        assert bridge.wait(timeout=20) == 0
        assert "stopping: stopped by signal" in bridge.stderr.read()
        assert not Path(f"/proc/{child}").exists()
    finally:
        if bridge.poll() is None:
            bridge.kill()
