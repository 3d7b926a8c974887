"""OffsetDelete against ``/consumers/{group}/offsets`` (and the commits beside them).

The decision is :func:`pafka.groups.offset_deletion.deletable_offsets`; this module feeds it
the group as it stands (ZooKeeper-coordinated consumers count as a Stable consumer group
subscribed to their topics) and removes the offsets, and any pending in transactions, in one
fenced transaction.
"""

from __future__ import annotations

from pafka.errors import GroupIdNotFoundError, KafkaApiError
from pafka.groups.consumer_protocol import TopicPartition
from pafka.groups.offset_deletion import deletable_offsets
from pafka.groups.state import GroupState
from services.broker.groups import shared_registry
from services.broker.groups.coordinator import GroupCoordinator
from services.broker.groups.txn_offsets import drop_pending

CONSUMER_PROTOCOL_TYPE = "consumer"


async def delete_offsets(
    coordinator: GroupCoordinator, group_id: str, partitions: list[TopicPartition]
) -> dict[TopicPartition, KafkaApiError | None]:
    rt = await coordinator.group(group_id, create=False)
    if rt is None:
        raise GroupIdNotFoundError(f"group {group_id!r} does not exist")
    consumers = await coordinator.zk_consumers(group_id) if not rt.meta.members else None
    async with rt.lock:
        meta = rt.meta
        state, consumer_group = meta.state, meta.protocol_type == CONSUMER_PROTOCOL_TYPE
        subscribed: frozenset[str] | None = frozenset(meta.subscribed_topics())
        if consumers:
            registrations = consumers.members.values()
            state, consumer_group = GroupState.STABLE, True
            # A white or black list may match any topic: its offsets are all in use.
            patterns = any(r.pattern != "static" for r in registrations)
            subscribed = None if patterns else frozenset(t for r in registrations for t in r.topics)
        if not meta.members:
            # Offsets of a member-less group may have moved behind our back (see offsets.py).
            zk = coordinator.zk
            stored = await zk.run(shared_registry.read_offsets, zk.kazoo, group_id)
            rt.offsets, rt.commit_nodes = stored.offsets, stored.commit_nodes
        verdict = deletable_offsets(group_id, state, consumer_group, subscribed, partitions)
        cleared = [tp for tp, error in verdict.items() if error is None]
        doomed = [tp for tp in cleared if tp in rt.offsets]
        # Offsets pending in transactions go too, as in Kafka (GroupMetadata.removeOffsets).
        write = await drop_pending(coordinator, rt, cleared)
        for tp in doomed:
            write.delete_offset(tp, tp in rt.commit_nodes)
        await coordinator.apply(rt, write)
        for tp in doomed:
            del rt.offsets[tp]
            rt.commit_nodes.discard(tp)
    return verdict
