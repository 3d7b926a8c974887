"""A ZooKeeper-era group read from its znodes (pure): who is registered, who owns which
partition and the offsets committed, as ``kafka-consumer-groups.sh --zookeeper`` showed them.

Kafka 0.8's high-level consumer (and pykafka's BalancedConsumer) keep all of it under
``/consumers/{group}``: ephemeral ``ids/{consumer}`` registrations, ephemeral
``owners/{topic}/{p}`` claims holding a consumer-thread id, and ``offsets/{topic}/{p}`` holding
the offset as decimal text. Other clients and people write there too, so every node is read on
its own: one that cannot be read gives its member or partition a ``problem`` naming it and
leaves the rest of the group readable.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TypeVar

from pafka.errors import CorruptZNodeError
from pafka.groups.zk_coordinated import client_host, partition_number
from pafka.zk.znodes import (
    CommittedOffsetZNode,
    PartitionOwnerZNode,
    ZkConsumerRegistration,
    decode_registration,
)
from pafka.zk.znodes import ConsumerGroupZNodes as Z
from services.gateway.console.group_paging import Kind, ZkRegistry

T = TypeVar("T")

# The children of /consumers/{group} pafka's own commits write beside ``offsets``.
COMMITS = "offset_commits"
OFFSETS = "offsets"


@dataclass(frozen=True)
class ZkMember:
    consumer_id: str
    host: str  # "" when its id does not say
    topics: tuple[str, ...]  # what it subscribed to (regexes for a white or black list)
    pattern: str
    registered_at_ms: int
    problem: str | None = None


@dataclass(frozen=True)
class ZkPartition:
    topic: str
    partition: int
    owner: str | None = None  # the consumer-thread id claiming it
    committed_offset: int | None = None
    problem: str | None = None


def registry(group: str, children: Collection[str], ids: Mapping[str, bytes]) -> ZkRegistry:
    """Which kind of group this is, from the names under ``/consumers/{group}`` and its
    ``ids/`` registrations: ZooKeeper-coordinated clients registered (or left offsets without
    pafka's commit records beside them), else one a broker coordinates."""
    live, problem, broker_members = 0, None, 0
    for consumer, data in ids.items():
        try:
            found = decode_registration(group, consumer, data)
        except CorruptZNodeError as exc:
            problem = problem or str(exc)
            continue
        if isinstance(found, ZkConsumerRegistration):
            live += 1
        else:
            broker_members += 1
    if live or (problem and not broker_members):
        return ZkRegistry(Kind.ZOOKEEPER, live, problem)
    if not broker_members and OFFSETS in children and COMMITS not in children:
        return ZkRegistry(Kind.ZOOKEEPER)
    return ZkRegistry(Kind.BROKER, 0, problem)


def members(group: str, ids: Mapping[str, bytes]) -> list[ZkMember]:
    """The registered consumers, sorted; an unreadable registration is a member with its
    problem (a pafka member's registration is left out: it is not this kind of group's)."""
    found = []
    for consumer, data in sorted(ids.items()):
        host = client_host(consumer, group)
        try:
            node = decode_registration(group, consumer, data)
        except CorruptZNodeError as exc:
            found.append(ZkMember(consumer, host, (), "", 0, str(exc)))
            continue
        if isinstance(node, ZkConsumerRegistration):
            found.append(
                ZkMember(consumer, host, node.subscription, node.pattern, node.timestamp_ms)
            )
    return found


def partitions(
    group: str,
    owners: Mapping[tuple[str, str], bytes],
    offsets: Mapping[tuple[str, str], bytes],
) -> tuple[list[ZkPartition], list[str]]:
    """Each partition owned or with a committed offset, sorted, and the problems of nodes that
    name no partition at all. ``owners`` and ``offsets`` map (topic, child name) to the data."""
    problems: dict[tuple[str, int], str] = {}
    stray: list[str] = []

    def read(
        nodes: Mapping[tuple[str, str], bytes],
        parent: Callable[[str, str], str],
        decode: Callable[[str, bytes], T],
        broker_prefixed: bool,
    ) -> dict[tuple[str, int], T]:
        found: dict[tuple[str, int], T] = {}
        for (topic, name), data in sorted(nodes.items()):
            p = partition_number(name, broker_prefixed=broker_prefixed)
            path = f"{parent(group, topic)}/{name}"
            if p is None:
                stray.append(f"{path} does not name a partition")
                continue
            try:
                found[(topic, p)] = decode(path, data)
            except CorruptZNodeError as exc:
                problems[(topic, p)] = str(exc)
        return found

    owner_of = read(
        owners,
        Z.owners_topic_path,
        lambda path, data: PartitionOwnerZNode.decode(path, data).member_id,
        broker_prefixed=True,
    )
    committed = read(
        offsets,
        Z.offsets_topic_path,
        lambda path, data: CommittedOffsetZNode.decode(path, data).offset,
        broker_prefixed=False,
    )
    found = [
        ZkPartition(t, p, owner_of.get((t, p)), committed.get((t, p)), problems.get((t, p)))
        for t, p in sorted({*owner_of, *committed, *problems})
    ]
    return found, stray


def lag(committed: int | None, log_end: int | None) -> int | None:
    """How far the committed offset trails the log end; None unless both are known (never
    negative: a log truncated under an old offset is not behind)."""
    if committed is None or log_end is None:
        return None
    return max(log_end - committed, 0)
