"""Reading the partitions of a Fetch within its byte budget, and shaping the response.

Shared by sessionless fetches (``fetch``) and fetches in a session (``fetch_in_session``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from pafka.errors import (
    KafkaApiError,
    PafkaError,
    TopicAuthorizationFailedError,
    UnknownServerError,
    wire_error,
)
from pafka.protocol.fetch_codec import (
    SEPARATE_RECORDS_BYTES,
    FetchableTopicResponse,
    PartitionData,
)
from pafka.security.acls import Operation
from pafka.storage.region import FileRegion
from services.broker.handlers.authorization import cluster_allowed, require_topic
from services.broker.handlers.context import RequestContext
from services.broker.handlers.conversion import (
    FIRST_V2_FETCH_VERSION,
    FIRST_ZSTD_FETCH_VERSION,
    check_zstd_readable,
    read_legacy,
)
from services.broker.partition import ReadResult
from services.broker.quota_enforcement import fetch_quota_bytes

CONSUMER_REPLICA_ID = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1
# Each region holds a descriptor until it is sent: a fetch over many partitions reads the rest
# as bytes, so a response never pins more than this many descriptors.
MAX_REGIONS_PER_FETCH = 32


@dataclass
class PartitionFetch:
    topic: str
    index: int
    offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    result: ReadResult | None = None
    error: KafkaApiError | None = None
    # Read, but its records left out to keep the response under max_bytes.
    skipped: bool = False


@dataclass
class ReadBudget:
    """What one response may still carry, across the reads of one long poll."""

    max_bytes: int
    total: int = 0
    regions: int = 0

    @property
    def remaining(self) -> int:
        return max(self.max_bytes - self.total, 0)

    def refund(self, item: PartitionFetch) -> None:
        """Give back what ``item``'s last read took (it is read again, or trimmed)."""
        if item.result is not None:
            records = item.result.records
            self.total -= len(records)
            if isinstance(records, FileRegion):
                self.regions -= 1
                records.close()
        item.result, item.error, item.skipped = None, None, False


def _read_one(
    ctx: RequestContext,
    item: PartitionFetch,
    limit: int,
    replica_id: int,
    as_region: bool,
    read_committed: bool,
) -> ReadResult:
    broker = ctx.broker
    if broker.authorizer.enabled:
        # Followers need CLUSTER_ACTION (refused per partition as TOPIC_AUTHORIZATION_FAILED,
        # as Kafka does); consumers READ on the topic.
        if replica_id >= 0 and not cluster_allowed(ctx, Operation.CLUSTER_ACTION):
            raise TopicAuthorizationFailedError("a replica fetch needs CLUSTER_ACTION")
        if replica_id < 0:
            require_topic(ctx, Operation.READ, item.topic)
    partition = broker.replicas.leader_partition(item.topic, item.index)
    min_region_bytes = SEPARATE_RECORDS_BYTES if as_region else None
    if replica_id < 0:
        partition.check_leader_epoch(item.current_leader_epoch)
        if ctx.api_version < FIRST_ZSTD_FETCH_VERSION:
            check_zstd_readable(ctx, partition)
            if ctx.api_version < FIRST_V2_FETCH_VERSION:
                return read_legacy(ctx, partition, item.offset, limit)
        return partition.read(
            item.offset,
            limit,
            up_to_high_watermark=True,
            min_region_bytes=min_region_bytes,
            read_committed=read_committed,
        )
    result = partition.read_for_follower(
        replica_id, item.offset, limit, item.current_leader_epoch, min_region_bytes
    )
    broker.isr.maybe_expand(partition)
    return result


def read_each(
    ctx: RequestContext,
    items: Iterable[PartitionFetch],
    replica_id: int,
    budget: ReadBudget,
    isolation_level: int = READ_UNCOMMITTED,
) -> None:
    """Read ``items`` in order within ``budget``: the first records of a response go whatever
    their size (Kafka's rule), later ones only while they fit. Consumers reading committed
    (isolation level 1, Fetch v4+) read up to the last stable offset; replicas never do."""
    read_committed = isolation_level == READ_COMMITTED and replica_id < 0
    for item in items:
        budget.refund(item)
        try:
            limit = min(item.max_bytes, budget.remaining)
            as_region = budget.regions < MAX_REGIONS_PER_FETCH
            result = _read_one(ctx, item, max(limit, 1), replica_id, as_region, read_committed)
        except PafkaError as exc:
            item.error = wire_error(exc)
            continue
        size = len(result.records)
        if budget.total and size > budget.remaining:
            if isinstance(result.records, FileRegion):
                result.records.close()
            item.result = replace(result, records=b"")
            item.skipped = True
            continue
        item.result = result
        budget.regions += isinstance(result.records, FileRegion)
        budget.total += size


def release(items: Iterable[PartitionFetch]) -> None:
    """Close the file regions of reads that will not be sent (read again, or dropped)."""
    for item in items:
        if item.result is not None and isinstance(item.result.records, FileRegion):
            item.result.records.close()


def fetch_limits(ctx: RequestContext, request: Any) -> tuple[int, int, float, int]:
    """(max_bytes, replica_id, deadline on the monotonic clock, min_bytes) of a request."""
    requested = int(getattr(request, "max_bytes", 0x7FFFFFFF) or 0x7FFFFFFF)
    replica_id = int(getattr(request, "replica_id", CONSUMER_REPLICA_ID))
    # A consumer gets at most what its quota allows in the quota windows (as Kafka).
    quota_bytes = fetch_quota_bytes(ctx, replica_id)
    max_bytes = int(min(requested, ctx.broker.settings.fetch_max_bytes, quota_bytes))
    deadline = time.monotonic() + max(int(request.max_wait_ms), 0) / 1000
    return max_bytes, replica_id, deadline, min(max(int(request.min_bytes), 0), max_bytes)


def partition_data(ctx: RequestContext, item: PartitionFetch) -> PartitionData:
    """One partition of the response (its error counted, its bytes metered)."""
    if item.error is not None or item.result is None:
        error = item.error or UnknownServerError()
        ctx.broker.metrics.fetch_failed(item.topic, error.code)
        # Records empty, not null: librdkafka drops a whole response with a null set.
        return PartitionData(partition_index=item.index, error_code=error.code, records=b"")
    r = item.result
    ctx.broker.metrics.topic_counters(item.topic).bytes_out.inc(len(r.records))
    return PartitionData(
        partition_index=item.index,
        error_code=0,
        high_watermark=r.high_watermark,
        last_stable_offset=r.last_stable_offset if r.last_stable_offset >= 0 else r.high_watermark,
        log_start_offset=r.log_start_offset,
        records=r.records,
        aborted_transactions=r.aborted_transactions,
    )


def by_topic(ctx: RequestContext, items: Iterable[PartitionFetch]) -> list[FetchableTopicResponse]:
    grouped: dict[str, list[PartitionData]] = {}
    for item in items:
        grouped.setdefault(item.topic, []).append(partition_data(ctx, item))
    return [FetchableTopicResponse(t, parts) for t, parts in grouped.items()]
