"""OffsetCommit and OffsetFetch: the group's committed positions, through its coordinator.

Version 0 of both is Kafka 0.8.1's ZooKeeper-stored offset, served by any broker without a
coordinator, as Kafka 2.x serves it; version 1 of OffsetCommit carries a commit time.
"""

from __future__ import annotations

from typing import Any

from pafka.cluster.names import validate_group_id
from pafka.errors import KafkaApiError, PafkaError
from pafka.groups.consumer_protocol import TopicPartition
from pafka.protocol.messages import response_class
from services.broker.groups.offsets import OffsetToCommit
from services.broker.handlers.context import RequestContext
from services.broker.handlers.groups import error_code

NO_OFFSET = -1
NO_EPOCH = -1
ZOOKEEPER_VERSION = 0
TIMESTAMPED_VERSION = 1


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
    outcome: dict[TopicPartition, KafkaApiError | None] | PafkaError
    try:
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
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            err = (
                outcome if isinstance(outcome, PafkaError) else outcome[(t.name, p.partition_index)]
            )
            code = ctx.error(error_code(err)) if err is not None else 0
            parts.append(part_cls(partition_index=p.partition_index, error_code=code))
        topics.append(topic_cls(name=t.name, partitions=parts))
    return cls(throttle_time_ms=0, topics=topics)


async def handle_offset_fetch(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    topic_cls = cls.OffsetFetchResponseTopic
    part_cls = topic_cls.OffsetFetchResponsePartition
    requested: list[TopicPartition] | None = None
    if request.topics is not None:
        requested = [(t.name, p) for t in request.topics for p in t.partition_indexes]
    try:
        validate_group_id(request.group_id)
        if ctx.api_version == ZOOKEEPER_VERSION:
            found = await ctx.broker.group_offsets.fetch_v0(request.group_id, requested or [])
        else:
            found = await ctx.broker.group_offsets.fetch(request.group_id, requested)
    except PafkaError as exc:
        code = ctx.error(error_code(exc))
        # Before v2 there is no top-level error: report it on every partition.
        topics = [
            topic_cls(
                name=t,
                partitions=[
                    part_cls(
                        partition_index=p,
                        committed_offset=NO_OFFSET,
                        committed_leader_epoch=NO_EPOCH,
                        metadata="",
                        error_code=code,
                    )
                    for tt, p in requested or []
                    if tt == t
                ],
            )
            for t in sorted({t for t, _ in requested or []})
        ]
        return cls(throttle_time_ms=0, topics=topics, error_code=code)
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), node in found.items():
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
