"""The proxy's native library, `librnf_relay.so` (`proxy/relay/`, Rust, `INTERFACE.md` there): the relay
engine that moves the bytes (`relay.py`) and the RAN-feedback laws stepped over the banks' columns
(`feedback.py`). `make setup` builds it; `$RNF_RELAY_LIB` overrides where it is looked for."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from rnf_foundation.errors import UserError

LIBRARY_NAME = "librnf_relay.so"


def library_path() -> Path:
    """$RNF_RELAY_LIB, or the repository's release build."""
    override = os.environ.get("RNF_RELAY_LIB")
    path = Path(override) if override else Path(__file__).resolve().parents[2] / "relay/target/release" / LIBRARY_NAME
    if not path.is_file():
        raise UserError(f"the proxy's native library {path} is not built; run `make setup` (as root)")
    return path


def load(kind: type[ctypes.CDLL]) -> ctypes.CDLL:
    """The library as a `ctypes.CDLL` (calls release the interpreter lock) or `ctypes.PyDLL` (they keep it)."""
    return kind(str(library_path()), use_errno=True)
