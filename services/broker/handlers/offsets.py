"""ListOffsets (earliest, latest, max-timestamp, by timestamp) and OffsetForLeaderEpoch.

OffsetForLeaderEpoch v0 answers without leader epochs: the response schema leaves them out.
"""

from __future__ import annotations

from typing import Any

from pafka.errors import PafkaError
from pafka.protocol.messages import response_class
from pafka.security.acls import Operation
from services.broker.handlers.authorization import cluster_allowed, require_topic
from services.broker.handlers.context import RequestContext
from services.broker.handlers.list_offsets_v0 import handle_list_offsets_v0
from services.broker.partition import Partition

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
NO_EPOCH = -1
READ_COMMITTED = 1


def _lookup(partition: Partition, timestamp: int, isolation_level: int) -> tuple[int, int]:
    """(timestamp, offset) answering one ListOffsets partition; read_committed (isolation
    level 1, v2+) sees up to the last stable offset, as its fetches do."""
    log = partition.log
    if timestamp == EARLIEST:
        return -1, log.log_start_offset
    fetchable = (
        partition.txns.last_stable_offset()
        if isolation_level == READ_COMMITTED
        else log.high_watermark
    )
    if timestamp == LATEST:
        return -1, fetchable
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp_offset()
        return found if found is not None else (-1, -1)
    found = log.offset_for_timestamp(timestamp)
    if found is None or found[1] >= fetchable:
        return -1, -1
    ts, offset = found
    return ts, offset


async def handle_list_offsets(ctx: RequestContext, request: Any) -> Any:
    if ctx.api_version == 0:
        return await handle_list_offsets_v0(ctx, request)
    cls = response_class(ctx.api_key, ctx.api_version)
    topic_cls = cls.ListOffsetsTopicResponse
    part_cls = topic_cls.ListOffsetsPartitionResponse
    isolation_level = int(getattr(request, "isolation_level", 0))
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            try:
                require_topic(ctx, Operation.DESCRIBE, t.name)
                partition = ctx.broker.replicas.leader_partition(t.name, p.partition_index)
                partition.check_leader_epoch(int(getattr(p, "current_leader_epoch", NO_EPOCH)))
                ts, offset = _lookup(partition, int(p.timestamp), isolation_level)
                parts.append(
                    part_cls(
                        partition_index=p.partition_index,
                        error_code=0,
                        timestamp=ts,
                        offset=offset,
                        leader_epoch=partition.leader_epoch,
                    )
                )
            except PafkaError as exc:
                parts.append(
                    part_cls(partition_index=p.partition_index, error_code=ctx.error(exc.code))
                )
        topics.append(topic_cls(name=t.name, partitions=parts))
    return cls(throttle_time_ms=0, topics=topics)


async def handle_offset_for_leader_epoch(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    topic_cls = cls.OffsetForLeaderTopicResult
    part_cls = topic_cls.EpochEndOffset
    # Followers hold CLUSTER_ACTION; anyone else needs DESCRIBE on each topic (Kafka 2.8).
    replica = cluster_allowed(ctx, Operation.CLUSTER_ACTION)
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            try:
                if not replica:
                    require_topic(ctx, Operation.DESCRIBE, t.topic)
                partition = ctx.broker.replicas.leader_partition(t.topic, p.partition)
                partition.check_leader_epoch(int(getattr(p, "current_leader_epoch", NO_EPOCH)))
                epoch, end_offset = partition.log.end_offset_for_epoch(int(p.leader_epoch))
                parts.append(
                    part_cls(
                        error_code=0,
                        partition=p.partition,
                        leader_epoch=epoch,
                        end_offset=end_offset,
                    )
                )
            except PafkaError as exc:
                parts.append(part_cls(error_code=ctx.error(exc.code), partition=p.partition))
        topics.append(topic_cls(topic=t.topic, partitions=parts))
    return cls(throttle_time_ms=0, topics=topics)
