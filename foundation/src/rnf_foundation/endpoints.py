"""Ports and ZeroMQ endpoints, checked in one place for every component.

libzmq wraps an out-of-range port silently (99999 becomes 34463, -1 becomes 65535), so every endpoint is checked
here before a socket sees it: in configuration files (`Endpoint`, `ConnectEndpoint` for pydantic), on the command
line (`ENDPOINT`, `CONNECT_ENDPOINT` for click) and in URLs (`check_port`). Plain sockets' `HOST:PORT` addresses
(`HostPort`, `parse_address`) take the same port check.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection
from typing import Annotated

import click
from pydantic import AfterValidator

SCHEMES = ("tcp", "ipc", "inproc")
_TCP = re.compile(r"^(\*|[A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\]):(.*)$")
_EXAMPLE = "like tcp://127.0.0.1:5555 or ipc:///tmp/telemetry"


def check_port(text: str) -> int:
    """A port number 0-65535 from its decimal text; ValueError naming the reason otherwise."""
    if not text.isascii() or not text.isdigit():
        raise ValueError(f"port {text!r} is not a number 0-65535")
    port = int(text)
    if port > 65535:
        raise ValueError(f"port {port} is above 65535")
    return port


def parse_address(text: str) -> tuple[str, int]:
    """`IP:PORT` (an IPv6 address in brackets) as (host, port); ValueError naming it and the reason otherwise."""
    host, separator, port = text.rpartition(":")
    if not separator:
        raise ValueError(f"{text!r} is not IP:PORT, like 127.0.0.1:15001")
    try:
        number = check_port(port)
        ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
    except ValueError as error:
        raise ValueError(f"{text!r}: {error}") from None
    return host.removeprefix("[").removesuffix("]"), number


def _address(text: str) -> str:
    parse_address(text)
    return text


HostPort = Annotated[str, AfterValidator(_address)]


def check_endpoint(value: str, *, connect: bool = False, schemes: Collection[str] = SCHEMES) -> str:
    """`value` if it is a ZeroMQ endpoint of one of `schemes`; ValueError naming it and the reason otherwise.

    A `connect` endpoint needs the port its peer binds: a wildcard (`*`, 0) only makes sense for a bind.
    """
    scheme, separator, address = value.partition("://")
    if not separator or scheme not in schemes:
        known = ", ".join(f"{s}://" for s in schemes)
        raise ValueError(f"{value!r} is not a ZeroMQ endpoint ({known}) {_EXAMPLE}")
    if not address or address != address.strip():
        raise ValueError(f"{value!r}: no address after {scheme}://")
    if scheme != "tcp":
        return value
    match = _TCP.match(address)
    if match is None:
        raise ValueError(f"{value!r}: {scheme}:// needs HOST:PORT, {_EXAMPLE}")
    port = match.group(2)
    if port != "*":
        try:
            check_port(port)
        except ValueError as error:
            raise ValueError(f"{value!r}: {error}") from None
    if connect and (port in ("*", "0") or match.group(1) == "*"):
        raise ValueError(f"{value!r}: connecting needs the host and port the other side binds, not a wildcard")
    return value


def _connect(value: str) -> str:
    return check_endpoint(value, connect=True)


Endpoint = Annotated[str, AfterValidator(check_endpoint)]
ConnectEndpoint = Annotated[str, AfterValidator(_connect)]


class EndpointType(click.ParamType):
    """A click parameter holding a checked ZeroMQ endpoint."""

    name = "endpoint"

    def __init__(self, *, connect: bool) -> None:
        self.connect = connect

    def convert(self, value: str, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return check_endpoint(value, connect=self.connect)
        except ValueError as error:
            self.fail(str(error), param, ctx)


ENDPOINT = EndpointType(connect=False)
CONNECT_ENDPOINT = EndpointType(connect=True)
