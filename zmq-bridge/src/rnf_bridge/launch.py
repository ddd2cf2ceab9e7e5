"""Starting the flowgraph under Debian's `/usr/bin/python3`, which has GNU Radio's bindings, from any interpreter.

The venv cannot import GNU Radio (it does not see the system site-packages, and its numpy is not the one GNU
Radio was built against), and the system interpreter cannot import the venv's packages. The flowgraph's modules
need neither: only GNU Radio, pyzmq, numpy and the standard library. So the launcher gives the system interpreter
this package alone: a temporary folder holding a link to it goes on `PYTHONPATH`, and nothing else does.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rnf_bridge.plan import Plan

SYSTEM_PYTHON = "/usr/bin/python3"
PACKAGE = Path(__file__).resolve().parent


def missing_system_modules() -> str | None:
    """None if the system interpreter can run the flowgraph, else what it lacks and how to get it."""
    probe = "import gnuradio.zeromq, gnuradio.channels, gnuradio.analog, zmq, numpy"
    try:
        result = subprocess.run([SYSTEM_PYTHON, "-c", probe], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return f"{SYSTEM_PYTHON} not found: the bridge runs under Debian's python3 with the gnuradio package"
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return f"{SYSTEM_PYTHON} cannot import GNU Radio ({last}): apt-get install gnuradio python3-zmq (make setup)"
    return None


@contextmanager
def flowgraph_process(
    plan: Plan, ready_file: Path | None = None, namespace: str | None = None, **popen: Any
) -> Iterator[subprocess.Popen[Any]]:
    """The flowgraph running `plan` in a child process (in network namespace `namespace`, where the radios' sockets
    are), which stops when this process dies; terminated on exit."""
    with tempfile.TemporaryDirectory(prefix="rnf-bridge-") as folder:
        root = Path(folder)
        (root / "rnf_bridge").symlink_to(PACKAGE, target_is_directory=True)
        plan_file = root / "plan.json"
        plan_file.write_text(plan.to_json(), encoding="utf-8")
        command = [SYSTEM_PYTHON, "-m", "rnf_bridge.flowgraph", str(plan_file), "--parent", str(os.getpid())]
        if ready_file is not None:
            command += ["--ready-file", str(ready_file)]
        if namespace is not None:  # `ip netns exec` execs the command, so the pid stays the flowgraph's
            command = ["ip", "netns", "exec", namespace, *command]
        environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        environment["PYTHONPATH"] = folder
        process = subprocess.Popen(command, env=environment, **popen)
        try:
            yield process
        finally:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
