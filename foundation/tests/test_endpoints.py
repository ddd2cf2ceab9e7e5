"""Ports, ZeroMQ endpoints and `IP:PORT` addresses: one check for every component, refusing what libzmq or a socket
would silently turn into something else."""

import click
import pytest
from pydantic import BaseModel, ValidationError
from rnf_foundation.endpoints import (
    CONNECT_ENDPOINT,
    ENDPOINT,
    ConnectEndpoint,
    Endpoint,
    HostPort,
    check_endpoint,
    check_port,
    parse_address,
)

GOOD = [
    "tcp://127.0.0.1:5555",
    "tcp://*:5555",
    "tcp://127.0.0.1:0",
    "tcp://[::1]:5555",
    "tcp://enb.lab:1",
    "ipc:///tmp/t",
    "inproc://x",
]
BAD = [
    ("tcp://127.0.0.1:99999", "port 99999 is above 65535"),
    ("tcp://127.0.0.1:65536", "port 65536 is above 65535"),
    ("tcp://127.0.0.1:-1", "port '-1' is not a number 0-65535"),
    ("tcp://127.0.0.1:\u0665", "is not a number 0-65535"),
    ("tcp://127.0.0.1:", "is not a number 0-65535"),
    ("tcp://127.0.0.1", "needs HOST:PORT"),
    ("tcp:// 127.0.0.1:5555", "no address after tcp://"),
    ("tcp://", "no address after tcp://"),
    ("udp://127.0.0.1:5555", "is not a ZeroMQ endpoint"),
    ("127.0.0.1:5555", "is not a ZeroMQ endpoint"),
    ("", "is not a ZeroMQ endpoint"),
]


@pytest.mark.parametrize("endpoint", GOOD)
def test_good_endpoints_pass_unchanged(endpoint):
    assert check_endpoint(endpoint) == endpoint


@pytest.mark.parametrize(("endpoint", "reason"), BAD)
def test_bad_endpoints_are_refused_naming_the_reason(endpoint, reason):
    with pytest.raises(ValueError, match=reason.replace("(", r"\(")) as raised:
        check_endpoint(endpoint)
    assert repr(endpoint) in str(raised.value)


@pytest.mark.parametrize("endpoint", ["tcp://*:5555", "tcp://127.0.0.1:0", "tcp://127.0.0.1:*"])
def test_a_connect_endpoint_needs_what_the_other_side_binds(endpoint):
    check_endpoint(endpoint)
    with pytest.raises(ValueError, match="connecting needs the host and port"):
        check_endpoint(endpoint, connect=True)


def test_schemes_can_be_narrowed():
    with pytest.raises(ValueError, match=r"\(tcp://, ipc://\)"):
        check_endpoint("inproc://x", schemes=("tcp", "ipc"))


@pytest.mark.parametrize(("text", "port"), [("0", 0), ("65535", 65535), ("5555", 5555)])
def test_ports(text, port):
    assert check_port(text) == port


@pytest.mark.parametrize("text", ["65536", "-1", "", "1e3", " 80", "\u0665"])
def test_bad_ports(text):
    with pytest.raises(ValueError, match="port"):
        check_port(text)


@pytest.mark.parametrize(
    ("text", "address"),
    [("127.0.0.1:15001", ("127.0.0.1", 15001)), ("[::1]:80", ("::1", 80)), ("0.0.0.0:0", ("0.0.0.0", 0))],
)
def test_addresses(text, address):
    assert parse_address(text) == address


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("127.0.0.1", "is not IP:PORT"),
        ("127.0.0.1:99999", "port 99999 is above 65535"),
        ("localhost:80", "'localhost' does not appear to be an IPv4 or IPv6 address"),
        ("127.0.0.1:x", "port 'x' is not a number"),
    ],
)
def test_bad_addresses(text, reason):
    with pytest.raises(ValueError, match=reason):
        parse_address(text)


class Config(BaseModel):
    bind: Endpoint = "tcp://*:1"
    connect: ConnectEndpoint = "tcp://127.0.0.1:1"
    listen: HostPort = "127.0.0.1:1"


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("bind", "tcp://*:99999", "port 99999 is above 65535"),
        ("connect", "tcp://*:5555", "connecting needs"),
        ("listen", "127.0.0.1:70000", "port 70000 is above 65535"),
    ],
)
def test_the_pydantic_types_name_the_field(field, value, reason):
    with pytest.raises(ValidationError) as raised:
        Config.model_validate({field: value})
    (problem,) = raised.value.errors()
    assert problem["loc"] == (field,) and reason in problem["msg"]


@pytest.mark.parametrize(("kind", "value"), [(ENDPOINT, "tcp://1.2.3.4:99999"), (CONNECT_ENDPOINT, "tcp://*:5555")])
def test_the_click_types_fail_as_bad_parameters(kind, value):
    with pytest.raises(click.BadParameter):
        kind.convert(value, None, None)
