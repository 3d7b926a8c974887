"""Config changes written to ZooKeeper: topic overrides and dynamic broker configs.

Shared by the broker's AlterConfigs/IncrementalAlterConfigs handlers. Each change reads the
current overrides with their znode version, computes the new set (``pafka.cluster.config_ops``),
validates it and writes it only if the node is unchanged since the read, retrying on a
concurrent write, so two admins altering different keys of one topic both take effect. Brokers
and the controller watch these nodes, so a written change is enforced without a restart.

Kafka's error choices: an unknown topic config is INVALID_CONFIG, a value the config refuses is
INVALID_REQUEST ("Invalid config value for resource ...").
"""

from __future__ import annotations

from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from pafka.admin.topics import read_topic
from pafka.cluster import broker_config
from pafka.cluster.topic_config import SCHEMA, parse_topic_config
from pafka.errors import InvalidConfigError, InvalidRequestError
from pafka.zk.znodes import BrokerConfigZNode, TopicConfigZNode

Change = Callable[[dict[str, str]], dict[str, str]]
ATTEMPTS = 10


def validate_topic_overrides(topic: str, overrides: dict[str, str]) -> None:
    unknown = sorted(k for k in overrides if k not in SCHEMA)
    if unknown:
        raise InvalidConfigError(f"unknown topic config name: {', '.join(unknown)}")
    try:
        parse_topic_config(overrides)
    except InvalidConfigError as exc:
        raise InvalidRequestError(
            f"invalid config value for resource topic {topic!r}: {exc.message}"
        ) from exc


def _read(zk: KazooClient, path: str) -> tuple[bytes | None, int]:
    try:
        data, stat = zk.get(path)
    except NoNodeError:
        return None, -1
    return data, stat.version


def _write(zk: KazooClient, path: str, payload: bytes, version: int) -> bool:
    """Write if unchanged since read (version -1: absent then); False when it changed."""
    try:
        if version < 0:
            zk.create(path, payload, makepath=True)
        else:
            zk.set(path, payload, version=version)
    except (BadVersionError, NodeExistsError, NoNodeError):
        return False
    return True


def alter_topic(zk: KazooClient, topic: str, change: Change, validate_only: bool) -> dict[str, str]:
    """Apply ``change`` to a topic's overrides; returns the new overrides."""
    path = TopicConfigZNode.path(topic)
    for _ in range(ATTEMPTS):
        read_topic(zk, topic)  # UNKNOWN_TOPIC_OR_PARTITION
        data, version = _read(zk, path)
        current = TopicConfigZNode.decode(topic, data).config if data is not None else {}
        updated = change(current)
        validate_topic_overrides(topic, updated)
        if validate_only or updated == current:
            return updated
        if _write(zk, path, TopicConfigZNode(updated).encode(), version):
            return updated
    raise InvalidRequestError(f"the config of topic {topic!r} kept changing; try again")


def broker_overrides(zk: KazooClient, entity: str) -> dict[str, str]:
    data, _ = _read(zk, BrokerConfigZNode.path(entity))
    return BrokerConfigZNode.decode(entity, data).config if data is not None else {}


def alter_broker(
    zk: KazooClient, entity: str, change: Change, validate_only: bool
) -> dict[str, str]:
    """Apply ``change`` to ``/config/brokers/{entity}`` (an id or ``<default>``)."""
    path = BrokerConfigZNode.path(entity)
    for _ in range(ATTEMPTS):
        data, version = _read(zk, path)
        current = BrokerConfigZNode.decode(entity, data).config if data is not None else {}
        updated = change(current)
        broker_config.validate(updated)
        if validate_only or updated == current:
            return updated
        if _write(zk, path, BrokerConfigZNode(updated).encode(), version):
            return updated
    raise InvalidRequestError(f"the dynamic config of broker {entity!r} kept changing; try again")
