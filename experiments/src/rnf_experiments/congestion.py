"""TCP congestion controls for end-to-end arms: the kernel's own, and DCTCP (RFC 8257) where the kernel has no
`tcp_dctcp`, as a BPF struct_ops program (`experiments/bpf/rnf_dctcp.bpf.c`, built by `make setup`).

DCTCP is the scalable sender that L4S-style marking is designed for: it cuts its window by half the share of
marked segments, once per round trip, where a classic sender cuts by a fixed 30-50 %. Its receiver echoes CE per
segment only if it runs DCTCP too (`needs_receiver`), so both ends set it on their socket, after the handshake: a
SYN sent by a socket that runs DCTCP is ECN-capable itself, and a listener that does not run it then refuses ECN
(Linux's `tcp_ecn_create_request`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from rnf_foundation.errors import UserError

AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
DCTCP_OBJECT = Path(__file__).resolve().parents[2] / "bpf" / "build" / "rnf_dctcp.bpf.o"
BPF_DCTCP = "rnf_dctcp"  # the name the program registers (its struct tcp_congestion_ops)


def available() -> set[str]:
    """The congestion controls the kernel offers now (it is one list for every network namespace)."""
    return set(AVAILABLE.read_text().split())


def kernel_name(cc: str) -> str:
    """The name the kernel knows the arm's `cc` by; for `dctcp` without the kernel's module, the BPF program's,
    registered first if it is not yet (`make setup` unregisters an earlier build when it builds a new one)."""
    if cc != "dctcp":
        return cc
    names = available()
    if "dctcp" in names:
        return "dctcp"
    if BPF_DCTCP not in names:
        _register()
    return BPF_DCTCP


def needs_receiver(kernel_cc: str) -> bool:
    """Whether the receiving socket must run the same congestion control (DCTCP's per-segment CE echo)."""
    return kernel_cc in ("dctcp", BPF_DCTCP)


def _register() -> None:
    if not DCTCP_OBJECT.exists():
        raise UserError(
            f"{DCTCP_OBJECT}: missing, so cc = 'dctcp' is not available: the kernel has no tcp_dctcp, and "
            "`make setup` builds this BPF program only where the kernel exports its BTF (/sys/kernel/btf/vmlinux)"
        )
    try:
        result = subprocess.run(
            ["bpftool", "struct_ops", "register", str(DCTCP_OBJECT)], capture_output=True, text=True, check=False
        )
    except FileNotFoundError as error:
        raise UserError("bpftool: not found; `make setup` installs it (cc = 'dctcp' needs it)") from error
    # another run may have registered it meanwhile: then the name is there and all is well
    if result.returncode != 0 and BPF_DCTCP not in available():
        raise UserError(f"{DCTCP_OBJECT}: bpftool struct_ops register failed: {result.stderr.strip()}")
