"""Sockets made inside a namespace stay there; the thread comes back to its own namespace."""

import os

import pytest
from rnf_foundation.errors import UserError
from rnf_proxy import netns


@pytest.mark.root
def test_a_socket_created_inside_belongs_to_that_namespace(net):
    own = os.readlink("/proc/thread-self/ns/net")
    with netns.inside(net.server):
        inside = os.readlink("/proc/thread-self/ns/net")
        sock = net.socket(net.server)
    assert os.readlink("/proc/thread-self/ns/net") == own != inside
    sock.bind(("10.20.0.2", 0))  # only the server namespace has this address
    sock.close()


def test_an_unknown_namespace_is_a_user_error():
    with pytest.raises(UserError, match="does not exist"), netns.inside("no-such-namespace-xyz"):
        pass
