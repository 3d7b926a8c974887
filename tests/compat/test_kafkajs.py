"""kafkajs 2.2 (Node): its own protocol implementation, v2 record batches, every codec (snappy,
LZ4 and zstd through pure-JavaScript codecs plugged into its registry)."""

from __future__ import annotations

import pytest

from tests.compat import scenarios
from tests.compat.drivers import node_driver


@pytest.fixture(scope="module")
def kafkajs():
    return node_driver()


def test_metadata(kafkajs, compat_cluster) -> None:
    scenarios.check_metadata(kafkajs, compat_cluster)


def test_create_topic(kafkajs, compat_cluster) -> None:
    scenarios.check_create_topic(kafkajs, compat_cluster)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_consume(kafkajs, codec: str, compat_cluster) -> None:
    scenarios.check_produce_consume(kafkajs, kafkajs, compat_cluster, codec)


def test_group(kafkajs, compat_cluster) -> None:
    scenarios.check_group(kafkajs, compat_cluster)


def test_commit_fetch_offsets(kafkajs, compat_cluster) -> None:
    scenarios.check_commit_fetch(kafkajs, compat_cluster)


def test_produce_creates_missing_topic(kafkajs, compat_cluster) -> None:
    scenarios.check_auto_create(kafkajs, compat_cluster)
