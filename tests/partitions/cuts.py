"""Network cuts as silent packet drops on the bridge, with nftables.

A ``bridge``-family table holds one forward chain: every rule drops IPv4 frames from one
address to another while they cross the bridge between two ports. Nothing answers a dropped
packet (no RST, no ICMP: the bridge forwards frames, it does not route), so a cut looks to both
ends like a silent network, the case that deadlines and session timeouts exist for. ARP is left
alone; only IP traffic between the chosen pairs stops.

The chain runs at priority -200, before br_netfilter hands bridged IPv4 to the ``ip`` family
hooks (``bridge-nf-call-iptables``, priority 0 on the bridge hooks): a dropped frame never
reaches them, and a frame we let pass meets only their rules, which this machine leaves empty
(``Cuts.verify`` checks both directions with real connections before a run relies on them).

The whole table is replaced in one nft transaction on every change, so a cut or a heal is
atomic: no moment where half of a new cut is in place.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from tests.partitions.netns import Network, NetworkError, run

Pair = tuple[str, str]  # (source node, destination node): packets from source to destination


def isolation(node: str, others: Iterable[str]) -> set[Pair]:
    """Both directions between ``node`` and each of ``others``."""
    return {pair for other in others if other != node for pair in ((node, other), (other, node))}


def one_way(source: str, destinations: Iterable[str]) -> set[Pair]:
    return {(source, d) for d in destinations if d != source}


def split(side_a: Iterable[str], side_b: Iterable[str]) -> set[Pair]:
    """Both directions between every node of one side and every node of the other."""
    b = list(side_b)
    return {pair for node in side_a for pair in isolation(node, b)}


def ruleset(table: str, drops: Iterable[Pair], addresses: dict[str, str]) -> str:
    """The nft script that replaces ``table`` with one dropping each pair's IPv4 packets.

    Declaring the table before deleting it makes the delete succeed on the first run, and the
    whole script is one transaction."""
    rules = [
        f"        ip saddr {addresses[src]} ip daddr {addresses[dst]} drop"
        for src, dst in sorted(drops)
    ]
    return "\n".join(
        [
            f"table bridge {table} {{}}",
            f"delete table bridge {table}",
            f"table bridge {table} {{",
            "    chain forward {",
            "        type filter hook forward priority -200; policy accept;",
            *rules,
            "    }",
            "}",
            "",
        ]
    )


@dataclass
class Cuts:
    """The drops in force on one network's bridge."""

    network: Network
    drops: set[Pair] = field(default_factory=set)

    @property
    def table(self) -> str:
        return self.network.bridge

    def apply(self, drops: set[Pair]) -> None:
        unknown = {n for pair in drops for n in pair} - set(self.network.addresses)
        if unknown:
            raise NetworkError(f"no such nodes: {sorted(unknown)}")
        run("nft", "-f", "-", input_text=ruleset(self.table, drops, self.network.addresses))
        self.drops = set(drops)

    def add(self, drops: set[Pair]) -> None:
        self.apply(self.drops | drops)

    def heal(self) -> None:
        self.apply(set())

    def close(self) -> None:
        with contextlib.suppress(NetworkError):
            run("nft", "delete", "table", "bridge", self.table)
        self.drops = set()
