"""What every API handler receives: the request header and the broker's parts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from services.broker.broker import Broker


@dataclass(frozen=True)
class RequestContext:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    broker: Broker


def response_for(ctx: RequestContext, **fields: Any) -> Any:
    """A response object of the request's API at the request's version."""
    from pafka.protocol.messages import response_class

    return response_class(ctx.api_key, ctx.api_version)(**fields)
