"""A study on a Dask cluster of lab nodes: `rnf run SCENARIO --scheduler ADDR` and `rnf worker --scheduler ADDR`.

The client plans the scenario's blocks (blocks.py), submits those whose runs are not complete in the results folder
(all of them for a new study, the missing ones for `--resume`), and writes each block's run folders as its result
arrives; everything else (metadata.json, summary.json, plots) is as for a local run. A block's Dask key is derived
from the results folder and the block, so a block run twice (a worker lost mid-block) yields one result.

Security: workers run as root and execute whatever the scheduler sends them. A plain `tcp://` address must be a
loopback one; a lab's nodes talk TLS (`tls://`, Dask's Security with certificates), or the user says `--insecure`.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import shutil
import signal
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rnf_foundation.errors import UserError
from rnf_foundation.signals import STOP_SIGNALS

from rnf_experiments import blocks as blocking
from rnf_experiments.runner import Interrupted, Stopped, create_results, write_metadata
from rnf_experiments.scenario import Scenario

DEFAULT_PORT = 8786
CONNECT_S = 3.0  # an unreachable scheduler is reported within a few seconds
PROBE_S = 1.0  # a worker that did not start: one more attempt, to say whether the scheduler refused its certificate
WORKERS_WAIT_S = 10.0  # for a first worker with the scenario's resources, after connecting
POLL_S = 0.5
INCOMING = ".incoming"  # a block's runs are written here, then moved into runs/ folder by folder

_ADDRESS = re.compile(r"(?:(?P<protocol>[a-z]+)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(?P<port>[0-9]{1,5})")


@dataclass(frozen=True)
class Tls:
    """A TLS cluster's certificates (`--tls-ca-file`, `--tls-cert`, `--tls-key`, as `dask scheduler` names them)."""

    ca_file: Path | None = None
    cert: Path | None = None
    key: Path | None = None

    @property
    def given(self) -> bool:
        return any((self.ca_file, self.cert, self.key))

    def security(self, role: str) -> Any:
        """Dask's Security for `role` ("client" or "worker"), or None without certificates."""
        from distributed import Security

        if not self.given:
            return None
        options = (("--tls-ca-file", self.ca_file), ("--tls-cert", self.cert), ("--tls-key", self.key))
        for option, path in options:
            if path is None:
                raise UserError(f"{option}: missing (TLS needs --tls-ca-file, --tls-cert and --tls-key)")
        for option, path in options:
            if path is not None and not path.is_file():
                raise UserError(f"{option} {path}: no such file")
        self._check_loadable()
        return Security(
            tls_ca_file=str(self.ca_file),
            **{f"tls_{role}_cert": str(self.cert), f"tls_{role}_key": str(self.key)},
            require_encryption=True,
        )

    def _check_loadable(self) -> None:
        """A UserError naming the option if the CA, or the certificate and its key, cannot be loaded as Dask will."""
        try:
            context = ssl.create_default_context(cafile=str(self.ca_file))
        except ssl.SSLError as error:
            raise UserError(f"--tls-ca-file {self.ca_file}: not a PEM certificate ({_ssl_reason(error)})") from None
        try:
            context.load_cert_chain(str(self.cert), str(self.key))
        except ssl.SSLError as error:
            raise UserError(
                f"--tls-cert {self.cert}, --tls-key {self.key}: not a PEM certificate and its private key "
                f"({_ssl_reason(error)})"
            ) from None


def _ssl_reason(error: BaseException) -> str:
    """`[X509: KEY_VALUES_MISMATCH] key values mismatch (_ssl.c:3895)` as `key values mismatch`."""
    text = re.sub(r"^\[[^]]*\]\s*|\s*\(_ssl\.c:\d+\)$", "", str(error).strip())
    return text or type(error).__name__


def check_address(text: str, tls: Tls, insecure: bool) -> str:
    """The scheduler's address as Dask takes it (`tcp://HOST:PORT`, `tls://HOST:PORT`; a bare `HOST:PORT` is tcp),
    or a UserError: malformed, or a non-loopback address without TLS (and without --insecure)."""
    match = _ADDRESS.fullmatch(text.strip())
    example = f"e.g. tcp://127.0.0.1:{DEFAULT_PORT} or tls://lab-head:{DEFAULT_PORT}"
    if match is None:
        raise UserError(f"--scheduler {text!r}: not a scheduler address ({example})")
    protocol, host, port = match["protocol"] or "tcp", match["host"], int(match["port"])
    if protocol not in ("tcp", "tls") or not 1 <= port <= 65535:
        raise UserError(f"--scheduler {text!r}: not a scheduler address ({example})")
    address = f"{protocol}://{host}:{port}"
    if protocol == "tls" and not tls.given:
        raise UserError(f"--scheduler {address}: tls:// needs --tls-ca-file, --tls-cert and --tls-key")
    if protocol == "tcp" and tls.given:
        raise UserError(f"--scheduler {address}: certificates given, so the address must be tls://{host}:{port}")
    if protocol == "tcp" and not _loopback(host) and not insecure:
        raise UserError(
            f"--scheduler {address}: not a loopback address, and without TLS anyone on the network can make the "
            "root-run workers execute code; use tls:// with --tls-ca-file, --tls-cert and --tls-key (or --insecure)"
        )
    return address


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _quiet_dask() -> None:
    """Dask logs every reconnection attempt and closed comm at INFO/WARNING; the user gets one line instead."""
    for name in ("distributed", "distributed.client", "distributed.comm", "distributed.core", "tornado"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def connect(address: str, tls: Tls) -> Any:
    """A Dask client of the scheduler at `address`, or a UserError naming it (exit 2) within CONNECT_S seconds."""
    from distributed import Client

    security = tls.security("client")
    _quiet_dask()
    try:
        return Client(address, security=security, timeout=f"{CONNECT_S}s", set_as_default=False)
    except (OSError, TimeoutError) as error:
        raise connection_error(address, tls, error) from None


def connection_error(address: str, tls: Tls, error: BaseException) -> UserError:
    """What a failed connection to the scheduler says, in one line: why the TLS handshake was refused, or that the
    scheduler was not reached."""
    if refused := _refusal(address, tls, error):
        return refused
    reason = str(error).splitlines()[0] if str(error) else type(error).__name__
    return UserError(f"--scheduler {address}: cannot reach the scheduler ({reason})")


def _refusal(address: str, tls: Tls, error: BaseException) -> UserError | None:
    """A scheduler that was reached but refused the connection: a certificate from another CA on either side, or a
    plain tcp:// client at a TLS scheduler (which resets it). None for anything else (nothing listening, a timeout)."""
    chain = [error]
    while (cause := chain[-1].__cause__ or chain[-1].__context__) is not None and len(chain) < 10:
        chain.append(cause)
    for link in chain:
        if isinstance(link, ssl.SSLCertVerificationError):
            return UserError(
                f"--scheduler {address}: TLS handshake refused: the scheduler's certificate is not signed by "
                f"--tls-ca-file {tls.ca_file} ({link.verify_message or _ssl_reason(link)})"
            )
    text = " ".join(str(link) for link in chain)
    signed = f"is --tls-cert {tls.cert} signed by the cluster's CA?"
    if alert := re.search(r"\[SSL: \w+\] ([^(]+?)\s*\(", text):
        if re.search("unknown ca|bad certificate|certificate required", alert[1]):
            return UserError(f"--scheduler {address}: TLS handshake refused by the scheduler ({alert[1]}); {signed}")
        return UserError(f"--scheduler {address}: TLS handshake failed ({alert[1]})")
    if "SSLEOFError" in text or "SSLZeroReturnError" in text:  # TLS 1.3: the refusal can arrive as a closed stream
        return UserError(f"--scheduler {address}: TLS handshake refused by the scheduler (connection closed); {signed}")
    if address.startswith("tcp://") and "ConnectionResetError" in text:
        return UserError(
            f"--scheduler {address}: cannot reach the scheduler (it reset the connection; a tls:// scheduler needs "
            "tls:// and --tls-ca-file, --tls-cert, --tls-key)"
        )
    return None


def _suitable(workers: dict[str, Any], require: dict[str, float]) -> list[str]:
    wanted = {blocking.BLOCK_RESOURCE: 1.0} | require
    return [
        address
        for address, info in workers.items()
        if all(info.get("resources", {}).get(name, 0) >= amount for name, amount in wanted.items())
    ]


def _wait_for_workers(client: Any, address: str, require: dict[str, float]) -> None:
    """Return once a worker can take the scenario's blocks, or a UserError saying which resources none offers."""
    deadline = time.monotonic() + WORKERS_WAIT_S
    while True:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        if _suitable(workers, require):
            return
        if time.monotonic() > deadline:
            break
        time.sleep(POLL_S)
    needs = ", ".join(f"{name}={amount:g}" for name, amount in require.items())
    offered = "; ".join(
        f"{worker} ({', '.join(f'{k}={v:g}' for k, v in info.get('resources', {}).items()) or 'no resources'})"
        for worker, info in workers.items()
    )
    what = f"no `rnf worker` offers {needs} (execution.require)" if require else "no `rnf worker` is connected"
    raise UserError(f"--scheduler {address}: {what}; workers: {offered or 'none'}")


@dataclass
class _Board:
    """What the workers report (their events arrive on the client's own thread) and what the client collected."""

    running: dict[str, str] = field(default_factory=dict)  # worker -> block
    lock: threading.Lock = field(default_factory=threading.Lock)

    def event(self, event: tuple[float, dict[str, Any]]) -> None:
        message = event[1]
        if isinstance(message, dict) and message.get("state") == "started":
            with self.lock:
                self.running[str(message["worker"])] = str(message["block"])

    def finished(self, block: str) -> None:
        with self.lock:
            for worker in [w for w, b in self.running.items() if b == block]:
                del self.running[worker]


class _Stop:
    """SIGINT and SIGTERM end the study between polls: the blocks not finished are cancelled, the folder says so."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _Stop:
        self._previous = {signum: signal.signal(signum, self._handle) for signum in STOP_SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: object) -> None:
        self.signum = self.signum or signum


def write_block(results: Path, block: blocking.Block, files: dict[str, bytes]) -> None:
    """A block's run folders into runs/, each moved in whole; a run folder left by an earlier attempt is replaced."""
    incoming = results / INCOMING / block.id
    shutil.rmtree(incoming, ignore_errors=True)
    for name, content in files.items():
        path = incoming / blocking.safe_relative(name, block.folders)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    for folder in block.folders:
        if not (incoming / folder / "run.json").is_file():
            raise UserError(f"block {block.id}: its result has no runs/{folder}/run.json")
    for folder in block.folders:
        target = results / "runs" / folder
        shutil.rmtree(target, ignore_errors=True)
        (incoming / folder).rename(target)
    shutil.rmtree(incoming, ignore_errors=True)


def _update_metadata(results: Path, **entries: Any) -> None:
    path = results / "metadata.json"
    metadata = json.loads(path.read_text())
    for key, value in entries.items():
        if key == "resumed":
            metadata.setdefault("resumed", []).append(value)
        else:
            metadata[key] = value
    path.write_text(json.dumps(metadata, indent=1, default=str) + "\n")


@dataclass(frozen=True)
class Outcome:
    """A study's results folder, and the blocks that failed (one line each)."""

    results: Path
    failures: list[str]
    submitted: list[str]


def run_on_cluster(
    scenario: Scenario,
    raw: dict[str, Any],
    overrides: list[str],
    output_root: Path,
    address: str,
    tls: Tls,
    console: Console,
    influx_url: str | None = None,
    resume: Path | None = None,
    on_submitted: Callable[[list[str]], None] | None = None,
) -> Outcome:
    """Run the scenario's blocks on the cluster into a new results folder, or the missing blocks of `resume`."""
    source = str(resume / "metadata.json") if resume else scenario.name
    planned = blocking.plan(scenario, raw, source)
    client = connect(address, tls)
    try:
        _wait_for_workers(client, address, scenario.execution.require)
        if resume is None:
            results = create_results(output_root, scenario)
            write_metadata(results, scenario, raw, overrides)
            _update_metadata(results, execution={"scheduler": address, "blocks": len(planned)})
        else:
            results = resume
        shutil.rmtree(results / INCOMING, ignore_errors=True)  # a block a killed client was writing
        pending = [block for block in planned if not block.complete(results)]
        if resume is not None:
            _update_metadata(
                results,
                resumed={"at": datetime.now(UTC).isoformat(), "scheduler": address, "blocks": [b.id for b in pending]},
            )
            console.print(f"resuming {results}: {len(pending)} of {len(planned)} blocks to run")
        if on_submitted is not None:
            on_submitted([block.id for block in pending])
        failures = _run_blocks(client, results, pending, len(planned), scenario, influx_url, console)
        shutil.rmtree(results / INCOMING, ignore_errors=True)
        return Outcome(results, failures, [block.id for block in pending])
    finally:
        client.close()


def _run_blocks(
    client: Any,
    results: Path,
    pending: list[blocking.Block],
    planned: int,
    scenario: Scenario,
    influx_url: str | None,
    console: Console,
) -> list[str]:
    board = _Board()
    client.subscribe_topic(blocking.EVENT_TOPIC, board.event)
    resources = {blocking.BLOCK_RESOURCE: 1} | scenario.execution.require
    by_key = {}
    for block in pending:
        key = f"rnf-{results.name}-{block.id}"
        spec = blocking.task_spec(block, results.name, influx_url)
        by_key[key] = (block, client.submit(blocking.run_block, spec, key=key, resources=resources, pure=False))
    failures: list[str] = []
    done = planned - len(pending)
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[count]}"), TimeElapsedColumn())
    rows: dict[str, TaskID] = {}
    with _Stop() as stop, Progress(*columns, console=console, transient=False) as progress:
        total = progress.add_task("blocks", total=planned, completed=done, count=f"{done}/{planned}")
        waiting = {future for _, future in by_key.values()}
        while waiting:
            if stop.signum is not None:
                client.cancel(list(waiting))
                name = signal.Signals(stop.signum).name
                at = {"signal": name, "at": datetime.now(UTC).isoformat(), "blocks": done, "planned": planned}
                _update_metadata(results, stopped=at)
                kind = Interrupted if stop.signum == signal.SIGINT else Stopped
                raise kind(f"stopped by {name} after {done} of {planned} blocks; rnf run --resume {results} ...")
            time.sleep(POLL_S)
            finished = [future for future in waiting if future.done()]
            for future in finished:
                waiting.discard(future)
                block, _ = by_key[future.key]
                board.finished(block.id)
                if future.status == "finished":
                    result = future.result()
                    write_block(results, block, result["files"])
                    done += 1
                else:
                    error = future.exception()
                    failures.append(
                        str(error) if isinstance(error, blocking.BlockError) else f"block {block.id}: {error!r}"
                    )
                future.release()
            with board.lock:
                running = dict(board.running)
            for worker in running.keys() - rows.keys():
                rows[worker] = progress.add_task(worker, total=None, count="")
            for worker, row in rows.items():
                progress.update(row, description=f"  {worker}: {running.get(worker, 'idle')}")
            progress.update(
                total,
                completed=done,
                count=f"{done}/{planned}",
                description=f"blocks done ({len(running)} running, {len(failures)} failed)",
            )
    for failure in failures:
        console.print(f"[bold red]failed[/]: {failure}")
    return failures


def recorded_scheduler(results: Path) -> str:
    """The scheduler a results folder was run on (metadata.json's execution.scheduler), for `--resume`."""
    try:
        address = json.loads((results / "metadata.json").read_text()).get("execution", {}).get("scheduler")
    except (OSError, ValueError, AttributeError):
        address = None
    if not isinstance(address, str):
        raise UserError(f"--resume {results}: no scheduler recorded in its metadata.json; give --scheduler ADDR")
    return address


def load_resumed(results: Path) -> tuple[Scenario, dict[str, Any], list[str]]:
    """The scenario of a results folder, as its metadata.json recorded it, for `--resume`."""
    from pydantic import ValidationError
    from rnf_foundation.config import format_validation_error

    from rnf_experiments.scenario import HIDDEN_TAGS

    path = results / "metadata.json"
    try:
        metadata = json.loads(path.read_text())
        raw, overrides = metadata["scenario_data"], list(metadata.get("overrides", []))
    except FileNotFoundError:
        raise UserError(f"--resume {results}: not a results folder (no metadata.json)") from None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UserError(f"{path}: not a results folder's metadata ({error!r})") from None
    try:
        return Scenario.model_validate(raw), raw, overrides
    except ValidationError as error:
        raise UserError(format_validation_error(str(path), error, HIDDEN_TAGS)) from None


def serve_worker(address: str, tls: Tls, resources: dict[str, float], name: str | None, dashboard: bool) -> None:
    """`rnf worker`: one thread, one block at a time, until the scheduler goes away or SIGINT/SIGTERM."""
    import asyncio

    from distributed import Worker

    blocking.remove_stale_workdirs()
    security = tls.security("worker")
    _quiet_dask()
    host = address.split("://", 1)[1].rsplit(":", 1)[0].strip("[]")
    listen = "127.0.0.1" if _loopback(host) and ":" not in host else None  # Dask's default: the route to it

    async def serve() -> int:
        worker = Worker(
            address,
            nthreads=1,
            resources={blocking.BLOCK_RESOURCE: 1} | resources,
            security=security,
            name=name,
            host=listen,
            dashboard=dashboard,
            death_timeout=f"{CONNECT_S}s",
        )
        loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, lambda: asyncio.ensure_future(worker.close()))
        try:
            await worker
        except (OSError, TimeoutError) as error:
            raise await _handshake_error(address, tls, security) or connection_error(address, tls, error) from None
        click.echo(f"rnf worker {worker.address}: connected to {address}, resources {worker.state.total_resources}")
        await worker.finished()
        return 0

    asyncio.run(serve())


async def _handshake_error(address: str, tls: Tls, security: Any) -> UserError | None:
    """Why a worker that did not start was refused by the scheduler, if it was: Dask's worker retries a refused
    connection until its timeout and then says only that. One direct attempt (no retries, so no delay when nothing
    listens) names the cause."""
    import asyncio

    from distributed import Security
    from distributed.comm.addressing import parse_address
    from distributed.comm.registry import get_backend

    scheme, location = parse_address(address)
    arguments = (security or Security()).get_connection_args("worker")
    try:
        connector = get_backend(scheme).get_connector()
        comm = await asyncio.wait_for(connector.connect(location, deserialize=False, **arguments), PROBE_S)
    except (OSError, TimeoutError) as error:
        return _refusal(address, tls, error)
    await comm.close()
    return None


def parse_resources(text: str | None) -> dict[str, float]:
    """`--resources "usrp=1 gpu=2"` (spaces or commas between) as Dask's worker resources."""
    found: dict[str, float] = {}
    for item in re.split(r"[\s,]+", (text or "").strip()):
        if not item:
            continue
        name, _, amount = item.partition("=")
        try:
            value = float(amount)
        except ValueError:
            value = -1.0
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,31}", name) or value <= 0:
            raise UserError(f"--resources {text!r}: {item!r} is not NAME=AMOUNT with a positive amount")
        if name == blocking.BLOCK_RESOURCE:
            raise UserError(f"--resources {text!r}: {name!r} is rnf's own (one block at a time)")
        found[name] = value
    return found
