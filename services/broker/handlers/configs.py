"""AlterConfigs and IncrementalAlterConfigs: topic overrides and dynamic broker configs.

Any broker answers for topics and for the cluster-wide broker default (``<default>``, an empty
name); a single broker's configs only on that broker, where Kafka's admin client sends them.
Each resource succeeds or fails on its own; ``validate_only`` checks everything and writes
nothing. The new values reach brokers and the controller through their watches on the znodes,
so they are enforced without a restart.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from typing import Any

from pafka.admin import configs as admin
from pafka.cluster import broker_config
from pafka.cluster.config_ops import ConfigOp, apply_incremental, replace_all
from pafka.cluster.topic_config import SCHEMA, TYPE_LIST, TopicConfig, config_value
from pafka.errors import InvalidRequestError, PafkaError
from pafka.protocol.messages import response_class
from pafka.security.acls import Operation
from services.broker.handlers.authorization import require_cluster, require_topic
from services.broker.handlers.context import RequestContext

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
TOPIC_LIST_KEYS = frozenset(k for k, spec in SCHEMA.items() if spec.type_id == TYPE_LIST)
_TOPIC_DEFAULTS = {k: config_value(TopicConfig(), k) for k in TOPIC_LIST_KEYS}


async def _alter(ctx: RequestContext, res: Any, change: admin.Change, validate_only: bool) -> None:
    broker = ctx.broker
    if res.resource_type == TOPIC_RESOURCE:
        require_topic(ctx, Operation.ALTER_CONFIGS, res.resource_name)
        await broker.zk.run(
            admin.alter_topic, broker.zk.kazoo, res.resource_name, change, validate_only
        )
    elif res.resource_type == BROKER_RESOURCE:
        require_cluster(ctx, Operation.ALTER_CONFIGS)
        broker_id = broker_config.validate_entity(res.resource_name, broker.settings.broker_id)
        entity = broker_config.DEFAULT_ENTITY if broker_id is None else str(broker_id)
        await broker.zk.run(admin.alter_broker, broker.zk.kazoo, entity, change, validate_only)
    else:
        raise InvalidRequestError(f"resource type {res.resource_type} is not supported")


def _respond(ctx: RequestContext, results: list[tuple[Any, PafkaError | None]]) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    entry_cls = cls.AlterConfigsResourceResponse
    responses = [
        entry_cls(
            error_code=ctx.error(exc.code) if exc else 0,
            error_message=exc.message if exc else None,
            resource_type=res.resource_type,
            resource_name=res.resource_name,
        )
        for res, exc in results
    ]
    return cls(throttle_time_ms=0, responses=responses)


def _replaced(updated: dict[str, str], _current: dict[str, str]) -> dict[str, str]:
    return updated


def _incremental(
    current: dict[str, str],
    ops: list[ConfigOp],
    list_keys: Collection[str],
    defaults: Mapping[str, str],
) -> dict[str, str]:
    return apply_incremental(current, ops, list_keys, defaults)


async def handle_alter_configs(ctx: RequestContext, request: Any) -> Any:
    results: list[tuple[Any, PafkaError | None]] = []
    for res in request.resources:
        try:
            updated = replace_all((c.name, c.value) for c in res.configs)
            await _alter(
                ctx, res, functools.partial(_replaced, updated), bool(request.validate_only)
            )
            results.append((res, None))
        except PafkaError as exc:
            results.append((res, exc))
    return _respond(ctx, results)


async def handle_incremental_alter_configs(ctx: RequestContext, request: Any) -> Any:
    results: list[tuple[Any, PafkaError | None]] = []
    for res in request.resources:
        ops = [ConfigOp(c.name, c.config_operation, c.value) for c in res.configs]
        if res.resource_type == BROKER_RESOURCE:
            list_keys: frozenset[str] = broker_config.LIST_KEYS
            defaults = {"log.cleanup.policy": _TOPIC_DEFAULTS["cleanup.policy"]}
        else:
            list_keys, defaults = TOPIC_LIST_KEYS, _TOPIC_DEFAULTS

        change = functools.partial(_incremental, ops=ops, list_keys=list_keys, defaults=defaults)

        try:
            await _alter(ctx, res, change, bool(request.validate_only))
            results.append((res, None))
        except PafkaError as exc:
            results.append((res, exc))
    return _respond(ctx, results)
