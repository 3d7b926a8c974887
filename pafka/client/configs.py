"""Configs over the Kafka protocol: DescribeConfigs and IncrementalAlterConfigs for topics and
brokers, what ``kafka-configs.sh`` does.

A topic's configs and the cluster-wide broker default go to any broker; one broker's configs go
to that broker, which alone answers for them (Kafka's routing).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pafka.client.cluster import ClusterClient
from pafka.cluster.config_ops import OpType
from pafka.errors import for_code
from pafka.protocol.messages import request_class
from pafka.protocol.versions import ApiKey

DESCRIBE_CONFIGS_VERSION = 3
INCREMENTAL_ALTER_CONFIGS_VERSION = 1
TOPIC = 2
BROKER = 4

# DescribeConfigs config_source values, named as Kafka's ConfigSource enum.
CONFIG_SOURCES = {
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
}


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    is_default: bool
    read_only: bool
    sensitive: bool
    source: str


@dataclass(frozen=True)
class Resource:
    """A topic, a broker (its id as the name) or the brokers' default (an empty name)."""

    type: int
    name: str

    def broker_id(self) -> int | None:
        """The broker that must answer, if any."""
        return int(self.name) if self.type == BROKER and self.name else None


async def _call(
    cluster: ClusterClient, resource: Resource, api: ApiKey, version: int, body: object
) -> object:
    broker = resource.broker_id()
    if broker is None:
        return await cluster.call_any(api, version, body)
    if broker not in cluster.brokers:
        await cluster.refresh([])
    return await cluster.call(broker, api, version, body)


async def describe_configs(cluster: ClusterClient, resource: Resource) -> list[ConfigEntry]:
    cls = request_class(ApiKey.DESCRIBE_CONFIGS)[DESCRIBE_CONFIGS_VERSION]
    body = cls(
        resources=[
            cls.DescribeConfigsResource(
                resource_type=resource.type,
                resource_name=resource.name,
                configuration_keys=None,
            )
        ],
        include_synonyms=False,
        include_documentation=False,
    )
    response = await _call(
        cluster, resource, ApiKey.DESCRIBE_CONFIGS, DESCRIBE_CONFIGS_VERSION, body
    )
    (result,) = response.results  # type: ignore[attr-defined]
    if result.error_code:
        raise for_code(result.error_code, result.error_message or resource.name)
    return [
        ConfigEntry(
            name=c.name,
            value=c.value,
            is_default=bool(c.is_default),
            read_only=bool(c.read_only),
            sensitive=bool(c.is_sensitive),
            source=CONFIG_SOURCES.get(c.config_source, "UNKNOWN"),
        )
        for c in sorted(result.configs, key=lambda c: c.name)
    ]


async def alter_configs(
    cluster: ClusterClient,
    resource: Resource,
    changes: Iterable[tuple[str, OpType, str | None]],
    *,
    validate_only: bool = False,
) -> None:
    """IncrementalAlterConfigs: each (name, operation, value) applied to ``resource``."""
    cls = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)[INCREMENTAL_ALTER_CONFIGS_VERSION]
    res_cls = cls.AlterConfigsResource
    body = cls(
        resources=[
            res_cls(
                resource_type=resource.type,
                resource_name=resource.name,
                configs=[
                    res_cls.AlterableConfig(name=n, config_operation=int(op), value=v)
                    for n, op, v in changes
                ],
            )
        ],
        validate_only=validate_only,
    )
    response = await _call(
        cluster,
        resource,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        INCREMENTAL_ALTER_CONFIGS_VERSION,
        body,
    )
    (result,) = response.responses  # type: ignore[attr-defined]
    if result.error_code:
        raise for_code(result.error_code, result.error_message or resource.name)
