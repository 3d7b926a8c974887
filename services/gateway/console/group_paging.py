"""The consumer-group search (pure): which groups a page shows, so a cluster of thousands of
groups answers a page at a time, as the topic search does.

A group is found in ZooKeeper's ``/consumers`` registry (every group pafka keeps is there), and
listed by the brokers (ListGroups) when its state is wanted for every group; :func:`merge` joins
the two sources (the brokers' state wins, ZooKeeper says which kind a group is and what was
unreadable), :func:`search` filters by name, state and kind and cuts one page of the sorted
names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    """Who coordinates a group: a broker (Kafka's protocol) or its clients, through ZooKeeper
    (Kafka 0.8's high-level consumer; ``kafka-consumer-groups.sh --zookeeper`` listed them)."""

    BROKER = "broker"
    ZOOKEEPER = "zookeeper"


@dataclass(frozen=True)
class ZkRegistry:
    """What ZooKeeper says of one group under ``/consumers/{group}``."""

    kind: Kind
    live_members: int = 0
    problem: str | None = None


@dataclass(frozen=True)
class ListedGroup:
    group_id: str
    state: str | None  # as Kafka spells it: Stable, Empty, ...; None: only its coordinator knows
    kind: Kind
    problem: str | None = None


@dataclass(frozen=True)
class GroupPage:
    total: int
    items: tuple[ListedGroup, ...]


STABLE, EMPTY = "Stable", "Empty"


def merge(listed: Mapping[str, str], registry: Mapping[str, ZkRegistry]) -> dict[str, ListedGroup]:
    """Every group of either source: ``listed`` maps a group the brokers list to its state; a
    ZooKeeper-era group they do not list is Stable while a client is registered, else Empty;
    a broker-coordinated one they were not asked about has no state here."""
    merged: dict[str, ListedGroup] = {}
    for group in {*listed, *registry}:
        zk = registry.get(group)
        state = listed.get(group)
        if state is None and zk is not None and zk.kind is Kind.ZOOKEEPER:
            state = STABLE if zk.live_members else EMPTY
        kind = zk.kind if zk else Kind.BROKER
        merged[group] = ListedGroup(group, state, kind, zk.problem if zk else None)
    return merged


def search(
    groups: Iterable[ListedGroup],
    query: str = "",
    state: str = "",
    kind: Kind | None = None,
    offset: int = 0,
    limit: int = 50,
) -> GroupPage:
    """The groups whose id contains ``query`` (any case), in ``state`` (any case; any state if
    empty) and of ``kind`` (either if None), sorted by id, from ``offset``, at most ``limit``."""
    wanted, wanted_state = query.casefold(), state.casefold().replace("_", "")
    found = sorted(
        (
            g
            for g in groups
            if wanted in g.group_id.casefold()
            and (not wanted_state or (g.state or "").casefold() == wanted_state)
            and (kind is None or g.kind is kind)
        ),
        key=lambda g: g.group_id,
    )
    return GroupPage(total=len(found), items=tuple(found[offset : offset + limit]))
