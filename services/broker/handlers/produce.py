"""Produce: append each partition's record batches on the leader, per-partition errors."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from pafka.errors import PafkaError, TopicAuthorizationFailedError, wire_error
from pafka.protocol.produce_codec import (
    PartitionProduceResponse,
    ProduceRequestBody,
    ProduceResponseBody,
    TopicProduceResponse,
)
from pafka.records.batch import record_count
from pafka.security.acls import Operation
from services.broker.handlers.authorization import allowed_topics, produce_refusal
from services.broker.handlers.context import RequestContext
from services.broker.handlers.conversion import (
    FIRST_V2_PRODUCE_VERSION,
    FIRST_ZSTD_PRODUCE_VERSION,
    produced_as_v2,
    refuse_zstd,
)
from services.broker.partition import AppendResult, Partition

log = logging.getLogger(__name__)


async def handle_produce(ctx: RequestContext, request: ProduceRequestBody) -> ProduceResponseBody:
    broker = ctx.broker
    acks = request.acks
    # Produce v0-v2 may carry magic 0 or 1 messages; v3+ carries v2 batches only, unconverted.
    legacy = ctx.api_version < FIRST_V2_PRODUCE_VERSION
    before_zstd = ctx.api_version < FIRST_ZSTD_PRODUCE_VERSION
    appended: list[tuple[str, Any, Partition | None, AppendResult | PafkaError]] = []
    refused = produce_refusal(ctx, request.transactional_id)
    writable = allowed_topics(ctx, Operation.WRITE, (t.name for t in request.topic_data))
    for topic_data in request.topic_data:
        name = topic_data.name
        for pdata in topic_data.partition_data:
            if refused is not None or name not in writable:
                error = refused or TopicAuthorizationFailedError(f"not authorized to write {name}")
                appended.append((name, pdata.index, None, error))
                continue
            # A view into the request frame: validated and written without a copy.
            records: bytes | memoryview = pdata.records or b""
            try:
                partition = broker.replicas.leader_partition(name, pdata.index)
                if legacy:  # after the leader check: a follower converts nothing
                    records = produced_as_v2(ctx, name, records)
                if before_zstd:
                    refuse_zstd(records, ctx.api_version)
                result = partition.append_as_leader(records, acks, request.transactional_id)
            except PafkaError as exc:
                appended.append((name, pdata.index, None, exc))
                continue
            counters = broker.metrics.topic_counters(name)
            counters.messages_in.inc(record_count(records))
            counters.bytes_in.inc(len(records))
            appended.append((name, pdata.index, partition, result))
    if acks == -1:
        # Wait for all partitions of the request together, not one after another.
        outcomes = await asyncio.gather(
            *(_replicated(p, r, request.timeout_ms) for _, _, p, r in appended)
        )
        appended = [(n, i, p, o) for (n, i, p, _), o in zip(appended, outcomes, strict=True)]
    by_topic: dict[str, list[PartitionProduceResponse]] = {}
    for name, index, _, outcome in appended:
        by_topic.setdefault(name, []).append(_partition_response(broker, name, index, outcome))
    return ProduceResponseBody([TopicProduceResponse(n, rs) for n, rs in by_topic.items()])


async def _replicated(
    partition: Partition | None, outcome: AppendResult | PafkaError, timeout_ms: int
) -> AppendResult | PafkaError:
    if partition is None or isinstance(outcome, PafkaError):
        return outcome
    try:
        await partition.wait_replicated(outcome.last_offset, timeout_ms)
    except PafkaError as exc:
        return exc
    return outcome


def _partition_response(
    broker: Any, name: str, index: int, outcome: AppendResult | PafkaError
) -> PartitionProduceResponse:
    if isinstance(outcome, PafkaError):
        error = wire_error(outcome)
        broker.metrics.produce_failed(name, error.code)
        return PartitionProduceResponse(
            index=index,
            error_code=error.code,
            base_offset=-1,
            error_message=error.message,
            record_errors=error.record_errors,
        )
    return PartitionProduceResponse(
        index=index,
        error_code=0,
        base_offset=outcome.base_offset,
        log_append_time_ms=outcome.log_append_time_ms,
        log_start_offset=outcome.log_start_offset,
    )
