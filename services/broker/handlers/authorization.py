"""The authorization checks handlers make, as Kafka 2.8's ``KafkaApis`` makes them.

Each asks the broker's authorizer about the request's principal and client host; without an
authorizer configured every check passes. Handlers answer a refusal per resource with
TOPIC_, GROUP_, CLUSTER_ or TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Iterable

from pafka.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    KafkaApiError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)
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


def require_topic(ctx: RequestContext, operation: Operation, topic: str) -> None:
    if not topic_allowed(ctx, operation, topic):
        raise TopicAuthorizationFailedError(f"not authorized to {operation.name} topic {topic}")


def require_cluster(ctx: RequestContext, operation: Operation) -> None:
    if not cluster_allowed(ctx, operation):
        raise ClusterAuthorizationFailedError(f"not authorized to {operation.name} the cluster")


def produce_refusal(ctx: RequestContext, transactional_id: str | None) -> KafkaApiError | None:
    """Kafka 2.8's check of a whole Produce: transactional records need WRITE on their
    transactional id. (Idempotent ones were authorized by InitProducerId, KIP-679.)"""
    if transactional_id is None or transactional_id_allowed(ctx, Operation.WRITE, transactional_id):
        return None
    return TransactionalIdAuthorizationFailedError(
        f"not authorized to WRITE transactional id {transactional_id}"
    )


def idempotent_producer_allowed(ctx: RequestContext) -> bool:
    """InitProducerId without a transactional id (Kafka 2.8, KIP-679): IDEMPOTENT_WRITE on the
    cluster, or WRITE on at least one topic."""
    authorizer = ctx.broker.authorizer
    return cluster_allowed(ctx, Operation.IDEMPOTENT_WRITE) or authorizer.allowed_on_some(
        ctx.principal, ctx.client_host, Operation.WRITE, ResourceType.TOPIC
    )


def require_group(ctx: RequestContext, operation: Operation, group: str) -> None:
    if not group_allowed(ctx, operation, group):
        raise GroupAuthorizationFailedError(f"not authorized to {operation.name} group {group}")


def require_transactional_id(ctx: RequestContext, operation: Operation, txn_id: str) -> None:
    if not transactional_id_allowed(ctx, operation, txn_id):
        raise TransactionalIdAuthorizationFailedError(
            f"not authorized to {operation.name} transactional id {txn_id}"
        )


# The operations Kafka defines on each resource type (AclEntry.supportedOperations): what a
# request asking for a resource's authorized operations is answered from.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (
        Operation.READ,
        Operation.WRITE,
        Operation.CREATE,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.ALTER,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (Operation.READ, Operation.DESCRIBE, Operation.DELETE),
    ResourceType.CLUSTER: (
        Operation.CREATE,
        Operation.CLUSTER_ACTION,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
        Operation.IDEMPOTENT_WRITE,
        Operation.ALTER,
        Operation.DESCRIBE,
    ),
}


def authorized_operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> set[int]:
    """The codes of the operations the caller may perform on a resource (Metadata v8+,
    DescribeGroups v3+, DescribeCluster); every supported one without an authorizer."""
    return {
        int(op)
        for op in SUPPORTED_OPERATIONS[resource_type]
        if allowed(ctx, op, resource_type, name)
    }
