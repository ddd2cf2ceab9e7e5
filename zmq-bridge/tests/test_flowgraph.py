import dataclasses
import json
import math
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import zmq
from conftest import ANY_PORT, indices, plan_for
from rnf_bridge import client, launch
from rnf_bridge.flowgraph import Bridge, ControlServer, SocketError
from rnf_bridge.plan import Fading, UePlan
from rnf_bridge.schedule import Schedule, db_to_amplitude

BLOCK, SUBFRAMES = 1000, 200
TOTAL = BLOCK * SUBFRAMES


def constant(value: complex):
    return lambda start, count: np.full(count, value, dtype=np.complex64)


@pytest.fixture
def running():
    """Start bridges, and stop every one at the end of the test."""
    started: list[Bridge] = []

    def start(bridge: Bridge) -> Bridge:
        bridge.start()
        started.append(bridge)
        return bridge

    yield start
    for bridge in started:
        bridge.stop()
        bridge.wait()


@pytest.fixture
def two_ues_moved(make_radios, running):
    """Two UEs at 0 and -20 dB exchange 200 subframes with srsenb through the bridge."""
    radios = make_radios(ues=2, block=BLOCK, subframes=SUBFRAMES)
    bridge = running(Bridge(plan_for(radios, [Schedule.constant(0.0), Schedule.constant(-20.0)])))
    radios.start(bridge.enb_rx_endpoint, bridge.ue_rx_endpoints)
    radios.join()
    return radios, bridge


def test_the_downlink_reaches_every_ue_with_its_own_gain_and_no_sample_lost_or_repeated(two_ues_moved):
    radios, _ = two_ues_moved
    for ue, amplitude in zip(radios.ues, (1.0, 0.1), strict=True):
        assert ue.received_count == TOTAL
        np.testing.assert_array_equal(indices(ue.received.real, amplitude), np.arange(TOTAL))
        np.testing.assert_allclose(ue.received.real, np.arange(TOTAL) * amplitude, rtol=1e-6)
        assert not ue.received.imag.any()


def test_the_uplink_is_the_sum_of_the_ues_each_with_its_own_gain(two_ues_moved):
    radios, _ = two_ues_moved
    received = radios.enb.received
    assert radios.enb.received_count == TOTAL
    np.testing.assert_array_equal(indices(received.real, 1.0), np.arange(TOTAL))  # ue1 at 0 dB
    np.testing.assert_array_equal(indices(received.imag, 0.1), np.arange(TOTAL))  # ue2 at -20 dB
    np.testing.assert_allclose(received.imag, np.arange(TOTAL) * 0.1, rtol=1e-6)


def test_status_counts_every_sample_in_both_directions(two_ues_moved):
    _, bridge = two_ues_moved
    status = bridge.status()
    assert [ue["name"] for ue in status["ues"]] == ["ue1", "ue2"]
    assert [ue["gain_db"] for ue in status["ues"]] == [0.0, -20.0]
    for ue in status["ues"]:
        assert ue["downlink_samples"] == TOTAL and ue["uplink_samples"] == TOTAL
    assert status["stream_time_s"] == pytest.approx(TOTAL / 1e6)


def test_radios_that_start_before_the_bridge_are_served_from_their_first_sample(make_radios, running):
    radios = make_radios(ues=2, block=BLOCK, subframes=50)
    bridge = Bridge(plan_for(radios, [Schedule.constant(-6.0), Schedule.constant(0.0)]))
    radios.start(bridge.enb_rx_endpoint, bridge.ue_rx_endpoints)
    time.sleep(0.3)  # every radio is waiting on its sockets
    running(bridge)
    radios.join()
    np.testing.assert_array_equal(indices(radios.ues[0].received.real, db_to_amplitude(-6.0)), np.arange(50 * BLOCK))
    np.testing.assert_array_equal(indices(radios.enb.received.imag, 1.0), np.arange(50 * BLOCK))


STEERED = 1000  # subframes, one per millisecond


def steer(make_radios, running, context, command):
    """srsenb in real time for 1 s; `command` goes to the control socket 0.15 s in. Returns radios and reply."""
    radios = make_radios(ues=2, block=BLOCK, subframes=STEERED, period_s=1e-3)
    bridge = running(Bridge(plan_for(radios, [Schedule.constant(0.0), Schedule.constant(-20.0)])))
    server = ControlServer(bridge, ANY_PORT, context)
    server.start()
    try:
        radios.start(bridge.enb_rx_endpoint, bridge.ue_rx_endpoints)
        time.sleep(0.15)
        reply = client.request(server.endpoint, command)
        radios.join()
    finally:
        server.close()
    return radios, reply


def test_set_gain_switches_both_directions_at_the_sample_it_reports(make_radios, running, context):
    radios, reply = steer(make_radios, running, context, {"command": "set_gain", "ue": "ue1", "gain_db": -10})
    at = reply["at_sample"]
    assert reply["ue"] == "ue1" and reply["gain_db"] == -10 and 0 < at < STEERED * BLOCK
    amplitude = np.where(np.arange(STEERED * BLOCK) < at, 1.0, db_to_amplitude(-10.0))
    ue1, ue2, enb = radios.ues[0].received, radios.ues[1].received, radios.enb.received
    np.testing.assert_allclose(ue1.real, np.arange(STEERED * BLOCK) * amplitude, rtol=1e-6)
    np.testing.assert_allclose(enb.real, np.arange(STEERED * BLOCK) * amplitude, rtol=1e-6)
    np.testing.assert_allclose(ue2.real, np.arange(STEERED * BLOCK) * 0.1, rtol=1e-6)  # the other UE: untouched
    np.testing.assert_allclose(enb.imag, np.arange(STEERED * BLOCK) * 0.1, rtol=1e-6)


def test_load_trace_plays_the_trace_from_the_sample_it_reports(make_radios, running, context):
    command = {"command": "load_trace", "ue": "ue2", "times_s": [0, 0.05, 0.1], "gains_db": [-6, "-inf", 0]}
    radios, reply = steer(make_radios, running, context, {**command, "loop": False})
    at = reply["at_sample"]
    assert reply["rows"] == 3 and at + 100_000 < STEERED * BLOCK
    index = np.arange(STEERED * BLOCK)
    trace_db = np.select([index < at, index < at + 50_000, index < at + 100_000], [-20.0, -6.0, -math.inf], 0.0)
    amplitude = np.where(np.isinf(trace_db), 0.0, 10.0 ** (trace_db / 20.0))
    np.testing.assert_allclose(radios.ues[1].received.real, index * amplitude, rtol=1e-6)
    np.testing.assert_allclose(radios.enb.received.imag, index * amplitude, rtol=1e-6)


def test_the_control_socket_refuses_what_it_cannot_do(make_radios, running, context):
    radios = make_radios(ues=1)
    bridge = Bridge(plan_for(radios, [Schedule.constant(0.0)]))
    server = ControlServer(bridge, ANY_PORT, context)
    server.start()
    try:
        with pytest.raises(client.ControlFailed, match="the bridge refused: no UE 'ue7'; the bridge has ue1"):
            client.request(server.endpoint, {"command": "set_gain", "ue": "ue7", "gain_db": 0})
        with pytest.raises(client.ControlFailed, match="less than one sample"):
            client.request(
                server.endpoint, {"command": "load_trace", "ue": "ue1", "times_s": [0, 1e-9], "gains_db": [0, 0]}
            )
        assert client.request(server.endpoint, {"command": "status"})["ues"][0]["gain_db"] == 0.0
    finally:
        server.close()


def test_noise_at_a_ue_has_the_configured_power(make_radios, running):
    radios = make_radios(ues=1, block=BLOCK, subframes=SUBFRAMES, enb_waveform=constant(0))
    plan = plan_for(radios, [Schedule.constant(0.0)])
    noisy = UePlan("ue1", radios.ues[0].tx_endpoint, ANY_PORT, Schedule.constant(0.0), noise_dbfs=-30.0)
    bridge = running(Bridge(dataclasses.replace(plan, ues=(noisy,))))
    radios.start(bridge.enb_rx_endpoint, bridge.ue_rx_endpoints)
    radios.join()
    received = radios.ues[0].received
    assert radios.ues[0].received_count == TOTAL
    assert np.mean(np.abs(received) ** 2) == pytest.approx(1e-3, rel=0.03)
    np.testing.assert_array_equal(indices(radios.enb.received.real, 1.0), np.arange(TOTAL))  # no noise at the eNB


def test_rayleigh_fading_varies_the_gain_around_unit_mean_power(make_radios, running):
    radios = make_radios(ues=1, block=BLOCK, subframes=SUBFRAMES, enb_waveform=constant(1))
    plan = plan_for(radios, [Schedule.constant(0.0)])
    faded = UePlan("ue1", radios.ues[0].tx_endpoint, ANY_PORT, Schedule.constant(0.0), fading=Fading("rayleigh", 200.0))
    bridge = running(Bridge(dataclasses.replace(plan, ues=(faded,))))
    radios.start(bridge.enb_rx_endpoint, bridge.ue_rx_endpoints)
    radios.join()
    envelope = np.abs(radios.ues[0].received)
    assert radios.ues[0].received_count == TOTAL
    assert 0.5 < np.mean(envelope**2) < 1.5 and np.std(envelope) > 0.2


def run_process(plan, tmp_path: Path):
    ready = tmp_path / "ready.json"
    return launch.flowgraph_process(plan, ready, stderr=subprocess.PIPE, text=True), ready


def wait_for(path: Path, process) -> dict:
    deadline = time.monotonic() + 20
    while not path.exists():
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "the bridge did not come up"
        time.sleep(0.05)
    return json.loads(path.read_text())


def test_the_bridge_process_exits_cleanly_when_a_peer_goes_away(make_radios, tmp_path):
    radios = make_radios(ues=2, block=BLOCK, subframes=100)
    plan = plan_for(radios, [Schedule.constant(0.0), Schedule.constant(-3.0)], peer_timeout_s=0.5)
    started, ready_file = run_process(plan, tmp_path)
    with started as process:
        ready = wait_for(ready_file, process)
        radios.start(ready["enb_rx"], {name: ue["rx"] for name, ue in ready["ues"].items()})
        radios.join()
        radios.close()  # srsenb and both UEs go away
        assert process.wait(timeout=20) == 0
        log = process.stderr.read()
    assert "has probably gone away" in log
    assert "samples moved: ue1 100000 down / 100000 up, ue2 100000 down / 100000 up" in log


def test_a_busy_port_stops_the_bridge_with_the_endpoint_and_the_reason(make_radios, context, tmp_path):
    taken = context.socket(zmq.REP)
    taken.bind(ANY_PORT)
    endpoint = taken.getsockopt_string(zmq.LAST_ENDPOINT)
    radios = make_radios(ues=1)
    plan = plan_for(radios, [Schedule.constant(0.0)])
    started, _ = run_process(dataclasses.replace(plan, control=endpoint), tmp_path)
    with started as process:
        assert process.wait(timeout=20) == 2
        assert f"cannot bind the control socket {endpoint}: Address already in use" in process.stderr.read()
    taken.close()


def test_a_busy_rx_port_is_named_before_anything_starts(make_radios, context):
    taken = context.socket(zmq.REP)
    taken.bind(ANY_PORT)
    endpoint = taken.getsockopt_string(zmq.LAST_ENDPOINT)
    radios = make_radios(ues=1)
    plan = dataclasses.replace(plan_for(radios, [Schedule.constant(0.0)]), enb_rx=endpoint)
    with pytest.raises(SocketError, match=f"cannot bind {endpoint}: Address already in use"):
        Bridge(plan)
    taken.close()
