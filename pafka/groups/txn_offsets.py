"""Offsets committed inside a transaction (KIP-98, KIP-447), the pure decisions.

A TxnOffsetCommit leaves its offsets *pending* for (group, producer id) until the
transaction's marker: a commit marker makes them the group's committed offsets, an abort marker
discards them. As in Kafka's ``GroupMetadata.completePendingTxnOffsetCommit``, a pending offset
becomes the committed one only if it was written after the partition's current commit: a plain
OffsetCommit that came in between is newer and stays. Order is ZooKeeper's: every write of a
group is one transaction, so a node's mzxid says when it was written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pafka.errors import (
    FencedInstanceIdError,
    IllegalGenerationError,
    KafkaApiError,
    UnknownMemberIdError,
)
from pafka.groups.consumer_protocol import TopicPartition
from pafka.groups.membership import GroupMetadata
from pafka.zk.znodes import CommittedOffsetZNode, PendingTxnOffsetZNode

NO_GENERATION = -1


@dataclass(frozen=True)
class PendingOffset:
    """A pending offset and the zxid of the write that left it."""

    node: PendingTxnOffsetZNode
    zxid: int


def txn_commit_error(
    meta: GroupMetadata, member_id: str, instance_id: str | None, generation: int
) -> KafkaApiError | None:
    """TxnOffsetCommit v3's member checks, in Kafka 2.8's order (``doTxnCommitOffsets``): a
    static instance now held by another member id is fenced; a member id, when given, must be a
    member; a generation, when given (not -1), must be the current one. Requests below v3
    carry none of them, and a group with no members accepts the empty member id."""
    if instance_id is not None:
        static = meta.member_by_instance(instance_id)
        if static is not None and static.member_id != member_id:
            return FencedInstanceIdError(f"instance {instance_id!r} has joined as another member")
    if member_id and member_id not in meta.members:
        return UnknownMemberIdError(f"{member_id!r} is not a member of {meta.group_id!r}")
    if generation >= 0 and generation != meta.generation:
        return IllegalGenerationError(
            f"generation {generation} is not {meta.group_id!r}'s current {meta.generation}"
        )
    return None


def stale_epoch(pending: Iterable[PendingTxnOffsetZNode], producer_epoch: int) -> bool:
    """Whether ``producer_epoch`` is older than one the producer already committed offsets
    with: such a request (or marker) comes from a fenced incarnation of the producer."""
    return any(node.producer_epoch > producer_epoch for node in pending)


def offsets_to_commit(
    pending: Mapping[TopicPartition, PendingOffset], committed_zxids: Mapping[TopicPartition, int]
) -> dict[TopicPartition, CommittedOffsetZNode]:
    """What a commit marker writes: each pending offset that is newer than the partition's
    committed offset (``committed_zxids``: the mzxid of each committed offset node)."""
    return {
        tp: entry.node.committed()
        for tp, entry in sorted(pending.items())
        if committed_zxids.get(tp, -1) < entry.zxid
    }
