"""DeleteRecords: the leader moves a partition's log start offset forward.

Kafka's rules: only the leader answers; offset -1 means the high watermark; an offset below 0
or above the high watermark is OFFSET_OUT_OF_RANGE; a topic without the ``delete`` cleanup
policy refuses with POLICY_VIOLATION. Whole segments below the new start are deleted, records
between a segment's base and the start become unreadable at once, and the offset is kept in
the partition's checkpoint so it survives a restart. Followers move theirs when their next
Fetch response carries it. ``low_watermark`` is the leader's new log start offset (Kafka waits
for the followers' too; pafka's leader does not track them, so it answers at once).
"""

from __future__ import annotations

from typing import Any

from pafka.errors import (
    OffsetOutOfRangeError,
    PafkaError,
    PolicyViolationError,
    wire_error,
)
from pafka.protocol.messages import response_class
from pafka.security.acls import Operation
from services.broker.handlers.authorization import require_topic
from services.broker.handlers.context import RequestContext
from services.broker.partition import Partition

HIGH_WATERMARK = -1


def delete_before(partition: Partition, offset: int) -> int:
    """Move ``partition``'s log start offset to ``offset``; returns the new one."""
    if not partition.config.deletes:
        raise PolicyViolationError(
            f"records of {partition.topic}-{partition.index} cannot be deleted due to the "
            f"configured policy ({partition.config.cleanup_policy})"
        )
    log_ = partition.log
    target = log_.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0 or target > log_.high_watermark:
        raise OffsetOutOfRangeError(
            f"cannot move the log start offset of {partition.topic}-{partition.index} to "
            f"{offset}: it must be within 0..{log_.high_watermark} (the high watermark)"
        )
    before = log_.log_start_offset
    start = log_.delete_records_before(target)
    if start != before:
        partition.notifier.notify()  # fetch sessions report the new start
    return start


async def handle_delete_records(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    cls = response_class(ctx.api_key, ctx.api_version)
    topic_cls = cls.DeleteRecordsTopicResult
    part_cls = topic_cls.DeleteRecordsPartitionResult
    topics = []
    for t in request.topics:
        results = []
        for p in t.partitions:
            try:
                require_topic(ctx, Operation.DELETE, t.name)
                partition = broker.replicas.leader_partition(t.name, p.partition_index)
                low = delete_before(partition, p.offset)
                results.append(
                    part_cls(partition_index=p.partition_index, low_watermark=low, error_code=0)
                )
            except PafkaError as exc:
                error = wire_error(exc)
                results.append(
                    part_cls(
                        partition_index=p.partition_index,
                        low_watermark=-1,
                        error_code=ctx.error(error.code),
                    )
                )
        topics.append(topic_cls(name=t.name, partitions=results))
    return cls(throttle_time_ms=0, topics=topics)
