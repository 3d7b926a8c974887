"""OffsetDelete (v0, Kafka 2.4+): remove a group's committed offsets of some partitions."""

from __future__ import annotations

from typing import Any

from pafka.cluster.names import validate_group_id
from pafka.errors import (
    KafkaApiError,
    PafkaError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from pafka.groups.consumer_protocol import TopicPartition
from pafka.protocol.messages import response_class
from pafka.security.acls import Operation
from services.broker.groups.offset_deletion import delete_offsets
from services.broker.handlers.authorization import allowed_topics, require_group
from services.broker.handlers.context import RequestContext
from services.broker.handlers.groups import error_code


async def handle_offset_delete(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    topic_cls = cls.OffsetDeleteResponseTopic
    part_cls = topic_cls.OffsetDeleteResponsePartition
    requested = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    # As Kafka: partitions of unknown topics are answered here, the rest go to the group.
    outcome: dict[TopicPartition, KafkaApiError | None] = {
        tp: UnknownTopicOrPartitionError(f"{tp[0]}-{tp[1]} does not exist")
        for tp in requested
        if ctx.broker.groups.metadata.partition(*tp) is None
    }
    readable = allowed_topics(ctx, Operation.READ, (t for t, _ in requested))
    outcome |= {
        tp: TopicAuthorizationFailedError(f"not authorized to read {tp[0]}")
        for tp in requested
        if tp[0] not in readable
    }
    known = [tp for tp in requested if tp not in outcome]
    try:
        require_group(ctx, Operation.DELETE, request.group_id)
        validate_group_id(request.group_id)
        outcome |= await delete_offsets(ctx.broker.groups, request.group_id, known)
    except PafkaError as exc:
        return cls(throttle_time_ms=0, error_code=ctx.error(error_code(exc)), topics=[])
    topics = [
        topic_cls(
            name=t.name,
            partitions=[
                part_cls(
                    partition_index=p.partition_index,
                    error_code=_code(ctx, outcome.get((t.name, p.partition_index))),
                )
                for p in t.partitions
            ],
        )
        for t in request.topics
    ]
    return cls(throttle_time_ms=0, error_code=0, topics=topics)


def _code(ctx: RequestContext, error: KafkaApiError | None) -> int:
    return 0 if error is None else ctx.error(error_code(error))
