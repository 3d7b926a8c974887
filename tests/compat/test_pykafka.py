"""pykafka 2.8 (its own environment, see tests/compat/pykafka-requirements.txt), speaking Kafka
0.9's protocol: magic 0 messages through Produce v0, Fetch v0, CreateTopics through its broker
API, SimpleConsumer reads and commits, and a BalancedConsumer with ``managed=False``: two
members that rebalance through ZooKeeper by the seeds' algorithm, committing to the brokers."""

from __future__ import annotations

import pytest

from tests.compat import scenarios
from tests.compat.drivers import PYKAFKA_PYTHON, Driver, python_driver


@pytest.fixture(scope="module")
def pykafka() -> Driver:
    if not PYKAFKA_PYTHON.exists():
        raise RuntimeError(f"{PYKAFKA_PYTHON} is missing: run `make deps`")
    return python_driver("pykafka", "pykafka_driver.py", "0.9.0", python=PYKAFKA_PYTHON)


def test_metadata(pykafka: Driver, compat_cluster) -> None:
    scenarios.check_metadata(pykafka, compat_cluster)


def test_create_topic(pykafka: Driver, compat_cluster) -> None:
    scenarios.check_create_topic(pykafka, compat_cluster)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_produce_consume(pykafka: Driver, codec: str, compat_cluster) -> None:
    scenarios.check_produce_consume(pykafka, pykafka, compat_cluster, codec)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_produce_consume_0_10(pykafka: Driver, codec: str, compat_cluster) -> None:
    # broker_version 0.10.0: magic 1 messages through Produce v2, Fetch v2.
    newer = python_driver("pykafka 0.10", "pykafka_driver.py", "0.10.0", python=PYKAFKA_PYTHON)
    scenarios.check_produce_consume(newer, newer, compat_cluster, codec)


def test_consume_from_offset(pykafka: Driver, compat_cluster) -> None:
    scenarios.check_consume_from_offset(pykafka, compat_cluster)


def test_balanced_consumer_through_zookeeper(pykafka: Driver, compat_cluster) -> None:
    # pafka describes a ZooKeeper-coordinated group as Stable with its registered consumers.
    scenarios.check_group(pykafka, compat_cluster)


def test_commit_fetch_offsets(pykafka: Driver, compat_cluster) -> None:
    scenarios.check_commit_fetch(pykafka, compat_cluster)
