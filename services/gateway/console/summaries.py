"""What the console's pages show, computed from the client's metadata (pure).

Plain values in, plain values out: the topic search (a case-insensitive substring, then one
page of the sorted names, so a cluster of 10,000 partitions answers a page at a time), each
partition's health (replicas out of the ISR are lagging; no leader is offline) and each broker's
share of replicas and leaderships.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pafka.client.cluster import PartitionLeader

NO_LEADER = -1


@dataclass(frozen=True)
class TopicHealth:
    name: str
    partitions: int
    replication_factor: int
    under_replicated: int
    offline: int


@dataclass(frozen=True)
class Page:
    """One page of a longer sorted list of names, and how long the whole list is."""

    total: int
    items: tuple[str, ...]


@dataclass(frozen=True)
class BrokerLoad:
    replicas: int = 0
    leaders: int = 0


def lagging(state: PartitionLeader) -> tuple[int, ...]:
    """The replicas that are not in sync (Kafka's under-replicated partitions have some)."""
    return tuple(b for b in state.replicas if b not in state.isr)


def offline(state: PartitionLeader) -> bool:
    return state.leader == NO_LEADER


def topic_health(name: str, partitions: Mapping[int, PartitionLeader]) -> TopicHealth:
    first = partitions.get(0)
    return TopicHealth(
        name=name,
        partitions=len(partitions),
        replication_factor=len(first.replicas) if first else 0,
        under_replicated=sum(1 for s in partitions.values() if lagging(s)),
        offline=sum(1 for s in partitions.values() if offline(s)),
    )


def search(names: Iterable[str], query: str, offset: int, limit: int) -> Page:
    """The names containing ``query`` (any case), sorted, from ``offset``, at most ``limit``."""
    wanted = query.casefold()
    found = sorted(n for n in names if wanted in n.casefold())
    return Page(total=len(found), items=tuple(found[offset : offset + limit]))


def broker_loads(topics: Iterable[Mapping[int, PartitionLeader]]) -> dict[int, BrokerLoad]:
    """Replicas and leaderships per broker, over every partition of ``topics``."""
    replicas: dict[int, int] = {}
    leaders: dict[int, int] = {}
    for partitions in topics:
        for state in partitions.values():
            for broker in state.replicas:
                replicas[broker] = replicas.get(broker, 0) + 1
            if not offline(state):
                leaders[state.leader] = leaders.get(state.leader, 0) + 1
    return {
        b: BrokerLoad(replicas.get(b, 0), leaders.get(b, 0)) for b in set(replicas) | set(leaders)
    }
