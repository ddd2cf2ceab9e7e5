"""The UE address plan shared by srsepc, the virtual cell and the proxy."""

import pytest
from rnf_foundation.addresses import ue_index


@pytest.mark.parametrize(
    ("ip", "index"),
    [("172.16.0.2", "1"), ("172.16.0.3", "2"), ("172.16.0.65", "64"), ("10.45.0.2", "10.45.0.2")],
)
def test_ue_index_from_the_address(ip, index):
    assert ue_index(ip) == index
