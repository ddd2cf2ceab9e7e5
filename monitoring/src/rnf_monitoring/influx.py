"""InfluxDB's v1 HTTP API as data: where to write, with which credentials, and what a response means.

The v1 `/write` (line protocol) and `/query` (InfluxQL) endpoints are answered by InfluxDB 1.x, by 2.x through its
v1 compatibility API (a DBRP mapping names the bucket) and by 3.x. Nothing here opens a socket or reads a clock:
`client.py` carries the requests out.

Credentials never come from the repository, nor from the URL (a command line is recorded in metadata.json):

| variable | meaning |
|---|---|
| `INFLUX_TOKEN` or `INFLUX_TOKEN_FILE` | an API token (2.x, 3.x): `Authorization: Token ...` |
| `INFLUX_USERNAME` and `INFLUX_PASSWORD` or `INFLUX_PASSWORD_FILE` | 1.x user (HTTP basic authentication) |
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

from rnf_foundation.endpoints import check_port
from rnf_foundation.errors import UserError

DEFAULT_DATABASE = "rnf"
BATCH_LINES = 5000  # lines per POST: InfluxData's recommended batch size
_PARTIAL_WRITE_DROPPED = re.compile(r"dropped=(\d+)")


@dataclass(frozen=True)
class Credentials:
    """What authenticates the requests; empty when the server runs without authentication."""

    username: str = ""
    password: str = field(default="", repr=False)
    token: str = field(default="", repr=False)

    def headers(self) -> dict[str, str]:
        if self.token:
            return {"Authorization": f"Token {self.token}"}
        if self.username or self.password:
            pair = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            return {"Authorization": f"Basic {pair}"}
        return {}


def _secret(environ: Mapping[str, str], name: str) -> str:
    """`NAME` from the environment, or the contents of the file `NAME_FILE` names (trailing newline removed)."""
    value = environ.get(name, "")
    path = environ.get(f"{name}_FILE", "")
    if value and path:
        raise UserError(f"set {name} or {name}_FILE, not both")
    if not path:
        return value
    try:
        return Path(path).read_text(encoding="utf-8").rstrip("\r\n")
    except OSError as error:
        raise UserError(f"{name}_FILE: {path}: {error.strerror}") from None


def credentials_from_environment(environ: Mapping[str, str]) -> Credentials:
    token = _secret(environ, "INFLUX_TOKEN")
    username = environ.get("INFLUX_USERNAME", "")
    password = _secret(environ, "INFLUX_PASSWORD")
    if token and (username or password):
        raise UserError("set either INFLUX_TOKEN or INFLUX_USERNAME/INFLUX_PASSWORD, not both")
    return Credentials(username=username, password=password, token=token)


@dataclass(frozen=True)
class InfluxTarget:
    """One database on one server: `base_url` is scheme://host:port plus any path prefix, without a trailing /."""

    base_url: str
    database: str = DEFAULT_DATABASE
    retention_policy: str = ""
    credentials: Credentials = Credentials()

    def write_url(self) -> str:
        query = {"db": self.database, "precision": "ns"}
        if self.retention_policy:
            query["rp"] = self.retention_policy
        return f"{self.base_url}/write?{urlencode(query)}"

    def query_url(self) -> str:
        return f"{self.base_url}/query"

    def __str__(self) -> str:
        return f"{self.base_url} (database {self.database})"


def parse_url(url: str, environ: Mapping[str, str], database: str | None = None) -> InfluxTarget:
    """`--influx URL`: http(s)://host:port[/prefix][?db=NAME&rp=POLICY]; `database` overrides `db`."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"--influx {url}: expected http://HOST:PORT (for example http://127.0.0.1:8086)")
    _, colon, port = parts.netloc.rpartition("]")[2].rpartition(":")
    if colon:
        try:
            check_port(port)
        except ValueError as error:
            raise UserError(f"--influx {url}: {error}") from None
    if parts.username or parts.password:
        raise UserError(
            "--influx: no credentials in the URL (it is recorded with the run); "
            "set INFLUX_TOKEN or INFLUX_USERNAME/INFLUX_PASSWORD (or INFLUX_TOKEN_FILE, INFLUX_PASSWORD_FILE)"
        )
    if parts.fragment:
        raise UserError(f"--influx {url}: a URL fragment (#...) means nothing here")
    query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=False)
    unknown = sorted(set(query) - {"db", "rp"})
    if unknown:
        raise UserError(f"--influx {url}: unknown parameter {unknown[0]!r} (known: db, rp)")
    name = database or query.get("db", [DEFAULT_DATABASE])[0]
    if not name:
        raise UserError(f"--influx {url}: empty database name")
    base = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
    return InfluxTarget(base, name, query.get("rp", [""])[0], credentials_from_environment(environ))


class Outcome(Enum):
    WRITTEN = "written"  # 2xx: every line stored
    REJECTED = "rejected"  # the server refused lines (bad line protocol, type conflict, authentication): never retried
    NO_DATABASE = "no database"  # 1.x answers 404 until the database is created
    RETRY = "retry"  # unreachable, timed out, overloaded (429) or a server error (5xx): the same batch again later


def classify(status: int | None, body: str) -> Outcome:
    """A `/write` response; `status` None when no response came (connection refused, reset or timed out)."""
    if status is None or status == 429 or status >= 500:
        return Outcome.RETRY
    if 200 <= status < 300:
        return Outcome.WRITTEN
    if status == 404 and "database not found" in body:
        return Outcome.NO_DATABASE
    return Outcome.REJECTED


def rejected_lines(body: str, batch: int) -> int:
    """How many lines of a refused batch were not stored: 1.x reports a partial write as `dropped=N`."""
    match = _PARTIAL_WRITE_DROPPED.search(body)
    return min(int(match.group(1)), batch) if match else batch


def backoff_s(failures: int) -> float:
    """Seconds before retrying after `failures` consecutive failed attempts: 0.1 s doubling up to 2 s."""
    return min(0.1 * 2 ** max(failures - 1, 0), 2.0)


def quote_identifier(name: str) -> str:
    """An InfluxQL identifier in double quotes."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def create_database(name: str) -> str:
    """The InfluxQL that creates a database (1.x; 2.x and 3.x create buckets their own way or on first write)."""
    return f"CREATE DATABASE {quote_identifier(name)}"
