"""kafka-python pinned to Kafka 0.10's protocol (Produce v2, magic 1, groups) and to 0.8.2's
(Produce v0, magic 0, Fetch v0, offsets committed without a group generation, no groups)."""

from __future__ import annotations

import pytest

from pafka.zk.znodes import ConsumerGroupZNodes
from tests.compat import scenarios
from tests.compat.drivers import Driver, python_driver

V010 = python_driver("kafka-python (0, 10)", "kafka_python_driver.py", "0.10")
V082 = python_driver("kafka-python (0, 8, 2)", "kafka_python_driver.py", "0.8.2")
V081 = python_driver("kafka-python (0, 8, 1)", "kafka_python_driver.py", "0.8.1")
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


def test_commit_fetch_offsets_in_zookeeper_0_8_1(compat_cluster) -> None:
    """At (0, 8, 1) kafka-python commits with OffsetCommit v0 and reads with OffsetFetch v0,
    which Kafka 2.x keeps in ZooKeeper as bare decimals, where ZooKeeper-era tools read them."""
    topic = scenarios.unique("zk-offsets")
    group = scenarios.unique("g")
    compat_cluster.create_topic(topic, partitions=2, replication_factor=2)
    offsets = {"0": 4, "1": 9}
    V081.run(
        "commit", bootstrap=compat_cluster.bootstrap, group=group, topic=topic, offsets=offsets
    )
    got = V081.run(
        "fetch_offsets",
        bootstrap=compat_cluster.bootstrap,
        group=group,
        topic=topic,
        partitions=[0, 1],
    )
    assert got["offsets"] == offsets
    for p, offset in offsets.items():
        data, _ = compat_cluster.zk.get(ConsumerGroupZNodes.offset_path(group, topic, int(p)))
        assert data == str(offset).encode()
