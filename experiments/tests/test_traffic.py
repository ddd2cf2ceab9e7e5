"""The traffic generators over real loopback TCP: what each kind measures at its receiver, and the arm's end."""

import json
import socket
import subprocess
import sys
import time

import pytest
from rnf_experiments.traffic import Deadline, Request, fetch, fetch_page, upload


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "rnf_experiments.traffic", "server", "--port", str(port), "--host", "127.0.0.1"],
        stdout=subprocess.PIPE,
    )
    assert process.stdout.readline().strip() == b"ready"
    yield port
    process.kill()
    process.wait()


def _quiet(time_ns, received):
    pass


def test_a_download_of_n_bytes_is_measured_at_the_ue(server):
    result = fetch("d", 1, "127.0.0.1", server, Request(3_000_000, 0.0, "reno"), Deadline(10), _quiet)
    assert result.complete and not result.error
    assert result.received_bytes == 3_000_000
    assert result.start_ns < result.connected_ns <= result.first_byte_ns <= result.last_byte_ns
    assert result.progress[-1] == (result.progress[-1][0], 3_000_000)


def test_an_upload_is_measured_by_the_server_and_reported_back(server):
    result = upload("u", 2, "127.0.0.1", server, Request(2_000_000, 0.0, "cubic", "up"), Deadline(10), _quiet)
    assert result.complete and not result.error and result.kind == "upload" and result.ue == 2
    assert result.received_bytes == 2_000_000  # the server's count, not what the client wrote
    assert result.connected_ns <= result.first_byte_ns <= result.last_byte_ns


def test_a_web_page_is_one_transfer_of_all_its_objects(server):
    objects = [51_500, 200_000, 368_500]
    result = fetch_page("w", 1, "127.0.0.1", server, objects, 2, "cubic", Deadline(10), _quiet)
    assert result.complete and result.objects == 3 and result.received_bytes == sum(objects)
    assert result.ttsu_s > 0


def test_a_backlogged_download_stops_at_the_arm_end_as_complete(server):
    started = time.monotonic()
    result = fetch("b", 1, "127.0.0.1", server, Request(0, 30.0, "cubic"), Deadline(0.5), _quiet)
    assert time.monotonic() - started < 2
    assert result.complete and not result.error and result.received_bytes > 0
    assert result.start_ns < result.connected_ns < result.first_byte_ns


def test_a_fixed_transfer_cut_by_the_arm_end_is_incomplete(server):
    # a server that accepts and never answers: the download cannot finish before the deadline
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        result = fetch("s", 1, "127.0.0.1", port, Request(1000, 0.0, "cubic"), Deadline(0.3), _quiet)
    assert not result.complete
    assert "arm ended" in result.error or "timed out" in result.error


def test_the_client_writes_its_result_file(server, tmp_path):
    out = tmp_path / "flow.json"
    subprocess.run(
        [sys.executable, "-m", "rnf_experiments.traffic", "client", "bulk", "--server", "127.0.0.1",
         "--port", str(server), "--bytes", "100000", "--ue", "3", "--name", "x", "--until", "10", "--out", str(out)],
        check=True, capture_output=True,
    )  # fmt: skip
    written = json.loads(out.read_text())
    assert written["ue"] == 3 and written["received_bytes"] == 100_000 and written["complete"]
