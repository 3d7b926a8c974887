"""kafka-python pinned to Kafka 0.10's protocol (Produce v2, magic 1, groups) and to 0.8.2's
(Produce v0, magic 0, Fetch v0, offsets committed without a group generation, no groups)."""

from __future__ import annotations

import pytest

from tests.compat import scenarios
from tests.compat.drivers import Driver, python_driver

V010 = python_driver("kafka-python (0, 10)", "kafka_python_driver.py", "0.10")
V082 = python_driver("kafka-python (0, 8, 2)", "kafka_python_driver.py", "0.8.2")
V0101 = python_driver("kafka-python (0, 10, 1)", "kafka_python_driver.py", "0.10.1")
BOTH = pytest.mark.parametrize("driver", [V010, V082], ids=["0.10", "0.8.2"])


@BOTH
def test_metadata(driver: Driver, compat_cluster) -> None:
    scenarios.check_metadata(driver, compat_cluster)


def test_create_topic_0_10_1(compat_cluster) -> None:
    # CreateTopics came with Kafka 0.10.1: kafka-python refuses it at (0, 10) and (0, 8, 2), and
    # sends v0 at (0, 10, 1).
    scenarios.check_create_topic(V0101, compat_cluster)


@BOTH
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_produce_consume(driver: Driver, codec: str, compat_cluster) -> None:
    scenarios.check_produce_consume(driver, driver, compat_cluster, codec)


@BOTH
def test_consume_from_offset(driver: Driver, compat_cluster) -> None:
    scenarios.check_consume_from_offset(driver, compat_cluster)


def test_group_0_10(compat_cluster) -> None:
    scenarios.check_group(V010, compat_cluster)


@BOTH
def test_commit_fetch_offsets(driver: Driver, compat_cluster) -> None:
    scenarios.check_commit_fetch(driver, compat_cluster)
