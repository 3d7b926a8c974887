"""Topic-level configuration: Kafka's names, defaults and validation, as plain values.

Overrides are kept in ZooKeeper as strings (``/config/topics/{topic}``), exactly as Kafka keeps
them; :func:`parse_topic_config` turns them into a typed :class:`TopicConfig` or refuses them
with INVALID_CONFIG and a message naming the key. :func:`describe` renders a config the way
Kafka's DescribeConfigs does (values as Kafka prints them, with their source and type).

Every key of Kafka's ``LogConfig`` that clients commonly set is accepted, so tools that create
topics with them work. pafka acts on the segment, retention, index, ``max.message.bytes``,
``min.insync.replicas``, ``unclean.leader.election.enable``, ``message.downconversion.enable``
and ``flush.messages`` settings, and on append (``services/broker/append_checks.py``) on
``message.timestamp.type`` (LogAppendTime batches stamped with the broker's time),
``message.timestamp.difference.max.ms`` (CreateTime records too far from it refused) and
``cleanup.policy`` (records without a key refused by compacted topics), and in the log cleaner
on ``cleanup.policy`` and the compaction settings (``delete.retention.ms``,
``min.compaction.lag.ms``, ``max.compaction.lag.ms``, ``min.cleanable.dirty.ratio``); the
others (``compression.type`` beyond refusing zstd topics to old fetches, ``preallocate``, ...)
are validated, stored and reported but do not change behaviour.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from pafka.errors import InvalidConfigError
from pafka.storage.config import DAY_MS, LogConfig, policy_compacts, policy_deletes

# DescribeConfigs wire values: ConfigSource.
SOURCE_TOPIC = 1  # TOPIC_CONFIG
SOURCE_STATIC_BROKER = 4  # STATIC_BROKER_CONFIG
SOURCE_DEFAULT = 5  # DEFAULT_CONFIG
# DescribeConfigs wire values: ConfigType.
TYPE_BOOLEAN, TYPE_STRING, TYPE_INT, TYPE_LONG, TYPE_DOUBLE, TYPE_LIST = 1, 2, 3, 5, 6, 7

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)

CLEANUP_POLICIES = frozenset({"delete", "compact"})
TIMESTAMP_TYPES = frozenset({"CreateTime", "LogAppendTime"})
COMPRESSION_TYPES = frozenset({"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"})


@dataclass(frozen=True)
class TopicConfig:
    """A topic's effective configuration; field names are the Kafka names with ``_``."""

    retention_ms: int = 7 * DAY_MS  # -1: keep forever
    retention_bytes: int = -1  # per partition; negative: no size limit
    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * DAY_MS
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1024 * 1024 + 12  # one record batch
    min_insync_replicas: int = 1
    cleanup_policy: str = "delete"  # comma-separated: delete, compact, or both
    unclean_leader_election_enable: bool = False
    message_timestamp_type: str = "CreateTime"
    message_timestamp_difference_max_ms: int = LONG_MAX
    compression_type: str = "producer"
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    delete_retention_ms: int = DAY_MS
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    file_delete_delay_ms: int = 60_000
    preallocate: bool = False
    message_downconversion_enable: bool = True

    @property
    def compacted(self) -> bool:
        return policy_compacts(self.cleanup_policy)

    @property
    def deletes(self) -> bool:
        return policy_deletes(self.cleanup_policy)

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
            flush_messages=self.flush_messages,
            delete_retention_ms=self.delete_retention_ms,
            min_compaction_lag_ms=self.min_compaction_lag_ms,
            max_compaction_lag_ms=self.max_compaction_lag_ms,
            min_cleanable_dirty_ratio=self.min_cleanable_dirty_ratio,
        )


@dataclass(frozen=True)
class ConfigEntry:
    """One DescribeConfigs entry, in the wire's terms."""

    name: str
    value: str
    is_default: bool
    read_only: bool
    sensitive: bool
    source: int  # SOURCE_*
    type_id: int  # TYPE_*


Parser = Callable[[str, str], Any]

_INTEGER = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _integer(minimum: int, maximum: int) -> Parser:
    def parse(key: str, raw: str) -> int:
        if not _INTEGER.fullmatch(raw):
            raise InvalidConfigError(f"{key} must be an integer, got {raw!r}")
        value = int(raw)
        if value < minimum:
            raise InvalidConfigError(f"{key} must be at least {minimum}, got {value}")
        if value > maximum:
            raise InvalidConfigError(f"{key} must be at most {maximum}, got {value}")
        return value

    return parse


def _int(minimum: int) -> Parser:
    return _integer(minimum, INT_MAX)


def _long(minimum: int = LONG_MIN) -> Parser:
    return _integer(minimum, LONG_MAX)


def _ratio(key: str, raw: str) -> float:
    if not _DOUBLE.fullmatch(raw):
        raise InvalidConfigError(f"{key} must be a number, got {raw!r}")
    value = float(raw)
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise InvalidConfigError(f"{key} must be between 0 and 1, got {raw}")
    return value


def _boolean(key: str, raw: str) -> bool:
    if raw.lower() not in ("true", "false"):
        raise InvalidConfigError(f"{key} must be true or false, got {raw!r}")
    return raw.lower() == "true"


def _choice(allowed: frozenset[str]) -> Parser:
    def parse(key: str, raw: str) -> str:
        if raw not in allowed:
            raise InvalidConfigError(f"{key} must be one of {sorted(allowed)}, got {raw!r}")
        return raw

    return parse


def _cleanup_policy(key: str, raw: str) -> str:
    """A comma-separated list of ``delete``/``compact``; kept in the given order, trimmed."""
    items: list[str] = []
    for item in (part.strip() for part in raw.split(",")):
        if item not in CLEANUP_POLICIES:
            raise InvalidConfigError(
                f"{key} must be a comma-separated list of {sorted(CLEANUP_POLICIES)}, got {raw!r}"
            )
        if item not in items:
            items.append(item)
    return ",".join(items)


@dataclass(frozen=True)
class _Spec:
    field: str
    parse: Parser
    type_id: int


SCHEMA: Mapping[str, _Spec] = {
    "cleanup.policy": _Spec("cleanup_policy", _cleanup_policy, TYPE_LIST),
    "compression.type": _Spec("compression_type", _choice(COMPRESSION_TYPES), TYPE_STRING),
    "delete.retention.ms": _Spec("delete_retention_ms", _long(0), TYPE_LONG),
    "file.delete.delay.ms": _Spec("file_delete_delay_ms", _long(0), TYPE_LONG),
    "flush.messages": _Spec("flush_messages", _long(1), TYPE_LONG),
    "flush.ms": _Spec("flush_ms", _long(0), TYPE_LONG),
    "index.interval.bytes": _Spec("index_interval_bytes", _int(0), TYPE_INT),
    "max.compaction.lag.ms": _Spec("max_compaction_lag_ms", _long(1), TYPE_LONG),
    "max.message.bytes": _Spec("max_message_bytes", _int(0), TYPE_INT),
    "message.downconversion.enable": _Spec("message_downconversion_enable", _boolean, TYPE_BOOLEAN),
    "message.timestamp.difference.max.ms": _Spec(
        "message_timestamp_difference_max_ms", _long(0), TYPE_LONG
    ),
    "message.timestamp.type": _Spec(
        "message_timestamp_type", _choice(TIMESTAMP_TYPES), TYPE_STRING
    ),
    "min.cleanable.dirty.ratio": _Spec("min_cleanable_dirty_ratio", _ratio, TYPE_DOUBLE),
    "min.compaction.lag.ms": _Spec("min_compaction_lag_ms", _long(0), TYPE_LONG),
    "min.insync.replicas": _Spec("min_insync_replicas", _int(1), TYPE_INT),
    "preallocate": _Spec("preallocate", _boolean, TYPE_BOOLEAN),
    "retention.bytes": _Spec("retention_bytes", _long(), TYPE_LONG),
    "retention.ms": _Spec("retention_ms", _long(-1), TYPE_LONG),
    # 14 bytes: Kafka's smallest legacy record (LegacyRecord.RECORD_OVERHEAD_V0).
    "segment.bytes": _Spec("segment_bytes", _int(14), TYPE_INT),
    "segment.index.bytes": _Spec("segment_index_bytes", _int(4), TYPE_INT),
    "segment.jitter.ms": _Spec("segment_jitter_ms", _long(0), TYPE_LONG),
    "segment.ms": _Spec("segment_ms", _long(1), TYPE_LONG),
    "unclean.leader.election.enable": _Spec(
        "unclean_leader_election_enable", _boolean, TYPE_BOOLEAN
    ),
}
"""Kafka config name -> TopicConfig field, parser, DescribeConfigs type."""

CONFIG_NAMES = tuple(sorted(SCHEMA))
assert {spec.field for spec in SCHEMA.values()} == {f.name for f in fields(TopicConfig)}


def parse_topic_config(
    overrides: Mapping[str, str], defaults: TopicConfig | None = None
) -> TopicConfig:
    """``defaults`` (Kafka's defaults if None) with ``overrides`` applied, every value checked.

    Unknown keys and bad values raise :class:`InvalidConfigError` naming the key.
    """
    changes: dict[str, Any] = {}
    for key, raw in overrides.items():
        spec = SCHEMA.get(key)
        if spec is None:
            raise InvalidConfigError(f"unknown topic config {key!r}")
        changes[spec.field] = spec.parse(key, str(raw).strip())
    config = replace(defaults or TopicConfig(), **changes)
    if config.min_compaction_lag_ms > config.max_compaction_lag_ms:
        raise InvalidConfigError(
            f"min.compaction.lag.ms ({config.min_compaction_lag_ms}) must not exceed "
            f"max.compaction.lag.ms ({config.max_compaction_lag_ms})"
        )
    return config


def config_value(config: TopicConfig, name: str) -> str:
    """The value of config ``name`` as Kafka prints it (``true``, ``604800000``, ``0.5``)."""
    value = getattr(config, SCHEMA[name].field)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_BUILTIN = TopicConfig()


def describe(config: TopicConfig, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    """Every topic config with its effective value, sorted by name.

    Source: TOPIC_CONFIG when the topic overrides it; otherwise STATIC_BROKER_CONFIG when the
    value differs from Kafka's default (so the broker's settings supplied it), else
    DEFAULT_CONFIG. ``is_default`` is true only for DEFAULT_CONFIG, as in Kafka.
    """
    entries = []
    for name in CONFIG_NAMES:
        value = config_value(config, name)
        if name in overrides:
            source = SOURCE_TOPIC
        elif value != config_value(_BUILTIN, name):
            source = SOURCE_STATIC_BROKER
        else:
            source = SOURCE_DEFAULT
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                is_default=source == SOURCE_DEFAULT,
                read_only=False,
                sensitive=False,
                source=source,
                type_id=SCHEMA[name].type_id,
            )
        )
    return entries
