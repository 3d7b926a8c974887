"""Auto-creation of topics as in Kafka: producing to a missing topic creates it and delivers."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from pafka.zk.znodes import TopicZNode
from tests.integration.conftest import ClusterHandle, own_cluster
from tests.integration.wire import request_once

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _metadata(cluster: ClusterHandle, topic: str, version: int, allow: bool = True) -> Any:
    cls = MetadataRequest[version]
    kwargs: dict[str, Any] = {"topics": [cls.MetadataRequestTopic(name=topic)]}
    if version >= 4:
        kwargs["allow_auto_topic_creation"] = allow
    address = cluster.broker_address(cluster.broker_ids()[0])
    return request_once(address, cls(**kwargs), MetadataResponse, version).topics[0]


def _assignment(cluster: ClusterHandle, topic: str) -> dict[int, tuple[int, ...]] | None:
    if cluster.zk.exists(TopicZNode.path(topic)) is None:
        return None
    data, _ = cluster.zk.get(TopicZNode.path(topic))
    return TopicZNode.decode(topic, data).partitions


def _read_values(cluster: ClusterHandle, topic: str, count: int) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": _name("g"),
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    return values


def test_confluent_kafka_producer_creates_the_topic_and_delivers(cluster) -> None:  # type: ignore[no-untyped-def]
    from confluent_kafka import Producer

    topic = _name("auto-rdkafka")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "message.timeout.ms": 30_000})
    reports: list[Any] = []
    for i in range(3):
        producer.produce(topic, value=b"r%d" % i, on_delivery=lambda err, _m: reports.append(err))
    assert producer.flush(40) == 0
    assert reports == [None, None, None]
    assert _assignment(cluster, topic) is not None and len(_assignment(cluster, topic) or {}) == 1
    assert _read_values(cluster, topic, 3) == [b"r0", b"r1", b"r2"]


def test_kafka_python_producer_creates_the_topic_and_delivers(cluster) -> None:  # type: ignore[no-untyped-def]
    topic = _name("auto-kp")
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", max_block_ms=30_000)
    for i in range(3):
        producer.send(topic, value=b"k%d" % i).get(30)
    producer.close()
    assert _read_values(cluster, topic, 3) == [b"k0", b"k1", b"k2"]


def test_metadata_honours_allow_auto_topic_creation(cluster) -> None:  # type: ignore[no-untyped-def]
    refused = _name("auto-refused")
    answer = _metadata(cluster, refused, 9, allow=False)
    assert answer.error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert _assignment(cluster, refused) is None

    # Before v4 a request cannot refuse: Kafka creates the topic.
    created = _name("auto-v1")
    assert _metadata(cluster, created, 1).error_code == LEADER_NOT_AVAILABLE
    assert _assignment(cluster, created) is not None
    cluster.wait_for_leaders(created, 1)
    assert _metadata(cluster, created, 1).error_code == NONE


@pytest.fixture(scope="module")
def small_cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    env = {
        "PAFKA_BROKER_NUM_PARTITIONS": "2",
        "PAFKA_BROKER_DEFAULT_REPLICATION_FACTOR": "3",
    }
    with own_cluster(
        tmp_path_factory, "auto-small", brokers=1, controllers=1, broker_env=env
    ) as handle:
        yield handle


def test_defaults_and_a_replication_factor_capped_by_live_brokers(small_cluster) -> None:  # type: ignore[no-untyped-def]
    topic = _name("auto-capped")
    assert _metadata(small_cluster, topic, 9).error_code == LEADER_NOT_AVAILABLE
    (broker_id,) = small_cluster.broker_ids()
    assert _assignment(small_cluster, topic) == {0: (broker_id,), 1: (broker_id,)}
    small_cluster.wait_for_leaders(topic, 2)
    log = Path(small_cluster.local.brokers()[0].log_path).read_text()
    lines = [line for line in log.splitlines() if "default.replication.factor 3" in line]
    assert len(lines) == 1 and topic in lines[0] and "1 live brokers" in lines[0]


def test_auto_creation_off_answers_unknown_topic(tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    env = {"PAFKA_BROKER_AUTO_CREATE_TOPICS": "false"}
    with own_cluster(
        tmp_path_factory, "auto-off", brokers=1, controllers=1, broker_env=env
    ) as handle:
        topic = _name("auto-off")
        assert _metadata(handle, topic, 1).error_code == UNKNOWN_TOPIC_OR_PARTITION
        assert _metadata(handle, topic, 9).error_code == UNKNOWN_TOPIC_OR_PARTITION
        assert _assignment(handle, topic) is None
