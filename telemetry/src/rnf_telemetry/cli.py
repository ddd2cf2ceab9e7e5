"""`rnf telemetry`: watch a telemetry endpoint live, and regenerate the golden vectors."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import click
from rich.console import Console

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
        + (" OUTAGE" if message.outage else "")
    )


async def _listen(endpoint: str, topic: bytes, count: int | None, recorder: Recorder) -> int:
    subscriber = Subscriber(endpoint, topic)
    received = 0
    try:
        while count is None or received < count:
            message = await subscriber.receive()
            console.print(format_line(message))
            recorder.record("telemetry", telemetry_tags(message), telemetry_fields(message), message.timestamp_ns)
            received += 1
    finally:
        errors = dict(subscriber.tracker.errors)
        if errors or subscriber.tracker.lost:
            console.print(f"dropped: {errors or 'none'}; lost in transit: {subscriber.tracker.lost}", style="yellow")
        subscriber.close()
    return received


@click.group("telemetry")
def telemetry() -> None:
    """The RAN telemetry contract (telemetry/SPEC.md)."""


@telemetry.command("listen")
@click.argument("endpoint", default=DEFAULT_ENDPOINT)
@click.option("--cell", "cell_id", type=int, help="Only this cell id.")
@click.option("--rnti", type=str, help="Only this RNTI (decimal or 0x hex); needs --cell.")
@click.option("--count", type=click.IntRange(min=1), help="Stop after this many messages.")
@click.option(
    "--record",
    "record_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also append the messages to this line-protocol file (replayable as a virtual-cell trace).",
)
def listen(endpoint: str, cell_id: int | None, rnti: str | None, count: int | None, record_file: Path | None) -> None:
    """Print decoded telemetry messages from ENDPOINT as they arrive."""
    try:
        topic = topic_filter(cell_id, int(rnti, 0) if rnti else None)
    except ValueError as error:
        raise click.BadParameter(str(error)) from error
    recorder: Recorder = FileRecorder(record_file) if record_file else NullRecorder()
    try:
        asyncio.run(_listen(endpoint, topic, count, recorder))
    except KeyboardInterrupt:
        pass
    finally:
        recorder.close()


@telemetry.command("write-vectors")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), default=Path("telemetry/vectors"))
def write_vectors(directory: Path) -> None:
    """Regenerate the golden vectors (only when SPEC.md changes; commit the result)."""
    from rnf_telemetry import vectors

    vectors.write(directory)
    console.print(f"wrote {len(vectors.VALID)} valid and {len(vectors.INVALID)} invalid vectors to {directory}")
