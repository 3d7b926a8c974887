"""AlterPartitionReassignments and ListPartitionReassignments, run by the active controller.

The broker forwards them (``controller_link``): the controller starts, changes or cancels
(null replicas) each partition's reassignment on top of ``/admin/reassign_partitions`` and
answers per partition; listing reports the ongoing ones with the replicas being added and
removed. A failure of the whole request is the top-level error, as in Kafka.
"""

from __future__ import annotations

from typing import Any

from pafka.errors import PafkaError, wire_error
from pafka.protocol.messages import response_class
from pafka.security.acls import Operation
from services.broker.controller_link import call_controller
from services.broker.handlers.authorization import require_cluster
from services.broker.handlers.context import RequestContext


async def handle_alter_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    topic_cls = cls.ReassignableTopicResponse
    part_cls = topic_cls.ReassignablePartitionResponse
    partitions = [
        [t.name, p.partition_index, None if p.replicas is None else list(p.replicas)]
        for t in request.topics
        for p in t.partitions
    ]
    try:
        require_cluster(ctx, Operation.ALTER)
        answer = await call_controller(
            ctx.broker.zk,
            "/reassignments",
            {"partitions": partitions},
            request.timeout_ms,
            secret=ctx.broker.settings.control_secret,
        )
    except PafkaError as exc:
        error = wire_error(exc)
        return cls(
            throttle_time_ms=0,
            error_code=ctx.error(error.code),
            error_message=error.message,
            responses=[],
        )
    by_topic: dict[str, list[Any]] = {}
    for topic, partition, code, message in answer["results"]:
        by_topic.setdefault(topic, []).append(
            part_cls(partition_index=partition, error_code=ctx.error(code), error_message=message)
        )
    return cls(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        responses=[topic_cls(name=t, partitions=ps) for t, ps in by_topic.items()],
    )


async def handle_list_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    topic_cls = cls.OngoingTopicReassignment
    part_cls = topic_cls.OngoingPartitionReassignment
    wanted = None
    if request.topics is not None:
        wanted = [[t.name, p] for t in request.topics for p in t.partition_indexes]
    try:
        require_cluster(ctx, Operation.DESCRIBE)
        answer = await call_controller(
            ctx.broker.zk,
            "/reassignments/list",
            {"partitions": wanted},
            request.timeout_ms,
            secret=ctx.broker.settings.control_secret,
        )
    except PafkaError as exc:
        error = wire_error(exc)
        return cls(
            throttle_time_ms=0,
            error_code=ctx.error(error.code),
            error_message=error.message,
            topics=[],
        )
    by_topic: dict[str, list[Any]] = {}
    for r in answer["reassignments"]:
        by_topic.setdefault(r["topic"], []).append(
            part_cls(
                partition_index=r["partition"],
                replicas=r["replicas"],
                adding_replicas=r["adding"],
                removing_replicas=r["removing"],
            )
        )
    return cls(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        topics=[topic_cls(name=t, partitions=ps) for t, ps in by_topic.items()],
    )
