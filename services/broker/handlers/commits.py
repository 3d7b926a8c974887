"""OffsetCommit, TxnOffsetCommit and OffsetFetch: the group's committed positions, through
its coordinator.

Version 0 of OffsetCommit and OffsetFetch is Kafka 0.8.1's ZooKeeper-stored offset, served by
any broker without a coordinator, as Kafka 2.x serves it; version 1 of OffsetCommit carries a
commit time. OffsetFetch v7 may ask for stable offsets only (KIP-447): a partition with offsets
pending in a transaction is then answered UNSTABLE_OFFSET_COMMIT.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pafka.cluster.names import validate_group_id
from pafka.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaApiError,
    PafkaError,
    TopicAuthorizationFailedError,
    UnstableOffsetCommitError,
)
from pafka.groups.consumer_protocol import TopicPartition
from pafka.protocol.messages import response_class
from pafka.security.acls import Operation
from services.broker.groups.offsets import OffsetToCommit
from services.broker.groups.txn_offsets import txn_commit, unstable_partitions
from services.broker.handlers.authorization import (
    allowed_topics,
    require_group,
    require_transactional_id,
)
from services.broker.handlers.context import RequestContext
from services.broker.handlers.groups import error_code

NO_OFFSET = -1
NO_EPOCH = -1
ZOOKEEPER_VERSION = 0
TIMESTAMPED_VERSION = 1
# TxnOffsetCommit: v3 carries the member (KIP-447); below v2, clients from before KAFKA-7296
# mistake COORDINATOR_LOAD_IN_PROGRESS for fatal, so Kafka answers COORDINATOR_NOT_AVAILABLE.
TXN_MEMBER_VERSION = 3
TXN_LOAD_ERROR_VERSION = 2

# Each partition's error (None: committed), or the error of the whole request.
Outcome = dict[TopicPartition, KafkaApiError | None] | PafkaError


async def handle_offset_commit(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    topic_cls = cls.OffsetCommitResponseTopic
    part_cls = topic_cls.OffsetCommitResponsePartition
    wanted: dict[TopicPartition, OffsetToCommit] = {}
    for t in request.topics:
        for p in t.partitions:
            wanted[(t.name, p.partition_index)] = OffsetToCommit(
                offset=int(p.committed_offset),
                leader_epoch=int(getattr(p, "committed_leader_epoch", NO_EPOCH)),
                metadata=p.committed_metadata,
                commit_timestamp_ms=int(p.commit_timestamp)
                if ctx.api_version == TIMESTAMPED_VERSION
                else -1,
            )
    wanted, denied = _readable(ctx, wanted)
    outcome: Outcome
    try:
        require_group(ctx, Operation.READ, request.group_id)
        validate_group_id(request.group_id)
        if ctx.api_version == ZOOKEEPER_VERSION:
            outcome = await ctx.broker.group_offsets.commit_v0(request.group_id, wanted)
        else:
            outcome = await ctx.broker.group_offsets.commit(
                request.group_id,
                int(request.generation_id_or_member_epoch),
                request.member_id or "",
                getattr(request, "group_instance_id", None),
                wanted,
            )
    except PafkaError as exc:
        outcome = exc
    if not isinstance(outcome, PafkaError):
        outcome = {**outcome, **denied}
    topics = _commit_topics(ctx, request, outcome, topic_cls, part_cls, error_code)
    return cls(throttle_time_ms=0, topics=topics)


def _readable(
    ctx: RequestContext, wanted: dict[TopicPartition, OffsetToCommit]
) -> tuple[dict[TopicPartition, OffsetToCommit], dict[TopicPartition, KafkaApiError | None]]:
    """The commits of topics the caller may READ, and the others' TOPIC_AUTHORIZATION_FAILED."""
    readable = allowed_topics(ctx, Operation.READ, (t for t, _ in wanted))
    denied: dict[TopicPartition, KafkaApiError | None] = {
        tp: TopicAuthorizationFailedError(f"not authorized to read {tp[0]}")
        for tp in wanted
        if tp[0] not in readable
    }
    return {tp: o for tp, o in wanted.items() if tp not in denied}, denied


def _commit_topics(
    ctx: RequestContext,
    request: Any,
    outcome: Outcome,
    topic_cls: Any,
    part_cls: Any,
    code_of: Callable[[PafkaError], int],
) -> list[Any]:
    """A commit response's topics: each partition's error, or the whole request's."""
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            err = (
                outcome if isinstance(outcome, PafkaError) else outcome[(t.name, p.partition_index)]
            )
            code = ctx.error(code_of(err)) if err is not None else 0
            parts.append(part_cls(partition_index=p.partition_index, error_code=code))
        topics.append(topic_cls(name=t.name, partitions=parts))
    return topics


async def handle_offset_fetch(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    topic_cls = cls.OffsetFetchResponseTopic
    part_cls = topic_cls.OffsetFetchResponsePartition
    requested: list[TopicPartition] | None = None
    denied: list[TopicPartition] = []
    if request.topics is not None:
        requested = [(t.name, p) for t in request.topics for p in t.partition_indexes]
        describable = allowed_topics(ctx, Operation.DESCRIBE, (t for t, _ in requested))
        denied = [tp for tp in requested if tp[0] not in describable]
    try:
        require_group(ctx, Operation.DESCRIBE, request.group_id)
        validate_group_id(request.group_id)
        if requested is not None:
            requested = [tp for tp in requested if tp not in denied]
        if ctx.api_version == ZOOKEEPER_VERSION:
            found = await ctx.broker.group_offsets.fetch_v0(request.group_id, requested or [])
        else:
            found = await ctx.broker.group_offsets.fetch(request.group_id, requested)
        unstable: set[TopicPartition] = set()
        if getattr(request, "require_stable", False):
            unstable = await unstable_partitions(ctx.broker.groups, request.group_id, found)
    except PafkaError as exc:
        code = ctx.error(error_code(exc))
        # Before v2 there is no top-level error: report it on every partition asked for.
        asked = [*(requested or []), *denied]
        topics = [
            topic_cls(
                name=t,
                partitions=[_fetch_error(part_cls, p, code) for tt, p in asked if tt == t],
            )
            for t in sorted({t for t, _ in asked})
        ]
        return cls(throttle_time_ms=0, topics=topics, error_code=code)
    by_topic: dict[str, list[Any]] = {}
    if requested is None:  # all of the group's offsets: those of hidden topics left out
        describable = allowed_topics(ctx, Operation.DESCRIBE, (t for t, _ in found))
        found = {tp: node for tp, node in found.items() if tp[0] in describable}
    for topic, partition in denied:
        code = ctx.error(TopicAuthorizationFailedError.code)
        by_topic.setdefault(topic, []).append(_fetch_error(part_cls, partition, code))
    for (topic, partition), node in found.items():
        if (topic, partition) in unstable:
            code = ctx.error(UnstableOffsetCommitError.code)
            by_topic.setdefault(topic, []).append(_fetch_error(part_cls, partition, code))
            continue
        by_topic.setdefault(topic, []).append(
            part_cls(
                partition_index=partition,
                committed_offset=node.offset if node else NO_OFFSET,
                committed_leader_epoch=node.leader_epoch if node else NO_EPOCH,
                metadata=node.metadata if node else "",
                error_code=0,
            )
        )
    topics = [topic_cls(name=t, partitions=parts) for t, parts in by_topic.items()]
    return cls(throttle_time_ms=0, topics=topics, error_code=0)


def _fetch_error(part_cls: Any, partition: int, code: int) -> Any:
    """An OffsetFetch partition answered with an error instead of its offset."""
    return part_cls(
        partition_index=partition,
        committed_offset=NO_OFFSET,
        committed_leader_epoch=NO_EPOCH,
        metadata="",
        error_code=code,
    )


async def handle_txn_offset_commit(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    topic_cls = cls.TxnOffsetCommitResponseTopic
    part_cls = topic_cls.TxnOffsetCommitResponsePartition
    wanted = {
        (t.name, p.partition_index): OffsetToCommit(
            offset=int(p.committed_offset),
            leader_epoch=int(getattr(p, "committed_leader_epoch", NO_EPOCH)),
            metadata=p.committed_metadata,
        )
        for t in request.topics
        for p in t.partitions
    }
    member: tuple[str, str | None, int] = ("", None, -1)
    if ctx.api_version >= TXN_MEMBER_VERSION:
        member = (request.member_id or "", request.group_instance_id, int(request.generation_id))
    wanted, denied = _readable(ctx, wanted)
    outcome: Outcome
    try:
        require_transactional_id(ctx, Operation.WRITE, request.transactional_id)
        require_group(ctx, Operation.READ, request.group_id)
        validate_group_id(request.group_id)
        outcome = await txn_commit(
            ctx.broker.group_offsets,
            request.group_id,
            int(request.producer_id),
            int(request.producer_epoch),
            member,
            wanted,
        )
    except PafkaError as exc:
        outcome = exc
    if not isinstance(outcome, PafkaError):
        outcome = {**outcome, **denied}

    def txn_code(err: PafkaError) -> int:
        code = error_code(err)
        if code == CoordinatorLoadInProgressError.code and (
            ctx.api_version < TXN_LOAD_ERROR_VERSION
        ):
            return CoordinatorNotAvailableError.code
        return code

    topics = _commit_topics(ctx, request, outcome, topic_cls, part_cls, txn_code)
    return cls(throttle_time_ms=0, topics=topics)
