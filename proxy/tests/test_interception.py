"""TPROXY rules: what is loaded, that it diverts, and that teardown leaves nothing behind."""

import pytest
from rnf_proxy import netns
from rnf_proxy.interception import Interception


def test_ruleset_diverts_the_ue_networks_to_the_loopback_listener():
    rules = Interception(None, ("127.0.0.1", 15001), ("172.16.0.0/24", "10.45.0.0/16"), ports=(80, 443)).ruleset()
    assert "socket transparent 1 meta mark set 0x1 accept" in rules
    assert "ip saddr { 172.16.0.0/24, 10.45.0.0/16 } meta l4proto tcp tcp dport { 80, 443 }" in rules
    assert "tproxy to 127.0.0.1:15001 meta mark set 0x1 accept" in rules


@pytest.mark.root
def test_setup_installs_rules_and_teardown_removes_exactly_them(net):
    interception = Interception(net.core, ("127.0.0.1", 15001), ("172.16.0.0/24",))
    interception.setup()
    interception.setup()  # a second start (after a crash) replaces, never duplicates
    assert netns.run(net.core, ["ip", "rule"]).stdout.count("fwmark 0x1 lookup 100") == 1
    assert "tproxy to 127.0.0.1:15001" in netns.run(net.core, ["nft", "list", "ruleset"]).stdout
    interception.teardown()
    assert "fwmark" not in netns.run(net.core, ["ip", "rule"]).stdout
    assert netns.run(net.core, ["nft", "list", "ruleset"]).stdout.strip() == ""
    assert netns.run(net.core, ["ip", "route", "show", "table", "100"]).stdout.strip() == ""
