"""Topic configs: parsing, validation and DescribeConfigs entries."""

from __future__ import annotations

import pytest

from pafka.cluster.topic_config import (
    SOURCE_DEFAULT,
    SOURCE_TOPIC,
    TopicConfig,
    describe,
    parse_topic_config,
)
from pafka.errors import InvalidConfigError


def test_parse_overrides() -> None:
    config = parse_topic_config(
        {
            "retention.ms": "1000",
            "cleanup.policy": "compact",
            "unclean.leader.election.enable": "TRUE",
        }
    )
    assert config.retention_ms == 1000
    assert config.cleanup_policy == "compact"
    assert config.unclean_leader_election_enable is True
    assert config.log_config().retention_ms == 1000


@pytest.mark.parametrize(
    "overrides",
    [
        {"retention.ms": "soon"},
        {"retention.ms": "-2"},
        {"cleanup.policy": "shred"},
        {"no.such.config": "1"},
        {"min.insync.replicas": "0"},
    ],
)
def test_bad_values_are_refused(overrides: dict[str, str]) -> None:
    with pytest.raises(InvalidConfigError):
        parse_topic_config(overrides)


def test_describe_marks_overrides() -> None:
    entries = {
        e.name: e
        for e in describe(parse_topic_config({"segment.bytes": "2048"}), {"segment.bytes": "2048"})
    }
    assert (
        entries["segment.bytes"].value == "2048" and entries["segment.bytes"].source == SOURCE_TOPIC
    )
    assert entries["retention.ms"].value == str(TopicConfig().retention_ms)
    assert entries["retention.ms"].source == SOURCE_DEFAULT and entries["retention.ms"].is_default
