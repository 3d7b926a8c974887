"""DescribeCluster: the live brokers, the controller clients should address, the cluster id.

The controller id is this broker's own, as in Metadata: clients send controller-bound admin
requests to it and any broker serves them. pafka has no authorizer, so a client asking for the
cluster's authorized operations is granted every operation Kafka defines on the cluster
resource, as Kafka answers without an authorizer.
"""

from __future__ import annotations

from typing import Any

from pafka.protocol.messages import response_class
from services.broker.handlers.context import RequestContext

# AclOperation codes valid on the cluster resource: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
# DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.
CLUSTER_OPERATIONS = frozenset({5, 7, 8, 9, 10, 11, 12})


async def handle_describe_cluster(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    cls = response_class(ctx.api_key, ctx.api_version)
    brokers = [
        cls.DescribeClusterBroker(broker_id=b.id, host=address[0], port=address[1], rack=b.rack)
        for b in sorted(broker.metadata.brokers.values(), key=lambda b: b.id)
        if (address := b.address(ctx.listener)) is not None
    ]
    operations = set(CLUSTER_OPERATIONS) if request.include_cluster_authorized_operations else None
    return cls(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        cluster_id=broker.cluster_id or "",
        controller_id=broker.settings.broker_id,
        brokers=brokers,
        authorized_operations=operations,
    )
