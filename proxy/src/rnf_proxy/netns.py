"""Network namespaces for a proxy that lives in one process and relays in another namespace.

A socket belongs to the namespace it was created in, for its whole life. So the proxy can run in the
caller's process (the experiment runner, a test), create its relay sockets inside the cell's core namespace,
and still reach a telemetry publisher on the caller's own loopback. `inside(name)` switches the calling
thread into a namespace for the duration of a `with` block (setns(2) is per thread) and back afterwards.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from rnf_foundation.errors import UserError

CLONE_NEWNET = 0x40000000
NETNS_DIR = Path("/run/netns")
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"setns: {os.strerror(error)}")


@contextmanager
def inside(name: str | None) -> Iterator[None]:
    """Run the block in network namespace `name` (None: stay where we are)."""
    if name is None:
        yield
        return
    path = NETNS_DIR / name
    try:
        target = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UserError(f"network namespace {name!r} does not exist (no {path})") from None
    original = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(original)
    finally:
        os.close(target)
        os.close(original)


def command(name: str | None, argv: Sequence[str]) -> list[str]:
    """`argv` run inside namespace `name`."""
    return list(argv) if name is None else ["ip", "netns", "exec", name, *argv]


def run(
    name: str | None, argv: Sequence[str], check: bool = True, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a command inside a namespace; a failure becomes a UserError naming the command."""
    full = command(name, argv)
    try:
        result = subprocess.run(full, input=stdin, capture_output=True, text=True)
    except FileNotFoundError:
        raise UserError(f"`{full[0]}` is not installed; run `make setup` (as root)") from None
    if check and result.returncode != 0:
        raise UserError(f"`{' '.join(full)}` failed: {result.stderr.strip() or result.returncode}")
    return result
