"""DescribeCluster: the live brokers, the controller clients should address, the cluster id.

The controller id is this broker's own, as in Metadata: clients send controller-bound admin
requests to it and any broker serves them. A client asking for the cluster's
authorized operations is told those of Kafka's cluster operations the authorizer grants it
(all of them without an authorizer, as Kafka answers).
"""

from __future__ import annotations

from typing import Any

from pafka.protocol.messages import response_class
from pafka.security.acls import Operation
from services.broker.handlers.authorization import cluster_allowed
from services.broker.handlers.context import RequestContext

# AclOperation codes valid on the cluster resource: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
# DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.
CLUSTER_OPERATIONS = frozenset({5, 7, 8, 9, 10, 11, 12})


async def handle_describe_cluster(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    cls = response_class(ctx.api_key, ctx.api_version)
    brokers = [
        cls.DescribeClusterBroker(broker_id=b.id, host=b.host, port=b.port, rack=b.rack)
        for b in sorted(broker.metadata.brokers.values(), key=lambda b: b.id)
    ]
    operations = None
    if request.include_cluster_authorized_operations:
        operations = {op for op in CLUSTER_OPERATIONS if cluster_allowed(ctx, Operation(op))}
    return cls(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        cluster_id=broker.cluster_id or "",
        controller_id=broker.settings.broker_id,
        brokers=brokers,
        authorized_operations=operations,
    )
