"""Writing a controller's ZooKeeper world by hand: topics with partition states, broker
registrations and ISR-change notifications, thousands at a time (pipelined creates)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from kazoo.client import KazooClient

from pafka.zk.znodes import (
    BrokerInfo,
    IsrChangeNotificationZNode,
    PartitionState,
    TopicPartitionsPayload,
    TopicZNode,
)

TopicPartition = tuple[str, int]


def _create_all(zk: KazooClient, nodes: Sequence[tuple[str, bytes]], **options: bool) -> None:
    window = 2000
    for begin in range(0, len(nodes), window):
        pending = [zk.create_async(p, d, **options) for p, d in nodes[begin : begin + window]]
        for request in pending:
            request.get()


def create_topics(
    zk: KazooClient, topics: int, partitions: int, brokers: Sequence[int], prefix: str = "t"
) -> list[TopicPartition]:
    """``topics`` topics of ``partitions`` partitions, replicas round-robin over ``brokers``
    (RF = len(brokers)), each with a state naming its first replica leader."""
    created: list[TopicPartition] = []
    for t in range(topics):
        topic = f"{prefix}{t}"
        assignment = {
            p: tuple(brokers[(p + i) % len(brokers)] for i in range(len(brokers)))
            for p in range(partitions)
        }
        zk.create(TopicZNode.path(topic), TopicZNode(uuid.uuid4(), assignment).encode())
        zk.create(TopicZNode.partitions_path(topic))
        _create_all(zk, [(PartitionState.partition_path(topic, p), b"") for p in assignment])
        _create_all(
            zk,
            [
                (PartitionState.path(topic, p), PartitionState(r[0], 0, r, 1).encode())
                for p, r in assignment.items()
            ],
        )
        created.extend((topic, p) for p in assignment)
    return created


def register_brokers(zk: KazooClient, brokers: Sequence[int]) -> None:
    """Ephemeral registrations of ``zk``'s session, at unreachable addresses."""
    for b in brokers:
        info = BrokerInfo(b, "127.0.0.1", 1, f"http://127.0.0.1:1/{b}")
        zk.create(BrokerInfo.path(b), info.encode(), ephemeral=True, makepath=True)


def create_notifications(zk: KazooClient, batches: Sequence[Sequence[TopicPartition]]) -> None:
    """One sequential ``isr_change_`` znode per batch, as a leader writes them."""
    _create_all(
        zk,
        [
            (IsrChangeNotificationZNode.path_prefix(), TopicPartitionsPayload(tuple(b)).encode())
            for b in batches
        ],
        sequence=True,
    )
