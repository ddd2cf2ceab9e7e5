"""Fake srsRAN ZeroMQ radios for the tests and the benchmark: REQ/REP peers that move known samples in lock-step.

Like srsRAN 4G's ZeroMQ radio (lib/src/phy/rf/rf_zmq_imp_tx.c and rf_zmq_imp_rx.c), a radio binds a REP socket
on its tx port and answers each request, whatever the request holds, with one block of the complex64 samples it
transmits; and a receiver thread connects a REQ socket to its rx port, asks with 1-byte requests and keeps
whatever each reply holds. The radio transmits `lead` blocks ahead of what it has received, then one block per
block received: srsRAN pads its transmission up to the end of the block it is about to read (a lead of one
block), and srsenb transmits each subframe 4 ms after the one it received (FDD HARQ timing).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import zmq

Samples = npt.NDArray[np.complex64]
Waveform = Callable[[int, int], Samples]  # (index of the first sample, count) -> samples
POLL_MS = 50


def ramp(scale: complex = 1) -> Waveform:
    """Sample i is i * scale, so the receiver sees any dropped, repeated or reordered sample, and the gain.

    complex64 holds whole numbers exactly up to 2**24: keep streams shorter than that for exact checks.
    """

    def waveform(start: int, count: int) -> Samples:
        return (np.arange(start, start + count, dtype=np.float64) * scale).astype(np.complex64)

    return waveform


def noise_block(count: int, power_dbfs: float, seed: int) -> Waveform:
    """The same block of complex Gaussian noise every time: costs nothing to produce, looks like a busy signal."""
    rng = np.random.default_rng(seed)
    scale = np.sqrt(10.0 ** (power_dbfs / 10.0) / 2.0)
    block = ((rng.standard_normal(count) + 1j * rng.standard_normal(count)) * scale).astype(np.complex64)

    def waveform(start: int, length: int) -> Samples:
        if length != count:
            raise ValueError(f"this waveform has blocks of {count} samples, not {length}")
        return block

    return waveform


class RadioError(RuntimeError):
    """A fake radio gave up: its peer did not ask or answer in time, or answered with a broken block."""


class _Stopped(Exception):
    pass


class FakeRadio:
    """One radio (srsenb or a srsue) that transmits `subframes` blocks of `waveform` and receives as many, `lead`
    blocks ahead.

    Its tx port is bound at construction (`tx_endpoint`, port 0 allowed); `start(rx_endpoint)` connects its receiver
    and runs it. With `period_s` it keeps real time like srsenb (one block per period, measured against absolute
    deadlines; `max_lag_s` is how late it ran at worst); without, it runs as fast as its peers allow.
    `received_count` counts every sample that arrived, so more than `subframes * block` means repeated samples.
    """

    def __init__(
        self,
        name: str,
        context: zmq.Context[Any],
        tx_bind: str,
        *,
        block: int,
        subframes: int,
        waveform: Waveform,
        lead: int = 1,
        period_s: float | None = None,
        keep: bool = True,
        timeout_s: float = 10.0,
    ) -> None:
        self.name = name
        self.block = block
        self.subframes = subframes
        self._lead = lead
        self._waveform = waveform
        self._period_s = period_s
        self._timeout_s = timeout_s
        self._context = context
        self._tx = context.socket(zmq.REP)
        self._tx.setsockopt(zmq.LINGER, 0)
        self._tx.bind(tx_bind)
        self.tx_endpoint: str = self._tx.getsockopt_string(zmq.LAST_ENDPOINT)
        self._rx: zmq.Socket[Any] | None = None
        self.received: Samples | None = np.zeros(subframes * block, dtype=np.complex64) if keep else None
        self.received_count = 0
        self.max_lag_s = 0.0
        self.error: BaseException | None = None
        self._arrived = threading.Condition()
        self._stop = threading.Event()
        self._transmitter = threading.Thread(target=self._run_transmitter, name=f"{name}-tx", daemon=True)
        self._receiver = threading.Thread(target=self._run_receiver, name=f"{name}-rx", daemon=True)

    def start(self, rx_endpoint: str) -> None:
        self._rx = self._context.socket(zmq.REQ)
        self._rx.setsockopt(zmq.LINGER, 0)
        self._rx.connect(rx_endpoint)
        self._receiver.start()
        self._transmitter.start()

    def join(self, timeout_s: float) -> None:
        """Wait until the radio has sent and received everything; raises what stopped it early."""
        for thread in (self._transmitter, self._receiver):
            thread.join(timeout_s)
            if thread.is_alive():
                raise RadioError(f"{self.name}: still running after {timeout_s} s ({self.received_count} samples in)")
        if self.error is not None:
            raise RadioError(f"{self.name}: {self.error}") from self.error

    def close(self) -> None:
        """Stop and close the sockets (the peer sees the radio go away)."""
        self._stop.set()
        for thread in (self._transmitter, self._receiver):
            if thread.is_alive():
                thread.join()
        self._tx.close()
        if self._rx is not None:
            self._rx.close()

    def _fail(self, error: BaseException) -> None:
        with self._arrived:
            self.error = self.error or error
            self._stop.set()
            self._arrived.notify_all()

    def _wait(self, socket: zmq.Socket[Any], what: str) -> None:
        deadline = time.monotonic() + self._timeout_s
        while not socket.poll(POLL_MS, zmq.POLLIN):
            if self._stop.is_set():
                raise _Stopped
            if time.monotonic() > deadline:
                raise RadioError(f"no {what} for {self._timeout_s} s")

    def _run_receiver(self) -> None:
        """srsRAN's receive thread: keep a request out until everything expected has arrived."""
        assert self._rx is not None
        expected = self.subframes * self.block
        try:
            while self.received_count < expected:
                self._rx.send(b"\xff")
                self._wait(self._rx, "samples on the rx port")
                reply = self._rx.recv()
                if len(reply) % 8:
                    raise RadioError(f"a reply of {len(reply)} bytes is not whole complex64 samples")
                samples = np.frombuffer(reply, dtype=np.complex64)
                with self._arrived:
                    start = self.received_count
                    if self.received is not None:
                        kept = samples[: max(0, expected - start)]
                        self.received[start : start + len(kept)] = kept
                    self.received_count += len(samples)
                    self._arrived.notify_all()
        except _Stopped:
            pass
        except (RadioError, zmq.ZMQError) as error:
            self._fail(error)

    def _await(self, count: int) -> None:
        """Block until `count` samples have arrived."""
        with self._arrived:
            while self.received_count < count:
                if self._stop.is_set():
                    raise _Stopped
                self._arrived.wait(POLL_MS / 1000)

    def _run_transmitter(self) -> None:
        began = time.monotonic()
        try:
            for subframe in range(self.subframes):
                if self._period_s is not None:
                    lag = time.monotonic() - (began + subframe * self._period_s)
                    if lag < 0:
                        time.sleep(-lag)
                    self.max_lag_s = max(self.max_lag_s, lag)
                self._await((subframe + 1 - self._lead) * self.block)
                self._wait(self._tx, "request on the tx port")
                self._tx.recv()
                self._tx.send(self._waveform(subframe * self.block, self.block), copy=False)
            self._await(self.subframes * self.block)
        except _Stopped:
            pass
        except (RadioError, zmq.ZMQError) as error:
            self._fail(error)
