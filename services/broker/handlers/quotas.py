"""DescribeClientQuotas and AlterClientQuotas (KIP-546), on ZooKeeper as Kafka 2.8 keeps them.

Any broker answers: quotas live in ``/config/users`` and ``/config/clients``
(:mod:`pafka.admin.client_quotas`), and every broker follows their change notifications. A
describe fails as a whole (a top-level error); an alteration succeeds or fails per entity, and
``validate_only`` checks everything and writes nothing. Default entities have a null name on the
wire. As Kafka, describing needs DESCRIBE_CONFIGS on the cluster and altering ALTER_CONFIGS
(CLUSTER_AUTHORIZATION_FAILED for the whole describe, for each entity of an alteration).
"""

from __future__ import annotations

from typing import Any

from pafka.admin import client_quotas as admin
from pafka.errors import KafkaApiError, PafkaError, wire_error
from pafka.protocol.messages import response_class
from pafka.security.acls import Operation
from pafka.security.quotas import DEFAULT
from services.broker.handlers.authorization import require_cluster
from services.broker.handlers.context import RequestContext


def _wire_name(name: str) -> str | None:
    return None if name == DEFAULT else name


def _entity_data(cls: Any, entity: admin.Entity) -> list[Any]:
    user, client = entity
    data = []
    if user is not None:
        data.append(cls(entity_type=admin.USER, entity_name=_wire_name(user)))
    if client is not None:
        data.append(cls(entity_type=admin.CLIENT_ID, entity_name=_wire_name(client)))
    return data


async def handle_describe_client_quotas(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    entry = cls.EntryData
    try:
        require_cluster(ctx, Operation.DESCRIBE_CONFIGS)
        components = admin.parse_filter(
            (c.entity_type, int(c.match_type), c.match) for c in request.components
        )
        zk = ctx.broker.zk
        found = await zk.run(admin.describe_quotas, zk.kazoo, components, bool(request.strict))
    except PafkaError as exc:
        error = wire_error(exc)
        return cls(
            throttle_time_ms=0,
            error_code=ctx.error(error.code),
            error_message=error.message,
            entries=None,
        )
    entries = [
        entry(
            entity=_entity_data(entry.EntityData, entity),
            values=[entry.ValueData(key=k, value=v) for k, v in sorted(values.items())],
        )
        for entity, values in sorted(found.items(), key=lambda item: str(item[0]))
    ]
    return cls(throttle_time_ms=0, error_code=0, error_message=None, entries=entries)


async def _alter_one(ctx: RequestContext, item: Any, validate_only: bool) -> None:
    require_cluster(ctx, Operation.ALTER_CONFIGS)
    entity = admin.parse_entity((e.entity_type, e.entity_name) for e in item.entity)
    ops = [(op.key, None if op.remove else float(op.value)) for op in item.ops]
    zk = ctx.broker.zk
    await zk.run(admin.alter_quotas, zk.kazoo, entity, ops, validate_only)


async def handle_alter_client_quotas(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    entry = cls.EntryData
    entries = []
    for item in request.entries:
        error: KafkaApiError | None = None
        try:
            await _alter_one(ctx, item, bool(request.validate_only))
        except PafkaError as exc:
            error = wire_error(exc)
        entries.append(
            entry(
                error_code=ctx.error(error.code) if error else 0,
                error_message=error.message if error else None,
                entity=[
                    entry.EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
                    for e in item.entity
                ],
            )
        )
    return cls(throttle_time_ms=0, entries=entries)
