"""``GET /v3/clusters/{id}/topics/{t}/offsets-for-times``: where a time falls in a topic's
partitions, Kafka's ``offsetsForTimes``.

For each partition (one, or all of the topic's), the first offset whose timestamp is at or
after the time asked, by a ListOffsets with that timestamp to the partition's leader. Where no
record is that late the answer is the log end (the high watermark), so a read from it waits for
the next record, as a consumer seeking with ``offsetsForTimes`` and falling back to the end
does. Needs DESCRIBE on the topic, as ListOffsets does (``rest_acls.py``).
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from pafka.client.fetcher import offset_for_time, offsets
from pafka.errors import UnknownTopicOrPartitionError
from services.gateway.context import Ctx, GatewayContext
from services.gateway.v3 import At

router = APIRouter(prefix="/v3/clusters/{cluster_id}", tags=["console views"])

# Java's Long.MAX_VALUE: any later timestamp cannot be sent in ListOffsets.
MAX_TIMESTAMP_MS = 2**63 - 1


class OffsetForTime(BaseModel):
    partition_id: int
    offset: int = Field(
        description="The first offset whose timestamp is at or after the time; the log end "
        "(high watermark) when no record's is"
    )
    found: bool = Field(description="False when no record is that late (offset is the log end)")


class OffsetsForTime(BaseModel):
    topic_name: str
    timestamp_ms: int
    data: list[OffsetForTime]


@router.get(
    "/topics/{topic_name}/offsets-for-times",
    response_model=OffsetsForTime,
    summary="The first offset at or after a time, per partition (Kafka's offsetsForTimes)",
)
async def offsets_for_times(
    topic_name: str,
    at: At,
    ctx: Ctx,
    timestamp_ms: int = Query(
        ge=0, le=MAX_TIMESTAMP_MS, description="Milliseconds since the epoch (UTC)"
    ),
    partition_id: int | None = Query(None, ge=0, description="One partition; all when absent"),
) -> OffsetsForTime:
    info = await ctx.cluster.topic(topic_name, refresh=True)
    if partition_id is not None and partition_id not in info.partitions:
        raise UnknownTopicOrPartitionError(f"topic {topic_name!r} has no partition {partition_id}")
    ids = sorted(info.partitions) if partition_id is None else [partition_id]
    data = await asyncio.gather(*(_at_time(ctx, topic_name, p, timestamp_ms) for p in ids))
    return OffsetsForTime(topic_name=topic_name, timestamp_ms=timestamp_ms, data=list(data))


async def _at_time(
    ctx: GatewayContext, topic: str, partition: int, timestamp_ms: int
) -> OffsetForTime:
    found = await offset_for_time(ctx.cluster, topic, partition, timestamp_ms)
    if found is None:
        _, end = await offsets(ctx.cluster, topic, partition)
        return OffsetForTime(partition_id=partition, offset=end, found=False)
    return OffsetForTime(partition_id=partition, offset=found, found=True)
