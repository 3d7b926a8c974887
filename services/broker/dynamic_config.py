"""The dynamic broker configs in force on this broker, kept current by two ZooKeeper watches.

``/config/brokers/<default>`` and ``/config/brokers/{id}`` (this broker's wins) override the
static settings' topic defaults; on every change the broker recomputes the configs of the
topics it hosts, so a new ``log.retention.ms`` or ``message.max.bytes`` is enforced at once. A
malformed node is logged and treated as empty, so it cannot stop the broker.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from pafka.cluster import broker_config
from pafka.cluster.topic_config import (
    SOURCE_STATIC_BROKER,
    TYPE_BOOLEAN,
    TYPE_DOUBLE,
    TYPE_INT,
    TYPE_LIST,
    TYPE_LONG,
    TYPE_STRING,
    ConfigEntry,
    TopicConfig,
    config_value,
)
from pafka.errors import CoordinationError, InvalidRequestError
from pafka.zk.client import ZkClient
from pafka.zk.znodes import BrokerConfigZNode

log = logging.getLogger(__name__)

# DescribeConfigs ConfigSource values of dynamic broker configs.
SOURCE_DYNAMIC_BROKER = 2
SOURCE_DYNAMIC_DEFAULT_BROKER = 3

_TYPES = {
    "log.retention.ms": TYPE_LONG,
    "log.retention.bytes": TYPE_LONG,
    "log.segment.bytes": TYPE_INT,
    "log.roll.ms": TYPE_LONG,
    "log.index.interval.bytes": TYPE_INT,
    "log.flush.interval.messages": TYPE_LONG,
    "log.cleanup.policy": TYPE_LIST,
    "log.message.timestamp.type": TYPE_STRING,
    "log.message.timestamp.difference.max.ms": TYPE_LONG,
    "message.max.bytes": TYPE_INT,
    "min.insync.replicas": TYPE_INT,
    "unclean.leader.election.enable": TYPE_BOOLEAN,
    "log.cleaner.delete.retention.ms": TYPE_LONG,
    "log.cleaner.min.compaction.lag.ms": TYPE_LONG,
    "log.cleaner.max.compaction.lag.ms": TYPE_LONG,
    "log.cleaner.min.cleanable.ratio": TYPE_DOUBLE,
}
assert set(_TYPES) == set(broker_config.TOPIC_KEY_OF)


class DynamicBrokerConfig:
    def __init__(self, broker_id: int, on_change: Callable[[], Awaitable[None]]) -> None:
        self.broker_id = broker_id
        self.cluster_default: dict[str, str] = {}
        self.own: dict[str, str] = {}
        self._on_change = on_change

    def watch(self, zk: ZkClient) -> None:
        zk.watch_data(BrokerConfigZNode.path(broker_config.DEFAULT_ENTITY), self._default_changed)
        zk.watch_data(BrokerConfigZNode.path(str(self.broker_id)), self._own_changed)

    def _decode(self, entity: str, data: bytes | None) -> dict[str, str]:
        if data is None:
            return {}
        try:
            overrides = BrokerConfigZNode.decode(entity, data).config
            broker_config.validate(overrides)
        except (CoordinationError, InvalidRequestError) as exc:
            log.error("ignoring dynamic broker configs of %r: %s", entity, exc)
            return {}
        return overrides

    async def _default_changed(self, data: bytes | None) -> None:
        fresh = self._decode(broker_config.DEFAULT_ENTITY, data)
        if fresh != self.cluster_default:
            self.cluster_default = fresh
            await self._on_change()

    async def _own_changed(self, data: bytes | None) -> None:
        fresh = self._decode(str(self.broker_id), data)
        if fresh != self.own:
            self.own = fresh
            await self._on_change()

    def topic_defaults(self) -> dict[str, str]:
        """The dynamic values in force, under their topic config names."""
        return broker_config.topic_defaults(broker_config.effective(self.cluster_default, self.own))

    def describe(self, static: list[ConfigEntry], defaults: TopicConfig) -> list[ConfigEntry]:
        """The broker's config entries with the dynamic ones added or replaced: a value this
        broker's node sets is DYNAMIC_BROKER_CONFIG, one from ``<default>`` is
        DYNAMIC_DEFAULT_BROKER_CONFIG, else the static value; all of these are writable."""
        entries = {e.name: e for e in static}
        for name, type_id in _TYPES.items():
            if name in self.own:
                value, source = self.own[name], SOURCE_DYNAMIC_BROKER
            elif name in self.cluster_default:
                value, source = self.cluster_default[name], SOURCE_DYNAMIC_DEFAULT_BROKER
            else:
                value = config_value(defaults, broker_config.TOPIC_KEY_OF[name])
                source = SOURCE_STATIC_BROKER
            entries[name] = ConfigEntry(name, value, False, False, False, source, type_id)
        return list(entries.values())
