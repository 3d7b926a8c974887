"""CreateTopics, DeleteTopics, CreatePartitions and DescribeConfigs.

The broker writes the request into ZooKeeper (as Kafka 2.x brokers do through AdminZkClient)
and the controller acts on it; the response waits, up to the request's timeout, until this
broker's metadata shows the outcome (every partition with a leader), so a client can use a topic
as soon as it is told it exists; REQUEST_TIMED_OUT says the change was written but not yet seen.
As in Kafka, a timeout of 0 or less asks for no wait: the answer comes once ZooKeeper is
written, and other brokers' metadata may lag this one's by a moment either way (clients retry
UNKNOWN_TOPIC_OR_PARTITION, as Kafka's do).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from pafka.admin import topics as admin
from pafka.cluster.topic_config import describe
from pafka.errors import (
    InvalidRequestError,
    PafkaError,
    RequestTimedOutError,
    TopicDeletionDisabledError,
    UnknownTopicOrPartitionError,
)
from pafka.protocol.messages import response_class
from pafka.security.acls import Operation
from services.broker.handlers.authorization import (
    cluster_allowed,
    require_cluster,
    require_topic,
)
from services.broker.handlers.context import RequestContext

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
POLL_INTERVAL_S = 0.05


async def _wait_for(done: Callable[[], bool], timeout_ms: int) -> None:
    if timeout_ms <= 0:  # Kafka's "do not wait": answered once ZooKeeper is written
        return
    deadline = time.monotonic() + timeout_ms / 1000
    while not done():
        if time.monotonic() >= deadline:
            raise RequestTimedOutError("the controller has not finished the change yet")
        await asyncio.sleep(POLL_INTERVAL_S)


def _has_leaders(ctx: RequestContext, name: str, partitions: int) -> Callable[[], bool]:
    def check() -> bool:
        parts = ctx.broker.metadata.topics.get(name, {})
        return len(parts) >= partitions and all(p.leader >= 0 for p in parts.values())

    return check


def _is_gone(ctx: RequestContext, name: str) -> Callable[[], bool]:
    return lambda: name not in ctx.broker.metadata.topics


async def handle_create_topics(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    cls = response_class(ctx.api_key, ctx.api_version)
    result_cls = cls.CreatableTopicResult
    results = []
    named = Counter(t.name for t in request.topics)
    # CREATE on the cluster creates any topic; without it, CREATE on each topic (Kafka 2.8).
    cluster_create = cluster_allowed(ctx, Operation.CREATE)
    for t in request.topics:
        partitions = (
            t.num_partitions if t.num_partitions > 0 else broker.settings.default_partitions
        )
        rf = (
            t.replication_factor
            if t.replication_factor > 0
            else broker.settings.default_replication_factor
        )
        configs = {c.name: c.value for c in t.configs if c.value is not None}
        manual = {a.partition_index: tuple(a.broker_ids) for a in t.assignments} or None
        try:
            if not cluster_create:
                require_topic(ctx, Operation.CREATE, t.name)
            if named[t.name] > 1:
                # Kafka refuses every entry of a name given twice and creates none of them.
                raise InvalidRequestError("found multiple entries for this topic")
            if manual is not None and (t.num_partitions != -1 or t.replication_factor != -1):
                raise InvalidRequestError(
                    "give either a replica assignment or partitions and replication factor"
                )
            node = await broker.zk.run(
                admin.create_topic,
                broker.zk.kazoo,
                t.name,
                partitions,
                rf,
                configs,
                manual,
                bool(request.validate_only),
            )
            if not request.validate_only:
                await _wait_for(_has_leaders(ctx, t.name, len(node.partitions)), request.timeout_ms)
            results.append(
                result_cls(
                    name=t.name,
                    topic_id=node.topic_id,
                    error_code=0,
                    error_message=None,  # Kafka's success carries a null message, not ""
                    num_partitions=len(node.partitions),
                    replication_factor=len(next(iter(node.partitions.values()))),
                    configs=None,
                )
            )
        except PafkaError as exc:
            results.append(
                result_cls(name=t.name, error_code=ctx.error(exc.code), error_message=exc.message)
            )
    return cls(throttle_time_ms=0, topics=results)


async def handle_delete_topics(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    cls = response_class(ctx.api_key, ctx.api_version)
    result_cls = cls.DeletableTopicResult
    if ctx.api_version >= 6:
        names = [t.name or broker.metadata.topic_name(t.topic_id) for t in request.topics]
    else:
        names = list(request.topic_names)
    results = []
    for name in names:
        try:
            if name is None:
                raise UnknownTopicOrPartitionError("unknown topic id")
            require_topic(ctx, Operation.DELETE, name)
            if not broker.settings.delete_topic_enable:
                # TOPIC_DELETION_DISABLED came with v3; older clients get INVALID_REQUEST.
                if ctx.api_version < 3:
                    raise InvalidRequestError("topic deletion is disabled on this cluster")
                raise TopicDeletionDisabledError()
            await broker.zk.run(admin.delete_topic, broker.zk.kazoo, name)
            await _wait_for(_is_gone(ctx, name), request.timeout_ms)
            results.append(result_cls(name=name, error_code=0))
        except PafkaError as exc:
            results.append(
                result_cls(name=name, error_code=ctx.error(exc.code), error_message=exc.message)
            )
    return cls(throttle_time_ms=0, responses=results)


async def handle_create_partitions(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    cls = response_class(ctx.api_key, ctx.api_version)
    result_cls = cls.CreatePartitionsTopicResult
    results = []
    for t in request.topics:
        try:
            require_topic(ctx, Operation.ALTER, t.name)
            new_replicas = None
            if t.assignments is not None:
                new_replicas = [tuple(a.broker_ids) for a in t.assignments]
            await broker.zk.run(
                admin.add_partitions,
                broker.zk.kazoo,
                t.name,
                t.count,
                new_replicas,
                bool(request.validate_only),
            )
            if not request.validate_only:
                await _wait_for(_has_leaders(ctx, t.name, t.count), request.timeout_ms)
            results.append(result_cls(name=t.name, error_code=0))
        except PafkaError as exc:
            results.append(
                result_cls(name=t.name, error_code=ctx.error(exc.code), error_message=exc.message)
            )
    return cls(throttle_time_ms=0, results=results)


async def handle_describe_configs(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    cls = response_class(ctx.api_key, ctx.api_version)
    result_cls = cls.DescribeConfigsResult
    entry_cls = result_cls.DescribeConfigsResourceResult
    results = []
    for res in request.resources:
        keys = set(res.configuration_keys) if res.configuration_keys is not None else None
        try:
            if res.resource_type == TOPIC_RESOURCE:
                require_topic(ctx, Operation.DESCRIBE_CONFIGS, res.resource_name)
                overrides = await broker.topic_overrides(res.resource_name)
                config = await broker.topic_config(res.resource_name)
                entries = describe(config, overrides)
            elif res.resource_type == BROKER_RESOURCE:
                require_cluster(ctx, Operation.DESCRIBE_CONFIGS)
                entries = broker.describe_broker_config()
            else:
                raise InvalidRequestError(f"resource type {res.resource_type} is not supported")
            configs = [
                entry_cls(
                    name=e.name,
                    value=e.value,
                    read_only=e.read_only,
                    config_source=e.source,
                    is_default=e.is_default,
                    is_sensitive=e.sensitive,
                    synonyms=[],
                    config_type=e.type_id,
                )
                for e in entries
                if keys is None or e.name in keys
            ]
            results.append(
                result_cls(
                    error_code=0,
                    resource_type=res.resource_type,
                    resource_name=res.resource_name,
                    configs=configs,
                )
            )
        except PafkaError as exc:
            results.append(
                result_cls(
                    error_code=ctx.error(exc.code),
                    error_message=exc.message,
                    resource_type=res.resource_type,
                    resource_name=res.resource_name,
                    configs=[],
                )
            )
    return cls(throttle_time_ms=0, results=results)
