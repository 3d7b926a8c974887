"""Transactional offsets in the group coordinator: TxnOffsetCommit, OffsetFetch's
``require_stable`` and the markers that complete a transaction's offsets (KIP-98, KIP-447).

TxnOffsetCommit leaves offsets pending for (group, producer id) in ZooKeeper
(:mod:`.txn_offset_store`), invisible to OffsetFetch. The transaction coordinator's marker for
the group's ``__consumer_offsets`` partition then commits them (one fenced write making them
the committed offsets, unless a plain commit came after them: :mod:`pafka.groups.txn_offsets`)
or discards them. A retried marker finds nothing pending and changes nothing.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from pafka.errors import (
    CoordinationError,
    CoordinatorNotAvailableError,
    CorruptZNodeError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    KafkaApiError,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
    PafkaError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from pafka.groups.consumer_protocol import TopicPartition
from pafka.groups.offsets_partition import OFFSETS_TOPIC_PARTITIONS, offsets_partition
from pafka.groups.state import GroupState
from pafka.groups.txn_offsets import offsets_to_commit, stale_epoch, txn_commit_error
from pafka.zk.znodes import PendingTxnOffsetZNode
from services.broker.groups import txn_offset_store as txn_store
from services.broker.groups.coordinator import GroupCoordinator
from services.broker.groups.offsets import GroupOffsets, OffsetToCommit
from services.broker.groups.runtime import GroupRuntime

if TYPE_CHECKING:
    from services.broker.broker import Broker

log = logging.getLogger(__name__)
T = TypeVar("T")


async def txn_commit(
    offsets: GroupOffsets,
    group_id: str,
    producer_id: int,
    producer_epoch: int,
    member: tuple[str, str | None, int],
    wanted: dict[TopicPartition, OffsetToCommit],
) -> dict[TopicPartition, KafkaApiError | None]:
    """TxnOffsetCommit: ``member`` is (member id, group instance id, generation), v3's checks
    (empty, None and -1 below v3). Per-partition outcome; a whole-request refusal is raised."""
    if producer_id < 0:
        # Its pending offsets would be keyed by a producer no marker can name.
        raise InvalidProducerIdMappingError(f"producer id {producer_id} is not a producer's")
    coordinator = offsets.coordinator
    rt = await coordinator.group(group_id, create=True)
    assert rt is not None  # created when missing
    async with rt.lock:
        _still_held(coordinator, rt)
        refusal = txn_commit_error(rt.meta, *member)
        if refusal is not None:
            raise refusal
        tree = await _logged(coordinator, group_id, txn_store.read_producer, producer_id)
        if stale_epoch((e.node for e in tree.offsets.values()), producer_epoch):
            raise InvalidProducerEpochError(
                f"producer {producer_id} committed offsets of {group_id!r} with a newer epoch"
            )
        # No ownership check: Kafka takes a transaction's offsets for any partition.
        results, valid = offsets.screen(None, wanted, None)
        write = txn_store.TxnOffsetWrite(rt.claim)
        for tp, entry in valid.items():
            node = PendingTxnOffsetZNode(
                entry.offset, producer_epoch, entry.leader_epoch, entry.metadata or ""
            )
            write.put_pending(producer_id, tp, node, tp in tree.offsets)
        if write:
            write.put_index(producer_id, offsets_partition(group_id), tree.indexed)
            await coordinator.apply(rt, write)
    return results


async def unstable_partitions(
    coordinator: GroupCoordinator, group_id: str, partitions: Iterable[TopicPartition]
) -> set[TopicPartition]:
    """Those of ``partitions`` with offsets pending in a transaction (OffsetFetch answers
    them UNSTABLE_OFFSET_COMMIT when asked for stable offsets only)."""
    rt = await coordinator.group(group_id, create=False)
    if rt is None:
        return set()
    pending = await _logged(coordinator, group_id, txn_store.read_pending)
    held = {tp for tree in pending.values() for tp in tree.offsets}
    return held & set(partitions)


async def drop_pending(
    coordinator: GroupCoordinator, rt: GroupRuntime, partitions: Iterable[TopicPartition]
) -> txn_store.TxnOffsetWrite:
    """A write (to extend and apply under the group's lock) deleting every producer's pending
    offsets of ``partitions``, as OffsetDelete removes them in Kafka."""
    pending = await _logged(coordinator, rt.group_id, txn_store.read_pending)
    write = txn_store.TxnOffsetWrite(rt.claim)
    doomed = set(partitions)
    for producer_id, tree in sorted(pending.items()):
        for tp in sorted(doomed & set(tree.offsets)):
            write.delete_pending(producer_id, tp)
    return write


async def complete_txn_offsets(
    broker: Broker,
    producer_id: int,
    producer_epoch: int,
    committed: bool,
    offsets_partition: int,
) -> int:
    """A WriteTxnMarkers marker for ``__consumer_offsets``-``offsets_partition``: commit or
    discard ``producer_id``'s pending offsets in every group of that partition holding some.
    Returns the partition's wire error code: 0; NOT_LEADER_OR_FOLLOWER (retriable, as Kafka's
    marker sender knows it) when such a group is coordinated elsewhere or ZooKeeper cannot
    be written now; INVALID_PRODUCER_EPOCH for a marker older than the offsets' epoch."""
    return await complete_producer_offsets(
        broker.groups, producer_id, producer_epoch, committed, offsets_partition
    )


async def complete_producer_offsets(
    coordinator: GroupCoordinator,
    producer_id: int,
    producer_epoch: int,
    committed: bool,
    partition: int,
) -> int:
    if not 0 <= partition < OFFSETS_TOPIC_PARTITIONS:
        return UnknownTopicOrPartitionError.code
    zk = coordinator.zk
    try:
        coordinator.require_zookeeper(f"producer {producer_id}")
        groups = await zk.run(txn_store.producer_groups, zk.kazoo, producer_id)
    except PafkaError as exc:
        log.warning("markers of producer %d: cannot read its groups: %s", producer_id, exc)
        return NotLeaderOrFollowerError.code
    errors: list[KafkaApiError] = []
    for group_id, group_partition in sorted(groups.items()):
        if group_partition != partition:
            continue
        try:
            await _complete_group(coordinator, group_id, producer_id, producer_epoch, committed)
        except CorruptZNodeError as exc:  # before CoordinationError, its base
            log.warning("group %r cannot complete producer %d: %s", group_id, producer_id, exc)
            errors.append(UnknownServerError(str(exc)))
        except (NotCoordinatorError, CoordinatorNotAvailableError, CoordinationError) as exc:
            log.info("marker of producer %d for group %r: %s", producer_id, group_id, exc)
            errors.append(NotLeaderOrFollowerError(str(exc)))
        except KafkaApiError as exc:
            errors.append(exc)
    if not errors:
        with contextlib.suppress(PafkaError):
            await zk.run(txn_store.drop_producer_if_empty, zk.kazoo, producer_id)
        return 0
    # A fenced marker is final (the sender gives it up); anything else is worth retrying.
    fenced = [e for e in errors if isinstance(e, InvalidProducerEpochError)]
    return (fenced or errors)[0].code


async def _complete_group(
    coordinator: GroupCoordinator,
    group_id: str,
    producer_id: int,
    producer_epoch: int,
    committed: bool,
) -> None:
    zk = coordinator.zk
    rt = await coordinator.group(group_id, create=False)
    if rt is None:
        await zk.run(txn_store.drop_orphan_entry, zk.kazoo, producer_id, group_id)
        return
    async with rt.lock:
        _still_held(coordinator, rt)
        tree = await zk.run(txn_store.read_producer, zk.kazoo, group_id, producer_id)
        if stale_epoch((e.node for e in tree.offsets.values()), producer_epoch):
            raise InvalidProducerEpochError(
                f"marker epoch {producer_epoch} of producer {producer_id} is older than its "
                f"offsets in {group_id!r}"
            )
        write = txn_store.TxnOffsetWrite(rt.claim)
        applied = {}
        if committed and tree.offsets:
            zxids, commit_nodes = await zk.run(
                txn_store.committed_state, zk.kazoo, group_id, tree.offsets
            )
            applied = offsets_to_commit(tree.offsets, zxids)
            for tp, node in applied.items():
                write.put_offset(tp, node, tp in zxids, tp in commit_nodes)
        write.delete_producer(producer_id, tree)
        await coordinator.apply(rt, write)
        rt.offsets.update(applied)
    log.info(
        "%s %d pending offset(s) of producer %d in group %r (%d applied)",
        "committed" if committed else "aborted",
        len(tree.offsets),
        producer_id,
        group_id,
        len(applied),
    )


async def _logged(
    coordinator: GroupCoordinator,
    group_id: str,
    read: Callable[..., T],
    *args: Any,
) -> T:
    """A read of the group's pending offsets; a malformed node is logged once per request
    that met it, naming the node, as for the group's other nodes."""
    zk = coordinator.zk
    try:
        return await zk.run(read, zk.kazoo, group_id, *args)
    except CorruptZNodeError as exc:
        log.warning("group %r cannot be used: %s", group_id, exc)
        raise


def _still_held(coordinator: GroupCoordinator, rt: GroupRuntime) -> None:
    """The group may have been dropped while this request waited for its lock."""
    if coordinator.groups.get(rt.group_id) is not rt or rt.meta.state is GroupState.DEAD:
        raise CoordinatorNotAvailableError(f"group {rt.group_id!r} is being reloaded")
