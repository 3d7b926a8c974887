"""The controller's partition-state and topic-removal writes, as pipelined chunked multis.

Every write is epoch-fenced (``fencing``); partition states are also conditional on the
znode version the controller last read, so a leader's concurrent ISR change is never
overwritten. A batch of thousands of states is split into transactions of a bounded number
of ops, all sent before the first answer is awaited; the partitions of a transaction that
failed are reported back for re-reading and a fresh decision.
"""

from __future__ import annotations

from kazoo.client import KazooClient

from pafka.zk.client import children_many, exists_many
from pafka.zk.znodes import DeleteTopicZNode, PartitionState, TopicConfigZNode, TopicZNode
from services.controller.context import ControllerContext, TopicPartition
from services.controller.fencing import (
    MAX_OPS_PER_MULTI,
    Epoch,
    Op,
    fenced_commit_all,
    fenced_commit_units,
    op_create,
    op_delete,
    op_set,
)


def commit_states(
    zk: KazooClient,
    ctx: ControllerContext,
    epoch: Epoch,
    states: dict[TopicPartition, PartitionState],
    max_ops: int = MAX_OPS_PER_MULTI,
) -> set[TopicPartition]:
    """Write ``states`` (set where the context knows a version, created otherwise) in multis
    of at most ``max_ops``; returns the partitions whose transaction failed. Blocking: run it
    in a worker thread."""
    order = sorted(states)
    new = [tp for tp in order if ctx.partitions[tp].zk_version < 0]
    parents = sorted({TopicZNode.partitions_path(t) for t, _ in new})
    probe = parents + [PartitionState.partition_path(t, p) for t, p in new]
    existing = {path for path, stat in zip(probe, exists_many(zk, probe), strict=True) if stat}
    units: list[list[Op]] = []
    for topic, p in order:
        state = states[(topic, p)]
        path = PartitionState.path(topic, p)
        version = ctx.partitions[(topic, p)].zk_version
        if version >= 0:
            units.append([op_set(path, state.encode(), version)])
            continue
        unit: list[Op] = []
        for parent in (TopicZNode.partitions_path(topic), PartitionState.partition_path(topic, p)):
            if parent not in existing:
                unit.append(op_create(parent))
                existing.add(parent)  # created by this unit, before any later one runs
        unit.append(op_create(path, state.encode()))
        units.append(unit)
    failed = fenced_commit_units(zk, epoch, units, max_ops)
    return {order[i] for i in failed}


def delete_topics_znodes(zk: KazooClient, epoch: Epoch, topics: list[str]) -> None:
    """Remove the topics' assignments, partition states, configs and deletion requests,
    children before parents, in fenced multis; every read pipelined. Blocking."""
    named = [
        (
            topic,
            TopicZNode.path(topic),
            TopicZNode.partitions_path(topic),
            TopicConfigZNode.path(topic),
            DeleteTopicZNode.path(topic),
        )
        for topic in topics
    ]
    probed = [path for _, *paths in named for path in paths]
    exists = {p for p, stat in zip(probed, exists_many(zk, probed), strict=True) if stat}
    parents = [(topic, parts) for topic, _, parts, _, _ in named if parts in exists]
    listed = children_many(zk, [parts for _, parts in parents])
    indexes = {
        topic: sorted(int(c) for c in children or ())
        for (topic, _), children in zip(parents, listed, strict=True)
    }
    state_paths = [PartitionState.path(t, p) for t, found in indexes.items() for p in found]
    states = {p for p, stat in zip(state_paths, exists_many(zk, state_paths), strict=True) if stat}
    ops: list[Op] = []
    for topic, topic_path, parts_path, config_path, request_path in named:
        if topic in indexes:
            for p in indexes[topic]:
                if (state_path := PartitionState.path(topic, p)) in states:
                    ops.append(op_delete(state_path))
                ops.append(op_delete(PartitionState.partition_path(topic, p)))
            ops.append(op_delete(parts_path))
        ops.extend(
            op_delete(path) for path in (topic_path, config_path, request_path) if path in exists
        )
    if ops:
        # One session's requests are applied in order, so a parent in a later multi goes
        # after its children in an earlier one.
        fenced_commit_all(zk, epoch, ops)
