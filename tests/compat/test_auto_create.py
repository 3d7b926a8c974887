"""Producing to a topic nobody created, with confluent-kafka (the Must-show's third client beside
kcat and kafkajs, whose modules check it too): Kafka creates it with its defaults
(auto.create.topics.enable, num.partitions) and the records are delivered."""

from __future__ import annotations

from tests.compat import scenarios
from tests.compat.drivers import python_driver

CONFLUENT = python_driver("confluent-kafka", "confluent_driver.py")


def test_produce_creates_missing_topic(compat_cluster) -> None:
    scenarios.check_auto_create(CONFLUENT, compat_cluster)
