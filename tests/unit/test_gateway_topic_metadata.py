"""The gateway's decisions about a topic its brokers' metadata lacks: wait only for what
ZooKeeper says exists and is not being deleted, for a bounded, growing pause."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.client.cluster import PartitionLeader, TopicInfo
from pafka.errors import ConfigError
from services.gateway.settings import GatewaySettings
from services.gateway.topic_metadata import (
    MAX_BACKOFF_S,
    ZkTopic,
    backoff_s,
    complete,
    worth_waiting,
)

LED = PartitionLeader(leader=1, leader_epoch=0, replicas=(1, 2), isr=(1, 2))
LEADERLESS = PartitionLeader(leader=-1, leader_epoch=0, replicas=(1, 2), isr=())


def test_a_topic_zookeeper_lacks_is_not_awaited() -> None:
    assert not worth_waiting(None, None)
    assert not worth_waiting(None, 0)


def test_a_topic_being_deleted_is_not_awaited() -> None:
    assert not worth_waiting(ZkTopic(frozenset({0, 1}), being_deleted=True), None)
    assert not worth_waiting(ZkTopic(frozenset({0, 1}), being_deleted=True), 0)


def test_a_topic_zookeeper_has_is_awaited_for_its_own_partitions_only() -> None:
    written = ZkTopic(frozenset({0, 1}), being_deleted=False)
    assert worth_waiting(written, None)
    assert worth_waiting(written, 1)
    assert not worth_waiting(written, 2)


def test_metadata_is_complete_with_the_topic_and_the_named_partition() -> None:
    assert not complete(None, None)
    assert not complete(TopicInfo("t"), None)  # answered with an error, no partitions
    info = TopicInfo("t", {0: LED, 1: LEADERLESS})
    assert complete(info, None)
    assert complete(info, 0)
    # No leader yet is the producer's and the reads' to wait out, as for any election.
    assert complete(info, 1)
    assert not complete(info, 2)


@given(st.integers(min_value=0, max_value=1000))
def test_backoff_grows_and_is_capped(attempt: int) -> None:
    assert 0 < backoff_s(attempt) <= MAX_BACKOFF_S
    assert backoff_s(attempt) <= backoff_s(attempt + 1)


def test_the_wait_is_a_setting() -> None:
    assert GatewaySettings.from_env({}).metadata_wait_ms == 10_000
    settings = GatewaySettings.from_env({"PAFKA_GATEWAY_METADATA_WAIT_MS": "0"})
    assert settings.metadata_wait_ms == 0
    with pytest.raises(ConfigError):
        GatewaySettings.from_env({"PAFKA_GATEWAY_METADATA_WAIT_MS": "-1"})
