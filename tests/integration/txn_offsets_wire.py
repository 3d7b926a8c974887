"""TxnOffsetCommit, OffsetFetch v7 and WriteTxnMarkers for ``__consumer_offsets``, spoken raw
(kafka-python's encoders) to a group's coordinator; shared by the transactional offset tests."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable
from typing import Any

from kafka.protocol.consumer import OffsetFetchRequest, OffsetFetchResponse
from kafka.protocol.producer.transaction import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from kazoo.client import KazooClient

from pafka.groups.offsets_partition import OFFSETS_TOPIC, offsets_partition
from pafka.zk.znodes import ConsumerGroupZNodes as Z
from pafka.zk.znodes import TxnOffsetProducerZNodes as P
from tests.integration.test_groups_bad_input import GroupConn
from tests.integration.txn_wire import write_marker

TopicPartition = tuple[str, int]

UNKNOWN_SERVER_ERROR = -1
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
INVALID_PRODUCER_EPOCH = 47
INVALID_PRODUCER_ID_MAPPING = 49
FENCED_INSTANCE_ID = 82
UNSTABLE_OFFSET_COMMIT = 88
NO_OFFSET = -1
FETCH_STABLE_V = 7

_producer_ids = itertools.count(1_000_000 + uuid.uuid4().int % 1_000_000 * 1000)


def new_producer_id() -> int:
    """A producer id no other test uses (the index of pending offsets is cluster-wide)."""
    return next(_producer_ids)


def group_in_partition(prefix: str, partition: int) -> str:
    """A fresh group id whose offsets live in ``__consumer_offsets``-``partition``."""
    while True:
        group = f"{prefix}-{uuid.uuid4().hex[:8]}"
        if offsets_partition(group) == partition:
            return group


def txn_commit(
    conn: GroupConn,
    producer_id: int,
    offsets: dict[TopicPartition, int],
    *,
    version: int = 3,
    epoch: int = 0,
    member: tuple[str, str | None, int] = ("", None, -1),
    metadata: str = "txn",
) -> dict[TopicPartition, int]:
    R = TxnOffsetCommitRequest[version]
    part_cls = R.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition
    by_topic: dict[str, list[Any]] = {}
    for (topic, p), offset in sorted(offsets.items()):
        fields: dict[str, Any] = {
            "partition_index": p,
            "committed_offset": offset,
            "committed_metadata": metadata,
        }
        if version >= 2:
            fields["committed_leader_epoch"] = 5
        by_topic.setdefault(topic, []).append(part_cls(**fields))
    request: dict[str, Any] = {
        "transactional_id": f"txn-{producer_id}",
        "group_id": conn.group,
        "producer_id": producer_id,
        "producer_epoch": epoch,
        "topics": [
            R.TxnOffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()
        ],
    }
    if version >= 3:
        member_id, instance_id, generation = member
        request |= {
            "member_id": member_id,
            "group_instance_id": instance_id,
            "generation_id": generation,
        }
    resp = conn.call(R(**request), TxnOffsetCommitResponse, version)
    return {
        (t.name, p.partition_index): int(p.error_code) for t in resp.topics for p in t.partitions
    }


def fetch(
    conn: GroupConn, partitions: Iterable[TopicPartition], *, require_stable: bool
) -> dict[TopicPartition, tuple[int, int]]:
    """(committed offset, error code) per partition, by OffsetFetch v7."""
    R = OffsetFetchRequest[FETCH_STABLE_V]
    by_topic: dict[str, list[int]] = {}
    for topic, p in sorted(partitions):
        by_topic.setdefault(topic, []).append(p)
    req = R(
        group_id=conn.group,
        topics=[
            R.OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in by_topic.items()
        ],
        require_stable=require_stable,
    )
    resp = conn.call(req, OffsetFetchResponse, FETCH_STABLE_V)
    assert resp.error_code == NONE, resp
    return {
        (t.name, p.partition_index): (int(p.committed_offset), int(p.error_code))
        for t in resp.topics
        for p in t.partitions
    }


def marker(
    conn: GroupConn,
    producer_id: int,
    *,
    committed: bool,
    epoch: int = 0,
    partition: int | None = None,
) -> int:
    """A transaction coordinator's marker for the group's ``__consumer_offsets`` partition,
    sent to the group's coordinator."""
    index = offsets_partition(conn.group) if partition is None else partition
    (code,) = write_marker(
        conn.address, OFFSETS_TOPIC, producer_id, epoch, commit=committed, partitions=(index,)
    )
    return code


def pending_in_zookeeper(zk: KazooClient, group: str, producer_id: int) -> set[TopicPartition]:
    """The partitions ZooKeeper holds pending for (group, producer id)."""
    root = Z.txn_producer_path(group, producer_id)
    if zk.exists(root) is None:
        return set()
    return {(t, int(p)) for t in zk.get_children(root) for p in zk.get_children(f"{root}/{t}")}


def indexed(zk: KazooClient, producer_id: int, group: str) -> bool:
    return zk.exists(P.group_path(producer_id, group)) is not None
