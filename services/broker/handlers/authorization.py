"""The authorization checks handlers make, as Kafka 2.8's ``KafkaApis`` makes them.

Each asks the broker's authorizer about the request's principal and client host; without an
authorizer configured every check passes. Handlers answer a refusal per resource with
TOPIC_, GROUP_, CLUSTER_ or TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Iterable

from pafka.security.acls import CLUSTER_NAME, Operation, ResourceType
from services.broker.handlers.context import RequestContext


def allowed(
    ctx: RequestContext, operation: Operation, resource_type: ResourceType, name: str
) -> bool:
    return ctx.broker.authorizer.allowed(
        ctx.principal, ctx.client_host, operation, resource_type, name
    )


def cluster_allowed(ctx: RequestContext, operation: Operation) -> bool:
    return allowed(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def topic_allowed(ctx: RequestContext, operation: Operation, topic: str) -> bool:
    return allowed(ctx, operation, ResourceType.TOPIC, topic)


def group_allowed(ctx: RequestContext, operation: Operation, group: str) -> bool:
    return allowed(ctx, operation, ResourceType.GROUP, group)


def transactional_id_allowed(ctx: RequestContext, operation: Operation, txn_id: str) -> bool:
    return allowed(ctx, operation, ResourceType.TRANSACTIONAL_ID, txn_id)


def allowed_topics(ctx: RequestContext, operation: Operation, names: Iterable[str]) -> set[str]:
    """The names among ``names`` the caller may perform ``operation`` on (each asked once)."""
    if not ctx.broker.authorizer.enabled:
        return set(names)
    return {name for name in set(names) if topic_allowed(ctx, operation, name)}
