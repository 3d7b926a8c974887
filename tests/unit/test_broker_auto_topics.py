"""Auto-creation's settings and its replication factor decision."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from services.broker.auto_topics import capped_replication_factor
from services.broker.settings import BrokerSettings


def test_auto_creation_is_on_by_default_as_in_kafka() -> None:
    settings = BrokerSettings.from_env({"PAFKA_BROKER_ID": "1"})
    assert settings.auto_create_topics is True
    assert (settings.default_partitions, settings.default_replication_factor) == (1, 1)
    off = BrokerSettings.from_env(
        {"PAFKA_BROKER_ID": "1", "PAFKA_BROKER_AUTO_CREATE_TOPICS": "false"}
    )
    assert off.auto_create_topics is False


def test_the_factor_is_the_default_unless_fewer_brokers_are_live() -> None:
    assert capped_replication_factor(3, 5) == 3
    assert capped_replication_factor(3, 2) == 2
    assert capped_replication_factor(1, 0) == 1


@given(default=st.integers(1, 10), live=st.integers(0, 10))
def test_the_factor_never_exceeds_the_default_nor_the_live_brokers(default: int, live: int) -> None:
    factor = capped_replication_factor(default, live)
    assert 1 <= factor <= default
    assert factor <= max(live, 1)
    assert factor == default or factor == max(live, 1)
