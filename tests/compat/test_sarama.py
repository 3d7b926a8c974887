"""Sarama 1.22.1 (Debian's golang-github-shopify-sarama-dev, built offline) with its default
configuration, which speaks Kafka 0.8.2 (Produce v0, Fetch v0, magic 0, offsets committed
without a group generation), and with the newest sarama.Version it knows, V2_2_0_0 (the issue
asks for 2.8.0, which this Sarama predates)."""

from __future__ import annotations

import pytest

from tests.compat import scenarios
from tests.compat.drivers import Driver, DriverError, go_driver, make_records


@pytest.fixture(scope="module")
def default() -> Driver:
    return go_driver("sarama", "default", label="sarama (default)")


@pytest.fixture(scope="module")
def newest() -> Driver:
    return go_driver("sarama", "max", label="sarama (V2_2_0_0)")


@pytest.fixture(scope="module", params=["default", "newest"])
def sarama(request: pytest.FixtureRequest) -> Driver:
    return request.getfixturevalue(request.param)


def test_metadata(sarama: Driver, compat_cluster) -> None:
    scenarios.check_metadata(sarama, compat_cluster)


def test_create_topic_newest(newest: Driver, compat_cluster) -> None:
    # Sarama itself refuses CreateTopics below Kafka 0.10.1 (the default configuration).
    scenarios.check_create_topic(newest, compat_cluster)


# Sarama refuses LZ4 below Kafka 0.10 (its configuration check); magic 0 has no zstd.
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy"])
def test_produce_consume_default(default: Driver, codec: str, compat_cluster) -> None:
    scenarios.check_produce_consume(default, default, compat_cluster, codec)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_produce_consume_newest(newest: Driver, codec: str, compat_cluster) -> None:
    scenarios.check_produce_consume(newest, newest, compat_cluster, codec)


def test_consume_from_offset(sarama: Driver, compat_cluster) -> None:
    scenarios.check_consume_from_offset(sarama, compat_cluster)


def test_group_newest(newest: Driver, compat_cluster) -> None:
    # Sarama's ConsumerGroup needs Kafka 0.10.2 or newer; the default configuration has none.
    scenarios.check_group(newest, compat_cluster)


def test_commit_fetch_offsets(sarama: Driver, compat_cluster) -> None:
    scenarios.check_commit_fetch(sarama, compat_cluster)


def test_zstd_in_produce_v3_refused_as_kafka_does(newest: Driver, compat_cluster) -> None:
    """Sarama 1.22 sends zstd batches in Produce v3; Kafka accepts zstd only from v7 and answers
    UNSUPPORTED_COMPRESSION_TYPE, and so must pafka (nothing is appended)."""
    topic = scenarios.unique("zstd-v3")
    compat_cluster.create_topic(topic, partitions=1, replication_factor=2)
    with pytest.raises(DriverError, match="does not support the compression type"):
        newest.run(
            "produce",
            bootstrap=compat_cluster.bootstrap,
            topic=topic,
            codec="zstd",
            records=make_records(1, 3, seed=7),
        )
    sent = make_records(1, 2, seed=8)
    newest.run(
        "produce", bootstrap=compat_cluster.bootstrap, topic=topic, codec="none", records=sent
    )
    got = newest.run(
        "consume", bootstrap=compat_cluster.bootstrap, topic=topic, partition=0, offset=0, count=2
    )["records"]
    assert [r["offset"] for r in got] == [0, 1]
