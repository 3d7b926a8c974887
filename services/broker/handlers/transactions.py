"""The transaction coordinator's APIs: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn (v0-v3, as
Kafka 2.8). Decoding and encoding only; the coordinator decides."""

from __future__ import annotations

from typing import Any

from pafka.cluster.names import validate_group_id
from pafka.errors import OperationNotAttemptedError, PafkaError, UnknownTopicOrPartitionError
from pafka.protocol.messages import ApiKey, response_class
from pafka.transactions import decisions as decide
from pafka.transactions.ids import validate_transactional_id
from services.broker.handlers.context import RequestContext
from services.broker.handlers.groups import error_code


def txn_error_code(exc: PafkaError, api: ApiKey, version: int) -> int:
    """ZooKeeper trouble is COORDINATOR_NOT_AVAILABLE (clients retry), PRODUCER_FENCED is
    INVALID_PRODUCER_EPOCH for clients before KIP-588."""
    return decide.wire_error(error_code(exc), api, version)


async def handle_add_partitions_to_txn(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    wanted = [
        (t.name, int(p)) for t in request.v3_and_below_topics or [] for p in t.partitions or []
    ]
    metadata = ctx.broker.metadata
    unknown = {tp for tp in wanted if metadata.partition(*tp) is None}
    if unknown:
        # Kafka adds nothing when any partition is unknown and says which.
        codes = {
            tp: UnknownTopicOrPartitionError.code
            if tp in unknown
            else OperationNotAttemptedError.code
            for tp in wanted
        }
    else:
        try:
            await ctx.broker.transactions.add_partitions(
                validate_transactional_id(request.v3_and_below_transactional_id),
                int(request.v3_and_below_producer_id),
                int(request.v3_and_below_producer_epoch),
                wanted,
            )
            code = 0
        except PafkaError as exc:
            code = txn_error_code(exc, ApiKey.ADD_PARTITIONS_TO_TXN, ctx.api_version)
        codes = dict.fromkeys(wanted, code)
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), code in codes.items():
        by_topic.setdefault(topic, []).append(
            cls.AddPartitionsToTxnTopicResult.AddPartitionsToTxnPartitionResult(
                partition_index=partition, partition_error_code=ctx.error(code)
            )
        )
    return cls(
        throttle_time_ms=0,
        results_by_topic_v3_and_below=[
            cls.AddPartitionsToTxnTopicResult(name=t, results_by_partition=r)
            for t, r in by_topic.items()
        ],
    )


async def handle_add_offsets_to_txn(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    try:
        validate_group_id(request.group_id)
        await ctx.broker.transactions.add_offsets(
            validate_transactional_id(request.transactional_id),
            int(request.producer_id),
            int(request.producer_epoch),
            request.group_id,
        )
        code = 0
    except PafkaError as exc:
        code = txn_error_code(exc, ApiKey.ADD_OFFSETS_TO_TXN, ctx.api_version)
    return cls(throttle_time_ms=0, error_code=ctx.error(code))


async def handle_end_txn(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    try:
        await ctx.broker.transactions.end_txn(
            validate_transactional_id(request.transactional_id),
            int(request.producer_id),
            int(request.producer_epoch),
            bool(request.committed),
        )
        code = 0
    except PafkaError as exc:
        code = txn_error_code(exc, ApiKey.END_TXN, ctx.api_version)
    return cls(throttle_time_ms=0, error_code=ctx.error(code))
