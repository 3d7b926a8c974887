"""The ZooKeeper side of transactional offsets (blocking; run in threads).

A group's pending offsets live under ``/consumers/{group}/txn_offsets/{producer id}``; the
producer's index entry ``/txn_offset_producers/{producer id}/{group}`` lets its transaction's
markers find the group. Both are written in the group's fenced transactions
(:class:`TxnOffsetWrite`), so a coordinator that takes the group over finds them as they were.
Their parents are created just before each write and deleted with the last child, so they are
never assumed to exist (unlike the group's other parents, which live as long as the group).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError, NotEmptyError

from pafka.groups.consumer_protocol import TopicPartition
from pafka.groups.txn_offsets import PendingOffset
from pafka.groups.zk_coordinated import partition_number
from pafka.zk.znodes import (
    ConsumerGroupZNodes,
    PendingTxnOffsetZNode,
    TxnOffsetProducerZNodes,
)
from services.broker.groups.shared_registry import children
from services.broker.groups.store import Claim, GroupWrite

Z = ConsumerGroupZNodes
P = TxnOffsetProducerZNodes


@dataclass
class PendingTree:
    """One producer's pending offsets in one group, with every node of its subtree."""

    offsets: dict[TopicPartition, PendingOffset] = field(default_factory=dict)
    topics: set[str] = field(default_factory=set)
    exists: bool = False
    indexed: bool = False


def _partitions(zk: KazooClient, group: str, producer_id: int) -> tuple[set[str], list[str]]:
    topics = children(zk, Z.txn_producer_path(group, producer_id))
    listed = {t: zk.get_children_async(Z.txn_topic_path(group, producer_id, t)) for t in topics}
    paths: list[str] = []
    for topic, result in listed.items():
        with contextlib.suppress(NoNodeError):
            for name in sorted(result.get()):
                if partition_number(name) is not None:
                    paths.append(Z.txn_offset_path(group, producer_id, topic, int(name)))
    return set(topics), paths


def read_producer(zk: KazooClient, group: str, producer_id: int) -> PendingTree:
    """``producer_id``'s pending offsets in ``group`` (CorruptZNodeError naming a bad node)."""
    tree = PendingTree()
    tree.exists = zk.exists(Z.txn_producer_path(group, producer_id)) is not None
    tree.indexed = zk.exists(P.group_path(producer_id, group)) is not None
    if not tree.exists:
        return tree
    tree.topics, paths = _partitions(zk, group, producer_id)
    pending = {path: zk.get_async(path) for path in paths}
    for path, result in pending.items():
        try:
            data, stat = result.get()
        except NoNodeError:
            continue
        topic, partition = path.rsplit("/", 2)[-2:]
        node = PendingTxnOffsetZNode.decode(path, bytes(data or b""))
        tree.offsets[(topic, int(partition))] = PendingOffset(node, stat.mzxid)
    return tree


def read_pending(zk: KazooClient, group: str) -> dict[int, PendingTree]:
    """Every producer's pending offsets in ``group``."""
    return {
        int(name): read_producer(zk, group, int(name))
        for name in children(zk, Z.txn_offsets_path(group))
        if name.isdigit()
    }


def committed_state(
    zk: KazooClient, group: str, partitions: Iterable[TopicPartition]
) -> tuple[dict[TopicPartition, int], set[TopicPartition]]:
    """The mzxid of each committed offset node of ``partitions``, and which of them have a
    commit node beside it (read afresh: ZooKeeper-era clients write offsets themselves)."""
    wanted = sorted(set(partitions))
    offsets = {tp: zk.exists_async(Z.offset_path(group, *tp)) for tp in wanted}
    commits = {tp: zk.exists_async(Z.commit_path(group, *tp)) for tp in wanted}
    zxids = {tp: stat.mzxid for tp, r in offsets.items() if (stat := r.get()) is not None}
    return zxids, {tp for tp, r in commits.items() if r.get() is not None}


def producer_groups(zk: KazooClient, producer_id: int) -> dict[str, int]:
    """The groups holding pending offsets of ``producer_id``, with their offsets partition."""
    groups = children(zk, P.producer_path(producer_id))
    pending = {g: zk.get_async(P.group_path(producer_id, g)) for g in groups}
    found: dict[str, int] = {}
    for group, result in pending.items():
        with contextlib.suppress(NoNodeError):
            path = P.group_path(producer_id, group)
            found[group] = P.decode(path, bytes(result.get()[0] or b""))
    return found


def drop_orphan_entry(zk: KazooClient, producer_id: int, group: str) -> None:
    """Forget an index entry whose group was deleted (DeleteGroups removes the group's tree
    only). Unfenced but safe: a coordinator that meanwhile wrote the entry anew expected it
    to exist, so its transaction fails whole and its client retries."""
    with contextlib.suppress(NoNodeError):
        zk.delete(P.group_path(producer_id, group))


def drop_producer_if_empty(zk: KazooClient, producer_id: int) -> None:
    with contextlib.suppress(NoNodeError, NotEmptyError, BadVersionError):
        zk.delete(P.producer_path(producer_id))


class TxnOffsetWrite(GroupWrite):
    """A group write that also changes pending offsets and the producers' index."""

    def __init__(self, claim: Claim) -> None:
        super().__init__(claim)
        self.fresh_parents: set[str] = set()

    def put_pending(
        self, producer_id: int, tp: TopicPartition, node: PendingTxnOffsetZNode, exists: bool
    ) -> None:
        group = self.claim.group
        self.fresh_parents.add(Z.txn_topic_path(group, producer_id, tp[0]))
        self._put(Z.txn_offset_path(group, producer_id, *tp), node.encode(), exists)

    def delete_pending(self, producer_id: int, tp: TopicPartition) -> None:
        self._ops.append(("delete", Z.txn_offset_path(self.claim.group, producer_id, *tp), b""))

    def put_index(self, producer_id: int, offsets_partition: int, exists: bool) -> None:
        self.fresh_parents.add(P.producer_path(producer_id))
        path = P.group_path(producer_id, self.claim.group)
        self._put(path, P.encode(offsets_partition), exists)

    def delete_producer(self, producer_id: int, tree: PendingTree) -> None:
        """The producer's whole subtree in the group, and its index entry."""
        group = self.claim.group
        for tp in sorted(tree.offsets):
            self.delete_pending(producer_id, tp)
        for topic in sorted(tree.topics):
            self._ops.append(("delete", Z.txn_topic_path(group, producer_id, topic), b""))
        if tree.exists:
            self._ops.append(("delete", Z.txn_producer_path(group, producer_id), b""))
        if tree.indexed:
            self._ops.append(("delete", P.group_path(producer_id, group), b""))

    def commit(self, zk: KazooClient, known_parents: set[str]) -> None:
        for parent in sorted(self.fresh_parents):
            zk.ensure_path(parent)
        super().commit(zk, known_parents)
