"""`rnf telemetry`: watch a telemetry endpoint live, and regenerate the golden vectors."""

from __future__ import annotations

import math
from pathlib import Path

import click
from rich.console import Console
from rnf_foundation.endpoints import CONNECT_ENDPOINT
from rnf_foundation.errors import UserError
from rnf_foundation.signals import run_until_signal

from rnf_telemetry.message import TelemetryMessage
from rnf_telemetry.record import FileRecorder, NullRecorder, Recorder, telemetry_fields, telemetry_tags
from rnf_telemetry.topic import topic_filter
from rnf_telemetry.transport import DEFAULT_ENDPOINT, Subscriber

console = Console(highlight=False)


def format_line(message: TelemetryMessage) -> str:
    mcs = "-" if math.isnan(message.mean_mcs) else f"{message.mean_mcs:.1f}"
    cqi = "-" if math.isnan(message.mean_cqi) else f"{message.mean_cqi:.1f}"
    return (
        f"{message.timestamp_ns / 1e9:.3f} cell={message.cell_id} rnti=0x{message.rnti:04x} "
        f"lcid={message.lcid} ip={message.ue_ip or '-'} seq={message.seq} tti={message.tti} "
        f"q={message.queue_bytes}B ({message.dl_queue_sdus} sdu, retx {message.dl_queue_retx_bytes}B) "
        f"sched={message.sched_bytes}B rate={message.sched_rate_bps / 1e6:.2f}Mbit/s "
        f"grants={message.dl_grant_ttis} mcs={mcs} cqi={cqi} drops={message.dl_dropped_sdus}"
        + (f" ce={message.dl_ce_marked_sdus}" if message.dl_ce_marked_sdus else "")
        + (f" aqm_drops={message.dl_aqm_dropped_sdus}" if message.dl_aqm_dropped_sdus else "")
        + (f" ece={message.ul_ece_marked_acks}" if message.ul_ece_marked_acks else "")
        + (f" prbs={message.dl_grant_prbs}/{message.cell_dl_prbs}" if message.cell_dl_prbs else "")
        + (f" idle={message.dl_idle_ttis}tti/{message.dl_idle_capacity_bytes}B" if message.idle_counted else "")
        + (" OUTAGE" if message.outage else "")
    )


async def _listen(endpoint: str, topic: bytes, count: int | None, recorder: Recorder) -> None:
    subscriber = Subscriber(endpoint, topic)
    received = 0
    try:
        while count is None or received < count:
            message = await subscriber.receive()
            console.print(format_line(message))
            recorder.record("telemetry", telemetry_tags(message), telemetry_fields(message), message.timestamp_ns)
            received += 1
    finally:
        subscriber.close()
        recorder.close()
        errors = dict(subscriber.tracker.errors)
        console.print(
            f"received: {received}; dropped: {errors or 'none'}; lost in transit: {subscriber.tracker.lost}",
            style="yellow" if errors or subscriber.tracker.lost else None,
        )


@click.group("telemetry")
def telemetry() -> None:
    """The RAN telemetry contract (telemetry/SPEC.md)."""


@telemetry.command("listen")
@click.argument("endpoint", type=CONNECT_ENDPOINT, default=DEFAULT_ENDPOINT)
@click.option("--cell", "cell_id", type=click.IntRange(min=0, max=0xFFFFFFFF), help="Only this cell id.")
@click.option("--rnti", type=str, help="Only this RNTI (decimal or 0x hex); needs --cell.")
@click.option("--count", type=click.IntRange(min=1), help="Stop after this many messages.")
@click.option(
    "--record",
    "record_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also append the messages to this line-protocol file (replayable as a virtual-cell trace).",
)
def listen(endpoint: str, cell_id: int | None, rnti: str | None, count: int | None, record_file: Path | None) -> None:
    """Print decoded telemetry messages from ENDPOINT as they arrive, until --count, Ctrl-C or SIGTERM."""
    try:
        topic = topic_filter(cell_id, _rnti(rnti) if rnti else None)
    except ValueError as error:
        raise click.BadParameter(str(error)) from error
    recorder: Recorder = NullRecorder()
    if record_file:
        try:
            recorder = FileRecorder(record_file)
        except OSError as error:
            raise UserError(f"--record {record_file}: {error.strerror}") from None
    run_until_signal(_listen(endpoint, topic, count, recorder))


def _rnti(text: str) -> int:
    """An RNTI in decimal or 0x hex: 16 bits (3GPP TS 36.321), as the telemetry topic carries it."""
    try:
        rnti = int(text, 0)
    except ValueError:
        raise ValueError(f"--rnti {text!r} is not a number (decimal or 0x hex)") from None
    if not 0 <= rnti <= 0xFFFF:
        raise ValueError(f"--rnti {text}: an RNTI is 16 bits (0 to 0xffff)")
    return rnti


@telemetry.command("write-vectors")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), default=Path("telemetry/vectors"))
def write_vectors(directory: Path) -> None:
    """Regenerate the golden vectors (only when SPEC.md changes; commit the result)."""
    from rnf_telemetry import vectors

    vectors.write(directory)
    console.print(
        f"wrote {len(vectors.VALID)} valid, {len(vectors.DECODE_ONLY)} decode-only and {len(vectors.INVALID)} invalid "
        f"vectors to {directory}"
    )
