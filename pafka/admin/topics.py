"""Topic administration by writing ZooKeeper, as Kafka 2.x's AdminZkClient does.

The controller turns these writes into partition states and leaders; nothing here talks to a
broker. Synchronous on a kazoo client, so the CLI calls it directly and the broker through
``ZkClient.run``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from pafka.cluster.assignment import (
    BrokerMeta,
    assign_replicas,
    validate_manual_assignment,
)
from pafka.cluster.assignment import (
    add_partitions as assign_new_partitions,
)
from pafka.cluster.names import validate_topic_name
from pafka.cluster.topic_config import parse_topic_config
from pafka.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    ReassignmentInProgressError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from pafka.zk.client import check_transaction
from pafka.zk.znodes import (
    BROKER_IDS,
    BROKER_TOPICS,
    DELETE_TOPICS,
    BrokerInfo,
    DeleteTopicZNode,
    PartitionState,
    PreferredReplicaElectionZNode,
    ReassignmentZNode,
    TopicConfigZNode,
    TopicPartitionsPayload,
    TopicZNode,
)


@dataclass(frozen=True)
class TopicDescription:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, tuple[tuple[int, ...], PartitionState | None]]
    config: dict[str, str]
    marked_for_deletion: bool


def live_brokers(zk: KazooClient) -> list[BrokerInfo]:
    brokers = []
    for child in zk.get_children(BROKER_IDS):
        try:
            data, _ = zk.get(BrokerInfo.path(int(child)))
        except NoNodeError:
            continue
        brokers.append(BrokerInfo.decode(int(child), data))
    return sorted(brokers, key=lambda b: b.id)


def create_topic(
    zk: KazooClient,
    name: str,
    partitions: int,
    replication_factor: int,
    config: Mapping[str, str] | None = None,
    assignment: Mapping[int, tuple[int, ...]] | None = None,
    validate_only: bool = False,
) -> TopicZNode:
    """Validate everything, then write config and assignment in one transaction."""
    validate_topic_name(name)
    overrides = dict(config or {})
    topic_config = parse_topic_config(overrides)
    brokers = live_brokers(zk)
    if assignment is not None:
        replicas = validate_manual_assignment(assignment, {b.id for b in brokers})
    else:
        if not brokers:
            raise InvalidReplicationFactorError("no brokers are registered")
        replicas = assign_replicas(
            [BrokerMeta(b.id, b.rack) for b in brokers], partitions, replication_factor
        )
    rf = len(next(iter(replicas.values())))
    if topic_config.min_insync_replicas > rf:
        # Kafka accepts this, but every acks=all write would then fail; say so up front.
        raise InvalidReplicationFactorError(
            f"min.insync.replicas {topic_config.min_insync_replicas} exceeds the replication "
            f"factor {rf}"
        )
    node = TopicZNode(topic_id=uuid.uuid4(), partitions=dict(replicas))
    if zk.exists(TopicZNode.path(name)) or zk.exists(DeleteTopicZNode.path(name)):
        raise TopicAlreadyExistsError(f"topic {name!r} already exists")
    if validate_only:
        return node
    tx = zk.transaction()
    config_path = TopicConfigZNode.path(name)
    if zk.exists(config_path):
        tx.set_data(config_path, TopicConfigZNode(overrides).encode())
    else:
        tx.create(config_path, TopicConfigZNode(overrides).encode())
    tx.create(TopicZNode.path(name), node.encode())
    results = tx.commit()
    if any(isinstance(r, NodeExistsError) for r in results):
        raise TopicAlreadyExistsError(f"topic {name!r} already exists")
    check_transaction(results)
    return node


def read_topic(zk: KazooClient, name: str) -> tuple[TopicZNode, int]:
    try:
        data, stat = zk.get(TopicZNode.path(name))
    except NoNodeError:
        raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist") from None
    return TopicZNode.decode(name, data), stat.version


def leaders_elected(zk: KazooClient, name: str, partitions: Iterable[int]) -> bool:
    """Whether the controller has elected a leader for each of ``partitions`` of ``name`` (its
    state znodes say so; the brokers hear of them from the controller a moment later)."""
    for p in partitions:
        try:
            data, _ = zk.get(PartitionState.path(name, p))
        except NoNodeError:
            return False
        if PartitionState.decode(name, p, data).leader < 0:
            return False
    return True


def delete_topic(zk: KazooClient, name: str) -> None:
    read_topic(zk, name)
    # Already requested is fine: deletion is idempotent.
    with contextlib.suppress(NodeExistsError):
        zk.create(DeleteTopicZNode.path(name), b"", makepath=True)


def add_partitions(
    zk: KazooClient,
    name: str,
    new_total: int,
    new_replicas: Sequence[Sequence[int]] | None = None,
    validate_only: bool = False,
) -> TopicZNode:
    """Grow ``name`` to ``new_total`` partitions; ``new_replicas`` are the new partitions'
    replica lists in order, numbered from the count in ZooKeeper (read in the same conditional
    update), never from a broker's possibly older view. ``validate_only`` checks and writes
    nothing."""
    while True:
        node, version = read_topic(zk, name)
        current = len(node.partitions)
        if new_total < current:
            raise InvalidPartitionsError(
                f"topic {name!r} currently has {current} partitions, "
                f"which is higher than the requested {new_total}"
            )
        if new_total == current:
            raise InvalidPartitionsError(f"topic {name!r} already has {current} partitions")
        brokers = live_brokers(zk)
        if new_replicas is not None:
            if len(new_replicas) != new_total - current:
                raise InvalidReplicaAssignmentError(
                    f"increasing the number of partitions by {new_total - current} "
                    f"but {len(new_replicas)} assignments provided"
                )
            added = validate_manual_assignment(
                {current + i: tuple(r) for i, r in enumerate(new_replicas)},
                {b.id for b in brokers},
                first_partition=current,
            )
        else:
            added = assign_new_partitions(
                node.partitions, [BrokerMeta(b.id, b.rack) for b in brokers], new_total
            )
        updated = TopicZNode(node.topic_id, {**node.partitions, **added})
        if validate_only:
            return updated
        try:
            zk.set(TopicZNode.path(name), updated.encode(), version=version)
            return updated
        except BadVersionError:
            continue


def alter_topic_config(zk: KazooClient, name: str, overrides: Mapping[str, str]) -> None:
    read_topic(zk, name)
    parse_topic_config(overrides)
    path = TopicConfigZNode.path(name)
    payload = TopicConfigZNode(dict(overrides)).encode()
    if zk.exists(path):
        zk.set(path, payload)
    else:
        zk.create(path, payload, makepath=True)


def topic_overrides(zk: KazooClient, name: str) -> dict[str, str]:
    try:
        data, _ = zk.get(TopicConfigZNode.path(name))
    except NoNodeError:
        return {}
    return TopicConfigZNode.decode(name, data).config


def list_topics(zk: KazooClient) -> list[str]:
    return sorted(zk.get_children(BROKER_TOPICS))


def pending_deletions(zk: KazooClient) -> set[str]:
    return set(zk.get_children(DELETE_TOPICS))


def describe_topic(zk: KazooClient, name: str) -> TopicDescription:
    node, _ = read_topic(zk, name)
    partitions: dict[int, tuple[tuple[int, ...], PartitionState | None]] = {}
    for p, replicas in sorted(node.partitions.items()):
        try:
            data, _ = zk.get(PartitionState.path(name, p))
            state: PartitionState | None = PartitionState.decode(name, p, data)
        except NoNodeError:
            state = None
        partitions[p] = (replicas, state)
    return TopicDescription(
        name=name,
        topic_id=node.topic_id,
        partitions=partitions,
        config=topic_overrides(zk, name),
        marked_for_deletion=zk.exists(DeleteTopicZNode.path(name)) is not None,
    )


def request_preferred_election(zk: KazooClient, partitions: list[tuple[str, int]]) -> None:
    payload = TopicPartitionsPayload(tuple(partitions)).encode()
    zk.create(PreferredReplicaElectionZNode.path(), payload, makepath=True)


def reassign_partitions(
    zk: KazooClient, targets: Mapping[tuple[str, int], tuple[int, ...]]
) -> None:
    """Request that partitions move to new replica lists; one request at a time, as in Kafka."""
    brokers = {b.id for b in live_brokers(zk)}
    for (topic, partition), replicas in targets.items():
        node, _ = read_topic(zk, topic)
        if partition not in node.partitions:
            raise UnknownTopicOrPartitionError(f"{topic}-{partition} does not exist")
        validate_manual_assignment({0: replicas}, brokers)
    try:
        zk.create(
            ReassignmentZNode.path(), ReassignmentZNode(dict(targets)).encode(), makepath=True
        )
    except NodeExistsError:
        raise ReassignmentInProgressError(
            "a partition reassignment is already in progress"
        ) from None
