"""InitProducerId for idempotent (non-transactional) producers."""

from __future__ import annotations

from typing import Any

from pafka.errors import InvalidRequestError
from pafka.protocol.messages import response_class
from services.broker.handlers.context import RequestContext


async def handle_init_producer_id(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    if request.transactional_id is not None:
        # Transactions need a transaction coordinator, which pafka does not have.
        return cls(throttle_time_ms=0, error_code=ctx.error(InvalidRequestError.code))
    producer_id = await ctx.broker.producer_ids.next_id()
    return cls(throttle_time_ms=0, error_code=0, producer_id=producer_id, producer_epoch=0)
