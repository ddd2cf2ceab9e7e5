"""`rnf telemetry listen`: bad input is one line and exit 2 with nothing written; SIGTERM flushes the recording."""

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace

import pytest
from rnf_cli.main import main
from rnf_telemetry.transport import Publisher
from rnf_telemetry.vectors import VALID


def rnf(capsys, *args: str) -> tuple[int, list[str]]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    return exit_info.value.code, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize(
    ("endpoint", "reason"),
    [
        ("tcp://127.0.0.1:99999", "port 99999 is above 65535"),
        ("tcp://127.0.0.1:-1", "is not a number 0-65535"),
        ("-1", "is not a ZeroMQ endpoint"),
        ("foo://bar", "is not a ZeroMQ endpoint"),
        ("", "is not a ZeroMQ endpoint"),
        ("garbage", "is not a ZeroMQ endpoint"),
        ("tcp://127.0.0.1", "needs HOST:PORT"),
        ("tcp://127.0.0.1:", "is not a number 0-65535"),
        ("tcp://127.0.0.1:0", "connecting needs the host and port"),
        ("tcp://*:5555", "connecting needs the host and port"),
        ("ipc://", "no address after ipc://"),
    ],
)
def test_a_bad_endpoint_is_one_line_naming_it(capsys, tmp_path, endpoint, reason):
    record = tmp_path / "t.lp"
    code, lines = rnf(capsys, "telemetry", "listen", "--record", str(record), "--", endpoint)
    assert code == 2
    assert len(lines) == 1 and f"{endpoint!r}" in lines[0] and reason in lines[0]
    assert not record.exists()


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--record", "{tmp}/missing/t.lp"], "--record {tmp}/missing/t.lp: No such file or directory"),
        (["--record", "{tmp}"], "is a directory"),
        (["--cell", "-1"], "'--cell': -1"),
        (["--cell", "1", "--rnti", "0x123456"], "--rnti 0x123456: an RNTI is 16 bits"),
        (["--cell", "1", "--rnti", "x"], "--rnti 'x' is not a number"),
        (["--rnti", "0x46"], "filtering by RNTI needs a cell id"),
        (["--count", "0"], "'--count': 0"),
    ],
)
def test_bad_options_are_one_line_naming_them(capsys, tmp_path, args, names):
    code, lines = rnf(capsys, "telemetry", "listen", *(a.format(tmp=tmp_path) for a in args))
    assert code == 2
    assert len(lines) == 1 and names.format(tmp=tmp_path) in lines[0]
    assert list(tmp_path.iterdir()) == []


def _publish(publisher: Publisher, stop: threading.Event) -> None:
    seq = 1
    while not stop.is_set():
        publisher.send(replace(VALID["basic"], seq=seq))
        seq += 1
        time.sleep(0.01)


def _lines(stream, into: queue.Queue) -> None:
    for text in stream:
        into.put(text)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_flushes_the_recording_and_prints_the_summary(tmp_path, signum):
    publisher = Publisher("tcp://127.0.0.1:0")
    stop = threading.Event()
    sender = threading.Thread(target=_publish, args=(publisher, stop))
    record = tmp_path / "telemetry.lp"
    listener = subprocess.Popen(
        [sys.executable, "-m", "rnf_cli", "telemetry", "listen", publisher.endpoint, "--record", str(record)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"COLUMNS": "400"},
    )
    printed: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(listener.stdout, printed), daemon=True).start()
    sender.start()
    try:
        seen = [printed.get(timeout=20) for _ in range(20)]
    finally:
        stop.set()
        sender.join()
    time.sleep(0.3)  # what is still in flight arrives; the count below includes it
    listener.send_signal(signum)
    assert listener.wait(timeout=10) == 0
    publisher.close()
    while not printed.empty():
        seen.append(printed.get())
    messages = [text for text in seen if " seq=" in text]
    assert len(messages) >= 20
    assert seen[-1].startswith(f"received: {len(messages)}; dropped: none; lost in transit: ")
    recorded = record.read_text().splitlines()
    assert len(recorded) == len(messages)
    assert all(text.startswith("telemetry,cell=") for text in recorded)
    assert "Traceback" not in listener.stderr.read()
