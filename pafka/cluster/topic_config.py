"""Topic-level configuration: Kafka's names, defaults and validation, as plain values.

Overrides are kept in ZooKeeper as strings (``/config/topics/{topic}``), exactly as Kafka keeps
them; :func:`parse_topic_config` turns them into a typed :class:`TopicConfig` or refuses them
with INVALID_CONFIG and a message naming the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from pafka.errors import InvalidConfigError
from pafka.storage.config import DAY_MS, LogConfig

# DescribeConfigs wire values.
SOURCE_TOPIC = 1
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5
TYPE_BOOLEAN, TYPE_STRING, TYPE_INT, TYPE_LONG, TYPE_LIST = 1, 2, 3, 5, 7

CLEANUP_POLICIES = frozenset({"delete", "compact", "compact,delete", "delete,compact"})
TIMESTAMP_TYPES = frozenset({"CreateTime", "LogAppendTime"})
COMPRESSION_TYPES = frozenset({"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"})


@dataclass(frozen=True)
class TopicConfig:
    retention_ms: int = 7 * DAY_MS
    retention_bytes: int = -1
    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * DAY_MS
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1024 * 1024 + 12
    min_insync_replicas: int = 1
    cleanup_policy: str = "delete"
    unclean_leader_election_enable: bool = False
    message_timestamp_type: str = "CreateTime"
    compression_type: str = "producer"

    def log_config(self) -> LogConfig:
        return LogConfig(
            segment_bytes=self.segment_bytes,
            segment_ms=self.segment_ms,
            retention_ms=self.retention_ms,
            retention_bytes=self.retention_bytes,
            index_interval_bytes=self.index_interval_bytes,
            segment_index_bytes=self.segment_index_bytes,
            max_message_bytes=self.max_message_bytes,
            cleanup_policy=self.cleanup_policy,
        )


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str
    is_default: bool
    read_only: bool
    sensitive: bool
    source: int
    type_id: int


def _integer(minimum: int) -> Callable[[str, str], int]:
    def parse(key: str, raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise InvalidConfigError(f"{key} must be an integer, got {raw!r}") from None
        if value < minimum:
            raise InvalidConfigError(f"{key} must be at least {minimum}, got {value}")
        return value

    return parse


def _boolean(key: str, raw: str) -> bool:
    if raw.lower() not in ("true", "false"):
        raise InvalidConfigError(f"{key} must be true or false, got {raw!r}")
    return raw.lower() == "true"


def _choice(allowed: frozenset[str]) -> Callable[[str, str], str]:
    def parse(key: str, raw: str) -> str:
        if raw not in allowed:
            raise InvalidConfigError(f"{key} must be one of {sorted(allowed)}, got {raw!r}")
        return raw

    return parse


# Kafka name -> (field, parser, wire type)
SCHEMA: dict[str, tuple[str, Callable[[str, str], Any], int]] = {
    "retention.ms": ("retention_ms", _integer(-1), TYPE_LONG),
    "retention.bytes": ("retention_bytes", _integer(-1), TYPE_LONG),
    "segment.bytes": ("segment_bytes", _integer(14), TYPE_INT),
    "segment.ms": ("segment_ms", _integer(1), TYPE_LONG),
    "segment.index.bytes": ("segment_index_bytes", _integer(8), TYPE_INT),
    "index.interval.bytes": ("index_interval_bytes", _integer(0), TYPE_INT),
    "max.message.bytes": ("max_message_bytes", _integer(0), TYPE_INT),
    "min.insync.replicas": ("min_insync_replicas", _integer(1), TYPE_INT),
    "cleanup.policy": ("cleanup_policy", _choice(CLEANUP_POLICIES), TYPE_LIST),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", _boolean, TYPE_BOOLEAN),
    "message.timestamp.type": ("message_timestamp_type", _choice(TIMESTAMP_TYPES), TYPE_STRING),
    "compression.type": ("compression_type", _choice(COMPRESSION_TYPES), TYPE_STRING),
}
_FIELD_NAMES = {f.name for f in fields(TopicConfig)}
assert {field for field, _, _ in SCHEMA.values()} == _FIELD_NAMES


def parse_topic_config(
    overrides: Mapping[str, str], defaults: TopicConfig | None = None
) -> TopicConfig:
    changes: dict[str, Any] = {}
    for key, raw in overrides.items():
        spec = SCHEMA.get(key)
        if spec is None:
            raise InvalidConfigError(f"unknown topic config {key!r}")
        field, parse, _ = spec
        changes[field] = parse(key, str(raw).strip())
    return replace(defaults or TopicConfig(), **changes)


def _as_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def describe(config: TopicConfig, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    """Every topic config with its effective value and whether it was set on the topic."""
    entries = []
    for key, (field, _, type_id) in sorted(SCHEMA.items()):
        overridden = key in overrides
        entries.append(
            ConfigEntry(
                name=key,
                value=_as_text(getattr(config, field)),
                is_default=not overridden,
                read_only=False,
                sensitive=False,
                source=SOURCE_TOPIC if overridden else SOURCE_DEFAULT,
                type_id=type_id,
            )
        )
    return entries
