"""Metadata: brokers, controller and topic/partition leadership, from the metadata cache."""

from __future__ import annotations

import uuid
from typing import Any

from pafka.cluster.names import validate_topic_name
from pafka.errors import (
    InvalidTopicError,
    LeaderNotAvailableError,
    PafkaError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from pafka.protocol.messages import response_class
from pafka.security.acls import CLUSTER_NAME, Operation, ResourceType
from services.broker.handlers.authorization import (
    allowed_topics,
    authorized_operations,
    cluster_allowed,
    require_topic,
    topic_allowed,
)
from services.broker.handlers.context import RequestContext

NULL_UUID = uuid.UUID(int=0)


async def handle_metadata(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    cache = broker.metadata
    cls = response_class(ctx.api_key, ctx.api_version)
    # Each client is told the endpoints of the listener it came through.
    brokers = [
        cls.MetadataResponseBroker(node_id=b.id, host=address[0], port=address[1], rack=b.rack)
        for b in sorted(cache.brokers.values(), key=lambda b: b.id)
        if (address := b.address(ctx.listener)) is not None
    ]
    requested = request.topics
    if requested is None or (ctx.api_version == 0 and not requested):
        # All topics: those the caller may not DESCRIBE are left out, not refused (as Kafka).
        visible = allowed_topics(ctx, Operation.DESCRIBE, cache.topics)
        names: list[str | None] = list(sorted(visible))
        ids: list[uuid.UUID | None] = [None] * len(names)
    else:
        names = [getattr(t, "name", None) for t in requested]
        ids = [getattr(t, "topic_id", None) for t in requested]
    # Before v4 the request cannot say, and Kafka creates missing topics when enabled.
    allow_create = broker.settings.auto_create_topics and (
        ctx.api_version < 4 or bool(request.allow_auto_topic_creation)
    )
    with_operations = bool(getattr(request, "include_topic_authorized_operations", False))
    topics = []
    for name, topic_id in zip(names, ids, strict=True):
        if name is None and topic_id not in (None, NULL_UUID):
            assert topic_id is not None
            name = cache.topic_name(topic_id)
            if name is None:
                topics.append(_topic_error(ctx, cls, None, topic_id, UnknownTopicIdError()))
                continue
        assert name is not None
        try:
            if requested is not None:
                require_topic(ctx, Operation.DESCRIBE, name)
            validate_topic_name(name)
        except (InvalidTopicError, TopicAuthorizationFailedError) as exc:
            topics.append(_topic_error(ctx, cls, name, None, exc))
            continue
        if name not in cache.topics:
            error: PafkaError = UnknownTopicOrPartitionError()
            if allow_create and not _may_create(ctx, name):
                error = TopicAuthorizationFailedError(f"not authorized to create topic {name}")
            elif allow_create:
                error = await broker.auto_topics.create(name)
            topics.append(_topic_error(ctx, cls, name, None, error))
            continue
        topics.append(_topic(cls, ctx, name, with_operations))
    cluster_operations = None
    if getattr(request, "include_cluster_authorized_operations", False):
        cluster_operations = authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
    return cls(
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=broker.cluster_id,
        # Clients send admin requests (CreateTopics, ...) to the "controller" they are told of,
        # and it must be a broker they know. Any broker serves them (they become ZooKeeper
        # writes the real controller acts on), so each broker names itself; the controller
        # service's own id is no broker's.
        controller_id=broker.settings.broker_id,
        topics=topics,
        authorized_operations=cluster_operations,
    )


def _may_create(ctx: RequestContext, name: str) -> bool:
    """Auto-creation needs CREATE on the cluster or on the topic (Kafka 2.8)."""
    return cluster_allowed(ctx, Operation.CREATE) or topic_allowed(ctx, Operation.CREATE, name)


def _topic_error(
    ctx: RequestContext, cls: Any, name: str | None, topic_id: uuid.UUID | None, exc: PafkaError
) -> Any:
    return cls.MetadataResponseTopic(
        error_code=ctx.error(exc.code), name=name, topic_id=topic_id or NULL_UUID, partitions=[]
    )


def _topic(cls: Any, ctx: RequestContext, name: str, with_operations: bool) -> Any:
    cache = ctx.broker.metadata
    live = cache.brokers
    partitions = []
    for index, info in sorted(cache.topics[name].items()):
        offline = [r for r in info.replicas if r not in live]
        error = LeaderNotAvailableError.code if info.leader < 0 or info.leader not in live else 0
        partitions.append(
            cls.MetadataResponseTopic.MetadataResponsePartition(
                error_code=ctx.error(error),
                partition_index=index,
                leader_id=info.leader,
                leader_epoch=info.leader_epoch,
                replica_nodes=list(info.replicas),
                isr_nodes=list(info.isr),
                offline_replicas=offline,
            )
        )
    return cls.MetadataResponseTopic(
        error_code=0,
        name=name,
        topic_id=cache.topic_ids.get(name, NULL_UUID),
        is_internal=False,
        partitions=partitions,
        authorized_operations=(
            authorized_operations(ctx, ResourceType.TOPIC, name) if with_operations else None
        ),
    )
