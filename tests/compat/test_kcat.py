"""kcat (Debian's, on librdkafka): metadata, keyed produce with every codec, reading a partition
from an offset, a balanced consumer group (-G), and producing to a topic nobody created."""

from __future__ import annotations

import pytest

from tests.compat import scenarios
from tests.compat.drivers import python_driver

KCAT = python_driver("kcat", "kcat_driver.py")


def test_metadata(compat_cluster) -> None:
    scenarios.check_metadata(KCAT, compat_cluster)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_consume(codec: str, compat_cluster) -> None:
    scenarios.check_produce_consume(KCAT, KCAT, compat_cluster, codec)


def test_consume_from_offset(compat_cluster) -> None:
    scenarios.check_consume_from_offset(KCAT, compat_cluster)


def test_group(compat_cluster) -> None:
    # kcat commits as it reads and when it leaves; kafka-python reads the group's offsets.
    reader = python_driver("kafka-python", "kafka_python_driver.py", "2.0")
    scenarios.check_group(
        KCAT, compat_cluster, describes=False, commits_reported=False, offsets_reader=reader
    )


def test_produce_creates_missing_topic(compat_cluster) -> None:
    scenarios.check_auto_create(KCAT, compat_cluster)
