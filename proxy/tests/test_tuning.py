"""Kernel tuning for controller-owned windows: applied in the proxy's namespace, restored afterwards."""

import pytest
from rnf_proxy import netns
from rnf_proxy.tuning import KernelTuning, route_command


def test_route_command_recreates_the_route_with_extra_attributes():
    route = {
        "dst": "172.16.0.0/24",
        "dev": "srs_spgw_sgi",
        "protocol": "kernel",
        "scope": "link",
        "prefsrc": "172.16.0.1",
    }
    assert route_command(route, ["initcwnd", "1000"]) == [
        "ip", "route", "replace", "172.16.0.0/24", "dev", "srs_spgw_sgi",
        "proto", "kernel", "scope", "link", "src", "172.16.0.1", "initcwnd", "1000",
    ]  # fmt: skip


@pytest.mark.root
def test_initial_window_and_sysctls_are_set_and_restored(net):
    def state():
        route = netns.run(net.core, ["ip", "route", "show", "172.16.0.0/24"]).stdout
        sysctls = netns.run(net.core, ["sysctl", "-n", "net.ipv4.tcp_slow_start_after_idle"]).stdout.strip()
        return route, sysctls

    before = state()
    tuning = KernelTuning(net.core, ("172.16.0.0/24",), 1000)
    tuning.apply()
    route, idle = state()
    assert "initcwnd 1000" in route and "initrwnd 1000" in route and idle == "0"
    tuning.restore()
    assert state() == before
