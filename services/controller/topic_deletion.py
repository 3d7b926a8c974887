"""Deleting the topics of one request together (Kafka's TopicDeletionManager, batched).

Every topic named in ``/admin/delete_topics`` at once goes through the replica states
(OfflineReplica, ReplicaDeletionStarted, then ReplicaDeletionSuccessful and NonExistent) and the
partition states (Offline, NonExistent) together; each live broker hears one StopReplica with
delete for all its replicas of them, and one UpdateMetadata names them all; ZooKeeper's nodes
go in pipelined reads and chunked fenced multis (``state_writes.delete_topics_znodes``). Topic
by topic, 200 deletions cost 200 rounds of reads and a multi and two requests to every broker
each: seconds in which the controller's event queue, topic creation included, waited.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pafka.cluster.states import PartitionState as PState
from pafka.cluster.states import ReplicaState as RState
from pafka.cluster.states import partition_transition, replica_transition
from pafka.control.messages import StopReplica
from services.controller.state_writes import delete_topics_znodes

if TYPE_CHECKING:
    from services.controller.partitions import PartitionManager

log = logging.getLogger(__name__)
# Topics named in the log line of a deletion; the count is always given.
LOGGED_NAMES = 10


async def delete_topics(m: PartitionManager, topics: list[str]) -> None:
    """Delete ``topics`` (marked as being deleted until their nodes are gone)."""
    if not topics:
        return
    m.ctx.deleting.update(topics)
    ctx = m.ctx
    partitions = [tp for topic in topics for tp in ctx.topic_partitions(topic)]
    for tp in partitions:
        for r in ctx.partitions[tp].replicas:
            key = (tp[0], tp[1], r)
            current = ctx.replica_states.get(key, RState.ONLINE)
            if current is not RState.OFFLINE:
                current = replica_transition(current, RState.OFFLINE)
            ctx.replica_states[key] = replica_transition(current, RState.DELETION_STARTED)
    for broker_id in ctx.live:
        mine = tuple(tp for tp in partitions if broker_id in ctx.partitions[tp].replicas)
        if mine:
            m.send(broker_id, StopReplica(m.controller_id, m.epoch.epoch, mine, delete=True))
    await m.zk.run(delete_topics_znodes, m.zk.kazoo, m.epoch, topics)
    for tp in partitions:
        entry = ctx.partitions.pop(tp)
        if entry.phase is not PState.NON_EXISTENT:
            if entry.phase is not PState.OFFLINE:
                entry.phase = partition_transition(entry.phase, PState.OFFLINE)
            partition_transition(entry.phase, PState.NON_EXISTENT)
        for r in entry.replicas:
            key = (tp[0], tp[1], r)
            state = replica_transition(ctx.replica_states[key], RState.DELETION_SUCCESSFUL)
            replica_transition(state, RState.NON_EXISTENT)
            ctx.replica_states.pop(key, None)
    for topic in topics:
        ctx.topic_ids.pop(topic, None)
        ctx.deleting.discard(topic)
        ctx.unclean_topics.discard(topic)
    m._update_metadata(ctx.live, partitions=[], deleted=topics)
    named = ", ".join(topics[:LOGGED_NAMES]) + (", ..." if len(topics) > LOGGED_NAMES else "")
    log.info("deleted %d topic%s: %s", len(topics), "" if len(topics) == 1 else "s", named)
