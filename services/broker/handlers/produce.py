"""Produce: append each partition's record batches on the leader, per-partition errors."""

from __future__ import annotations

import logging
from typing import Any

from pafka.errors import KafkaApiError, PafkaError, UnknownServerError
from pafka.protocol.messages import response_class
from pafka.records.batch import record_count
from services.broker.handlers.context import RequestContext

log = logging.getLogger(__name__)


async def handle_produce(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    cls = response_class(ctx.api_key, ctx.api_version)
    topic_cls = cls.TopicProduceResponse
    part_cls = topic_cls.PartitionProduceResponse
    acks = int(request.acks)
    responses = []
    for topic_data in request.topic_data:
        name = topic_data.name
        results = []
        for pdata in topic_data.partition_data:
            records = bytes(pdata.records or b"")
            try:
                partition = broker.replicas.leader_partition(name, pdata.index)
                result = partition.append_as_leader(records, acks)
            except PafkaError as exc:
                error = exc if isinstance(exc, KafkaApiError) else UnknownServerError(str(exc))
                broker.metrics.failed_produce.labels(name).inc()
                results.append(
                    part_cls(
                        index=pdata.index,
                        error_code=error.code,
                        base_offset=-1,
                        error_message=error.message,
                    )
                )
                continue
            broker.metrics.messages_in.labels(name).inc(record_count(records))
            broker.metrics.bytes_in.labels(name).inc(len(records))
            results.append(
                part_cls(
                    index=pdata.index,
                    error_code=0,
                    base_offset=result.base_offset,
                    log_append_time_ms=result.log_append_time_ms,
                    log_start_offset=result.log_start_offset,
                )
            )
        responses.append(topic_cls(name=name, partition_responses=results))
    return cls(responses=responses, throttle_time_ms=0)
