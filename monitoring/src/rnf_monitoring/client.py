"""InfluxDB's v1 HTTP API over urllib: one request per batch or statement, no retries of its own.

Requests never go through an HTTP proxy from the environment: the server is addressed exactly as given.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from rnf_monitoring.influx import InfluxTarget, Outcome, classify, create_database, rejected_lines


class QueryError(Exception):
    """InfluxDB refused a statement, or could not be reached."""


@dataclass(frozen=True)
class WriteResult:
    outcome: Outcome
    rejected: int = 0  # lines not stored (Outcome.REJECTED)
    message: str = ""  # the server's error, or why no response came


class InfluxClient:
    def __init__(self, target: InfluxTarget, timeout_s: float = 5.0) -> None:
        self.target = target
        self.timeout_s = timeout_s
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _post(self, url: str, body: bytes, content_type: str) -> tuple[int | None, str]:
        headers = {"Content-Type": content_type} | self.target.credentials.headers()
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with self._opener.open(request, timeout=self.timeout_s) as response:
                return response.status, response.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")
        except (OSError, http.client.HTTPException) as error:  # refused, reset, timed out (URLError is an OSError)
            return None, str(getattr(error, "reason", error))

    def write(self, lines: Sequence[str]) -> WriteResult:
        """POST lines of line protocol to `/write`; a missing database (1.x) is created and the write repeated."""
        body = "".join(text + "\n" for text in lines).encode()
        status, text = self._post(self.target.write_url(), body, "text/plain; charset=utf-8")
        if classify(status, text) is Outcome.NO_DATABASE:
            try:
                self.query(create_database(self.target.database))
            except QueryError as error:
                return WriteResult(Outcome.REJECTED, len(lines), f"database {self.target.database}: {error}")
            status, text = self._post(self.target.write_url(), body, "text/plain; charset=utf-8")
        outcome = classify(status, text)
        if outcome is Outcome.WRITTEN:
            return WriteResult(outcome)
        if outcome is Outcome.RETRY:
            return WriteResult(outcome, 0, text if status is None else f"HTTP {status}: {text.strip()}")
        return WriteResult(Outcome.REJECTED, rejected_lines(text, len(lines)), f"HTTP {status}: {text.strip()}")

    def query(self, statement: str, epoch: str = "ns") -> list[dict[str, Any]]:
        """One result per statement (each with its "series"); QueryError when refused or unreachable."""
        body = urlencode({"q": statement, "db": self.target.database, "epoch": epoch}).encode()
        status, text = self._post(self.target.query_url(), body, "application/x-www-form-urlencoded")
        if status is None:
            raise QueryError(f"{self.target.base_url}: {text}")
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise QueryError(f"HTTP {status}: {text.strip()}") from None
        if status != 200 or "error" in data:
            raise QueryError(str(data.get("error", f"HTTP {status}")))
        results: list[dict[str, Any]] = data.get("results", [])
        for result in results:
            if "error" in result:
                raise QueryError(str(result["error"]))
        return results
