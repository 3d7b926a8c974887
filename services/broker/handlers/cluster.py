"""DescribeCluster: the live brokers, the controller clients should address, the cluster id.

The controller id is this broker's own, as in Metadata: clients send controller-bound admin
requests to it and any broker serves them. A client asking for the cluster's
authorized operations is told those of Kafka's cluster operations the authorizer grants it
(all of them without an authorizer, as Kafka answers).
"""

from __future__ import annotations

from typing import Any

from pafka.protocol.messages import response_class
from pafka.security.acls import CLUSTER_NAME, ResourceType
from services.broker.handlers.authorization import authorized_operations
from services.broker.handlers.context import RequestContext


async def handle_describe_cluster(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    cls = response_class(ctx.api_key, ctx.api_version)
    brokers = [
        cls.DescribeClusterBroker(broker_id=b.id, host=address[0], port=address[1], rack=b.rack)
        for b in sorted(broker.metadata.brokers.values(), key=lambda b: b.id)
        if (address := b.address(ctx.listener)) is not None
    ]
    operations = None
    if request.include_cluster_authorized_operations:
        operations = authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
    return cls(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        cluster_id=broker.cluster_id or "",
        controller_id=broker.settings.broker_id,
        brokers=brokers,
        authorized_operations=operations,
    )
