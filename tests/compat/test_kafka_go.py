"""segmentio/kafka-go 0.2.1 (Debian's, built offline): message format v1 through Produce v2,
Fetch v2 reads, CreateTopics, and groups through its Reader. It has no zstd, no public
offset-fetch and no describe-groups API: a group's commits are checked by a new member resuming
exactly after them."""

from __future__ import annotations

import pytest

from tests.compat import scenarios
from tests.compat.drivers import Driver, go_driver, key_values, make_records


@pytest.fixture(scope="module")
def kafka_go() -> Driver:
    return go_driver("kafkago", label="kafka-go")


def test_metadata(kafka_go: Driver, compat_cluster) -> None:
    scenarios.check_metadata(kafka_go, compat_cluster)


def test_create_topic(kafka_go: Driver, compat_cluster) -> None:
    scenarios.check_create_topic(kafka_go, compat_cluster)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_produce_consume(kafka_go: Driver, codec: str, compat_cluster) -> None:
    scenarios.check_produce_consume(kafka_go, kafka_go, compat_cluster, codec)


def test_consume_from_offset(kafka_go: Driver, compat_cluster) -> None:
    scenarios.check_consume_from_offset(kafka_go, compat_cluster)


def test_group_and_resume_after_commits(kafka_go: Driver, compat_cluster) -> None:
    result = scenarios.check_group(
        kafka_go, compat_cluster, describes=False, commits_reported=False
    )
    topic = result["topic"]
    third = make_records(4, 2, seed=99, tag="3")
    kafka_go.run(
        "produce", bootstrap=compat_cluster.bootstrap, topic=topic, codec="none", records=third
    )
    got = kafka_go.run(
        "resume",
        bootstrap=compat_cluster.bootstrap,
        topic=topic,
        group=result["group"],
        count=len(third),
    )["records"]
    assert key_values(got) == key_values(third)
