"""Fetch: serve whole batches from segment files, long-polling for min_bytes up to max_wait_ms.

Kafka's rules: the response carries at least one whole batch when one exists (even above
max_bytes or a partition's max bytes), no consumer sees data at or above the high watermark, and
the total stays under max_bytes otherwise. The request waits until min_bytes are available, a
partition's state changes, or max_wait_ms passes. Record sets of 16 KiB or more are read as
file regions (for ``sendfile``); a read not sent (read again, trimmed, failed) closes its region.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from pafka.errors import KafkaApiError, PafkaError, UnknownServerError
from pafka.protocol.fetch_codec import (
    SEPARATE_RECORDS_BYTES,
    FetchableTopicResponse,
    FetchResponseBody,
    PartitionData,
)
from pafka.storage.region import FileRegion
from services.broker.handlers.context import RequestContext
from services.broker.notify import Notifier, wait_any
from services.broker.partition import ReadResult

CONSUMER_REPLICA_ID = -1
# Each region holds a descriptor until it is sent: a fetch over many partitions reads the rest
# as bytes, so a response never pins more than this many descriptors.
MAX_REGIONS_PER_FETCH = 32


@dataclass
class _PartitionFetch:
    topic: str
    index: int
    offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    result: ReadResult | None = None
    error: KafkaApiError | None = None


def _read_one(
    ctx: RequestContext, item: _PartitionFetch, limit: int, replica_id: int, as_region: bool
) -> ReadResult:
    broker = ctx.broker
    partition = broker.replicas.leader_partition(item.topic, item.index)
    min_region_bytes = SEPARATE_RECORDS_BYTES if as_region else None
    if replica_id < 0:
        partition.check_leader_epoch(item.current_leader_epoch)
        return partition.read(
            item.offset, limit, up_to_high_watermark=True, min_region_bytes=min_region_bytes
        )
    result = partition.read_for_follower(
        replica_id, item.offset, limit, item.current_leader_epoch, min_region_bytes
    )
    broker.isr.maybe_expand(partition)
    return result


def _read_all(
    ctx: RequestContext, wanted: list[_PartitionFetch], max_bytes: int, replica_id: int
) -> int:
    budget = max_bytes
    total = 0
    regions = 0
    _release(wanted)
    for item in wanted:
        item.result, item.error = None, None
        try:
            limit = min(item.max_bytes, budget)
            as_region = regions < MAX_REGIONS_PER_FETCH
            item.result = _read_one(ctx, item, max(limit, 1), replica_id, as_region)
            regions += isinstance(item.result.records, FileRegion)
        except PafkaError as exc:
            item.error = exc if isinstance(exc, KafkaApiError) else UnknownServerError(str(exc))
            continue
        size = len(item.result.records)
        if total and size > budget:
            _release([item])
            item.result = ReadResult(
                b"",
                item.result.high_watermark,
                item.result.log_start_offset,
                item.result.log_end_offset,
            )
            size = 0
        total += size
        budget = max(budget - size, 0)
    return total


def _release(wanted: list[_PartitionFetch]) -> None:
    """Close the file regions of reads that will not be sent (read again, or dropped)."""
    for item in wanted:
        if item.result is not None and isinstance(item.result.records, FileRegion):
            item.result.records.close()


def _notifiers(ctx: RequestContext, wanted: list[_PartitionFetch]) -> list[Notifier]:
    found = []
    for item in wanted:
        partition = ctx.broker.replicas.partitions.get((item.topic, item.index))
        if partition is not None:
            found.append(partition.notifier)
    return found


async def handle_fetch(ctx: RequestContext, request: Any) -> FetchResponseBody:
    requested = int(getattr(request, "max_bytes", 0x7FFFFFFF) or 0x7FFFFFFF)
    max_bytes = min(requested, ctx.broker.settings.fetch_max_bytes)
    replica_id = int(getattr(request, "replica_id", CONSUMER_REPLICA_ID))
    wanted = [
        _PartitionFetch(
            t.topic,
            p.partition,
            int(p.fetch_offset),
            int(p.partition_max_bytes),
            int(getattr(p, "current_leader_epoch", -1)),
        )
        for t in request.topics
        for p in t.partitions
    ]
    deadline = time.monotonic() + max(int(request.max_wait_ms), 0) / 1000
    min_bytes = max(int(request.min_bytes), 0)
    try:
        while True:
            total = _read_all(ctx, wanted, max_bytes, replica_id)
            remaining = deadline - time.monotonic()
            if total >= min_bytes or remaining <= 0 or any(w.error for w in wanted):
                break
            notifiers = _notifiers(ctx, wanted)
            if notifiers:
                await wait_any(notifiers, remaining)
            else:
                await asyncio.sleep(remaining)
        return _response(ctx, wanted)
    except BaseException:
        _release(wanted)
        raise


def _response(ctx: RequestContext, wanted: list[_PartitionFetch]) -> FetchResponseBody:
    by_topic: dict[str, list[PartitionData]] = {}
    for item in wanted:
        if item.error is not None or item.result is None:
            error = item.error or UnknownServerError()
            ctx.broker.metrics.fetch_failed(item.topic, error.code)
            # Records empty, not null: librdkafka drops a whole response with a null set.
            data = PartitionData(partition_index=item.index, error_code=error.code, records=b"")
        else:
            r = item.result
            ctx.broker.metrics.bytes_out.labels(item.topic).inc(len(r.records))
            data = PartitionData(
                partition_index=item.index,
                error_code=0,
                high_watermark=r.high_watermark,
                last_stable_offset=r.high_watermark,
                log_start_offset=r.log_start_offset,
                records=r.records,
            )
        by_topic.setdefault(item.topic, []).append(data)
    return FetchResponseBody([FetchableTopicResponse(t, parts) for t, parts in by_topic.items()])
