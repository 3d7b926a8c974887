"""The harness itself on a real bridge: a cut is a silent drop of bridged IPv4 between two
namespaces (no RST, no ICMP), one way when asked, gone after a heal, and nothing is left behind.
Seconds to run; skips where namespaces or nftables are not permitted."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from tests.partitions.cuts import Cuts, isolation, one_way
from tests.partitions.netns import Network, run


@pytest.fixture
def trio(namespaces_allowed: None) -> Iterator[tuple[Network, Cuts]]:
    network = Network(["a", "b", "c"])
    cuts = Cuts(network)
    network.create()
    try:
        cuts.heal()
        yield network, cuts
    finally:
        cuts.close()
        network.close()


def test_open_paths_answer(trio: tuple[Network, Cuts]) -> None:
    network, _ = trio
    # Nothing listens on the port, so an open path answers with a RST: bridged IPv4 passes
    # (br_netfilter's iptables hooks, if any, let it through).
    assert network.tcp_probe("a", "b") == "refused"
    assert network.tcp_probe("b", "a") == "refused"


def test_isolation_drops_silently_both_ways_and_only_there(trio: tuple[Network, Cuts]) -> None:
    network, cuts = trio
    cuts.apply(isolation("a", ["b"]))
    assert network.tcp_probe("a", "b") == "silent"
    assert network.tcp_probe("b", "a") == "silent"
    assert network.tcp_probe("a", "c") == "refused"
    assert network.tcp_probe("c", "b") == "refused"
    cuts.heal()
    assert network.tcp_probe("a", "b") == "refused"


def test_one_way_drop_keeps_the_other_direction(trio: tuple[Network, Cuts]) -> None:
    network, cuts = trio
    cuts.apply(one_way("a", ["b"]))
    listing = run("nft", "list", "table", "bridge", network.bridge)
    a, b = network.addresses["a"], network.addresses["b"]
    assert f"ip saddr {a} ip daddr {b} drop" in listing
    assert f"ip saddr {b} ip daddr {a}" not in listing
    # A connection from a to b never gets its SYN through; from b to a the SYN arrives, and
    # only a's answer is lost: both look silent to TCP, and c still reaches both.
    assert network.tcp_probe("a", "b") == "silent"
    assert network.tcp_probe("c", "a") == "refused"


def test_close_leaves_nothing_behind(namespaces_allowed: None) -> None:
    network = Network(["a"])
    cuts = Cuts(network)
    network.create()
    cuts.heal()
    sleeper = subprocess.Popen([*network.exec_prefix("a"), "sleep", "600"])
    cuts.close()
    network.close()
    assert sleeper.wait(10) != 0  # killed with its namespace
    assert network.namespace("a") not in run("ip", "netns", "list")
    assert network.bridge not in run("ip", "-o", "link", "show")
    assert network.bridge not in run("nft", "list", "tables")
