"""I-TCP: no control at all."""

from rnf_proxy.control import FREE, RanSample, Tick
from rnf_proxy.itcp import Itcp


def test_itcp_always_leaves_sending_to_the_kernel():
    itcp = Itcp()
    assert itcp.update(RanSample(queue=10**6, served=0, period_s=0.01, outage=True), now=0.0) is FREE
    assert itcp.update(Tick(), now=1.0) is FREE and itcp.state() is None
