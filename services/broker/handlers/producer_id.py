"""InitProducerId: a new producer id for idempotent producers; with a transactional id, the
transaction coordinator's answer (epoch bump, fencing, KIP-360's producer id and epoch)."""

from __future__ import annotations

from typing import Any

from pafka.errors import ClusterAuthorizationFailedError, PafkaError
from pafka.protocol.messages import ApiKey, response_class
from pafka.security.acls import Operation
from pafka.transactions import decisions as decide
from pafka.transactions.ids import validate_transactional_id
from services.broker.handlers.authorization import (
    idempotent_producer_allowed,
    require_transactional_id,
)
from services.broker.handlers.context import RequestContext
from services.broker.handlers.transactions import txn_error_code


async def handle_init_producer_id(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    if request.transactional_id is None:
        if not idempotent_producer_allowed(ctx):
            code = ctx.error(ClusterAuthorizationFailedError.code)
            return cls(throttle_time_ms=0, error_code=code, producer_id=-1, producer_epoch=-1)
        producer_id = await ctx.broker.producer_ids.next_id()
        return cls(throttle_time_ms=0, error_code=0, producer_id=producer_id, producer_epoch=0)
    try:
        require_transactional_id(ctx, Operation.WRITE, request.transactional_id)
        tid = validate_transactional_id(request.transactional_id)
        expected = None
        if ctx.api_version >= 3:
            expected = decide.expected_producer(
                int(request.producer_id), int(request.producer_epoch)
            )
        meta = await ctx.broker.transactions.init_producer_id(
            tid, int(request.transaction_timeout_ms), expected
        )
    except PafkaError as exc:
        code = txn_error_code(exc, ApiKey.INIT_PRODUCER_ID, ctx.api_version)
        return cls(
            throttle_time_ms=0, error_code=ctx.error(code), producer_id=-1, producer_epoch=-1
        )
    return cls(
        throttle_time_ms=0,
        error_code=0,
        producer_id=meta.producer_id,
        producer_epoch=meta.producer_epoch,
    )
