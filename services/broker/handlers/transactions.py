"""The transaction coordinator's APIs: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn (v0-v3, as
Kafka 2.8). Decoding and encoding only; the coordinator decides."""

from __future__ import annotations

from typing import Any

from pafka.cluster.names import validate_group_id
from pafka.errors import (
    OperationNotAttemptedError,
    PafkaError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from pafka.protocol.messages import ApiKey, response_class
from pafka.security.acls import Operation
from pafka.transactions import decisions as decide
from pafka.transactions.ids import validate_transactional_id
from services.broker.handlers.authorization import (
    allowed_topics,
    require_group,
    require_transactional_id,
    transactional_id_allowed,
)
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
    txn_id = request.v3_and_below_transactional_id
    writable = allowed_topics(ctx, Operation.WRITE, (t for t, _ in wanted))
    denied = {tp for tp in wanted if tp[0] not in writable}
    unknown = {tp for tp in wanted if metadata.partition(*tp) is None}
    if not transactional_id_allowed(ctx, Operation.WRITE, txn_id):
        codes = dict.fromkeys(wanted, TransactionalIdAuthorizationFailedError.code)
    elif denied:
        # As Kafka: the refused topics say so, nothing else is added.
        codes = {
            tp: TopicAuthorizationFailedError.code
            if tp in denied
            else OperationNotAttemptedError.code
            for tp in wanted
        }
    elif unknown:
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
                validate_transactional_id(txn_id),
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
        require_transactional_id(ctx, Operation.WRITE, request.transactional_id)
        require_group(ctx, Operation.READ, request.group_id)
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
        require_transactional_id(ctx, Operation.WRITE, request.transactional_id)
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
