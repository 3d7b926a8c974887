"""Topic configs: Kafka's names and defaults, validation, and DescribeConfigs entries."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.cluster.topic_config import (
    CONFIG_NAMES,
    SOURCE_DEFAULT,
    SOURCE_STATIC_BROKER,
    SOURCE_TOPIC,
    TYPE_BOOLEAN,
    TYPE_DOUBLE,
    TYPE_INT,
    TYPE_LIST,
    TYPE_LONG,
    TYPE_STRING,
    TopicConfig,
    config_value,
    describe,
    parse_topic_config,
)
from pafka.errors import InvalidConfigError
from pafka.storage.config import LogConfig

# Kafka's documented topic-config defaults, as DescribeConfigs prints them.
KAFKA_DEFAULTS = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "delete.retention.ms": "86400000",
    "file.delete.delay.ms": "60000",
    "flush.messages": "9223372036854775807",
    "flush.ms": "9223372036854775807",
    "index.interval.bytes": "4096",
    "max.compaction.lag.ms": "9223372036854775807",
    "max.message.bytes": "1048588",
    "message.downconversion.enable": "true",
    "message.timestamp.difference.max.ms": "9223372036854775807",
    "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": "0.5",
    "min.compaction.lag.ms": "0",
    "min.insync.replicas": "1",
    "preallocate": "false",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "segment.index.bytes": "10485760",
    "segment.jitter.ms": "0",
    "segment.ms": "604800000",
    "unclean.leader.election.enable": "false",
}


def test_defaults_are_kafkas() -> None:
    assert {name: config_value(TopicConfig(), name) for name in CONFIG_NAMES} == KAFKA_DEFAULTS
    assert TopicConfig().log_config() == LogConfig()


def test_parse_overrides() -> None:
    config = parse_topic_config(
        {
            "retention.ms": "1000",
            "retention.bytes": " -5 ",
            "cleanup.policy": "compact, delete",
            "unclean.leader.election.enable": "TRUE",
            "min.cleanable.dirty.ratio": ".25",
            "message.timestamp.type": "LogAppendTime",
            "compression.type": "zstd",
        }
    )
    assert config.retention_ms == 1000
    assert config.retention_bytes == -5  # Kafka accepts any long here
    assert config.cleanup_policy == "compact,delete" and config.compacted and config.deletes
    assert config.unclean_leader_election_enable is True
    assert config.min_cleanable_dirty_ratio == 0.25
    assert config.message_timestamp_type == "LogAppendTime"
    log = config.log_config()
    assert (log.retention_ms, log.retention_bytes, log.cleanup_policy) == (
        1000,
        -5,
        "compact,delete",
    )


def test_overrides_apply_on_top_of_given_defaults() -> None:
    broker = parse_topic_config({"min.insync.replicas": "2", "segment.bytes": "4096"})
    config = parse_topic_config({"segment.bytes": "8192"}, broker)
    assert (config.min_insync_replicas, config.segment_bytes) == (2, 8192)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"retention.ms": "soon"}, "retention.ms must be an integer"),
        ({"retention.ms": "-2"}, "retention.ms must be at least -1"),
        ({"retention.ms": "1_000"}, "must be an integer"),
        ({"retention.ms": "1.5"}, "must be an integer"),
        ({"segment.bytes": "13"}, "at least 14"),
        ({"segment.bytes": str(2**31)}, "at most 2147483647"),
        ({"segment.ms": "0"}, "at least 1"),
        ({"segment.index.bytes": "3"}, "at least 4"),
        ({"flush.messages": "0"}, "at least 1"),
        ({"retention.bytes": str(2**63)}, "at most"),
        ({"min.insync.replicas": "0"}, "min.insync.replicas must be at least 1"),
        ({"cleanup.policy": "shred"}, "cleanup.policy must be"),
        ({"cleanup.policy": ""}, "cleanup.policy must be"),
        ({"cleanup.policy": "compact,,delete"}, "cleanup.policy must be"),
        ({"compression.type": "brotli"}, "compression.type must be one of"),
        ({"compression.type": "GZIP"}, "compression.type must be one of"),
        ({"message.timestamp.type": "createtime"}, "message.timestamp.type"),
        ({"unclean.leader.election.enable": "yes"}, "must be true or false"),
        ({"min.cleanable.dirty.ratio": "1.5"}, "between 0 and 1"),
        ({"min.cleanable.dirty.ratio": "nan"}, "must be a number"),
        ({"no.such.config": "1"}, "unknown topic config 'no.such.config'"),
        (
            {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
            "must not exceed max.compaction.lag.ms",
        ),
    ],
)
def test_bad_values_are_refused(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        parse_topic_config(overrides)


INTEGER_KEYS = [
    name
    for name in CONFIG_NAMES
    if isinstance(getattr(TopicConfig(), name.replace(".", "_")), int)
    and not isinstance(getattr(TopicConfig(), name.replace(".", "_")), bool)
]


@given(key=st.sampled_from(INTEGER_KEYS), value=st.integers(-(2**64), 2**64))
def test_integer_configs_parse_or_refuse(key: str, value: int) -> None:
    try:
        config = parse_topic_config({key: str(value)})
    except InvalidConfigError as e:
        assert key in str(e)
    else:
        assert config_value(config, key) == str(value)


@given(overrides=st.dictionaries(st.sampled_from(CONFIG_NAMES), st.text(max_size=12)))
def test_arbitrary_strings_parse_or_raise_invalid_config(overrides: dict[str, str]) -> None:
    try:
        config = parse_topic_config(overrides)
    except InvalidConfigError:
        return
    # What parses round-trips through the printed form.
    printed = {name: config_value(config, name) for name in CONFIG_NAMES}
    assert parse_topic_config(printed) == config


def test_describe_sources_and_types() -> None:
    broker = parse_topic_config({"min.insync.replicas": "2"})
    config = parse_topic_config({"segment.bytes": "2048"}, broker)
    entries = {e.name: e for e in describe(config, {"segment.bytes": "2048"})}
    assert list(entries) == sorted(KAFKA_DEFAULTS)
    segment = entries["segment.bytes"]
    assert (segment.value, segment.source, segment.is_default) == ("2048", SOURCE_TOPIC, False)
    mir = entries["min.insync.replicas"]
    assert (mir.value, mir.source, mir.is_default) == ("2", SOURCE_STATIC_BROKER, False)
    retention = entries["retention.ms"]
    assert (retention.value, retention.source, retention.is_default) == (
        "604800000",
        SOURCE_DEFAULT,
        True,
    )
    assert entries["unclean.leader.election.enable"].value == "false"
    assert not any(e.read_only or e.sensitive for e in entries.values())
    types = {name: e.type_id for name, e in entries.items()}
    assert types["cleanup.policy"] == TYPE_LIST
    assert types["compression.type"] == TYPE_STRING
    assert types["segment.bytes"] == TYPE_INT
    assert types["retention.ms"] == TYPE_LONG
    assert types["preallocate"] == TYPE_BOOLEAN
    assert types["min.cleanable.dirty.ratio"] == TYPE_DOUBLE


def test_override_equal_to_the_default_still_counts_as_topic_config() -> None:
    entries = {e.name: e for e in describe(TopicConfig(), {"retention.ms": "604800000"})}
    assert entries["retention.ms"].source == SOURCE_TOPIC
    assert not entries["retention.ms"].is_default
