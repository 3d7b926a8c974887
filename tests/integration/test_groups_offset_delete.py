"""OffsetDelete (v0) on the shared real cluster, through kafka-python's admin client and
``pafka groups delete-offsets``: an Empty group loses what is asked, a live consumer group keeps
the offsets of the topics it consumes, ZooKeeper-era consumers count as consumers."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaTP
from kafka import errors as kafka_errors

from pafka.cli.main import main
from pafka.zk.znodes import ConsumerGroupZNodes as Z
from tests.integration.conftest import ClusterHandle
from tests.integration.test_groups_zookeeper_era import ZkEraConsumer

PARTITIONS = 2


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _topic(cluster: ClusterHandle) -> str:
    topic = _name("offdel")
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=1)
    cluster.wait_for_leaders(topic, PARTITIONS)
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(10):
        producer.produce(topic, b"x", partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    return topic


def _consume(cluster: ClusterHandle, group: str, topic: str) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    seen, deadline = 0, time.monotonic() + 60
    while seen < 10 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen += 1
            consumer.commit(msg, asynchronous=False)
    assert seen == 10
    return consumer


@pytest.fixture
def admin(cluster: ClusterHandle):  # type: ignore[no-untyped-def]
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    yield client
    client.close()


def test_offset_delete_follows_kafka(cluster: ClusterHandle, admin: KafkaAdminClient) -> None:
    consumed, other = _topic(cluster), _topic(cluster)
    group = _name("offdel-g")
    consumer = _consume(cluster, group, consumed)
    try:
        # While it is Stable: the topic it consumes is refused, another one is not.
        results = admin.delete_group_offsets(
            group, [KafkaTP(consumed, 0), KafkaTP(consumed, 1), KafkaTP(other, 0)]
        )
        assert results[KafkaTP(consumed, 0)] is kafka_errors.GroupSubscribedToTopicError
        assert results[KafkaTP(consumed, 1)] is kafka_errors.GroupSubscribedToTopicError
        assert results[KafkaTP(other, 0)] is kafka_errors.NoError
        unknown = admin.delete_group_offsets(group, [KafkaTP("no-such-topic-x", 0)])
        assert unknown[KafkaTP("no-such-topic-x", 0)] is kafka_errors.UnknownTopicOrPartitionError
    finally:
        consumer.close()
    assert cluster.zk.exists(Z.offset_path(group, consumed, 0)) is not None
    # Empty now: everything asked goes, the bare offset and the commit beside it.
    results = admin.delete_group_offsets(group, [KafkaTP(consumed, 0)])
    assert results[KafkaTP(consumed, 0)] is kafka_errors.NoError
    assert cluster.zk.exists(Z.offset_path(group, consumed, 0)) is None
    assert cluster.zk.exists(Z.commit_path(group, consumed, 0)) is None
    offsets = admin.list_group_offsets(group)[group]
    assert {tp.partition for tp in offsets if tp.topic == consumed} == {1}
    with pytest.raises(kafka_errors.GroupIdNotFoundError):
        admin.delete_group_offsets(_name("never"), [KafkaTP(consumed, 0)])


def test_delete_offsets_cli_and_zookeeper_era_consumers(
    cluster: ClusterHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    topic, group = _topic(cluster), _name("offdel-zk")
    zk_consumer = ZkEraConsumer(cluster.zk_connect, group, topic, "h")
    try:
        zk_consumer.commit(0, 4)
        zk_consumer.commit(1, 6)
        zk_consumer.register()
        capsys.readouterr()
        with pytest.raises(SystemExit) as refused:
            main(["groups", "delete-offsets", group, "--topic", topic, *_target(cluster)])
        assert refused.value.code
        assert "GroupSubscribedToTopicError" in capsys.readouterr().out
    finally:
        zk_consumer.close()
    with pytest.raises(SystemExit) as done:
        main(["groups", "delete-offsets", group, "--topic", f"{topic}:1", *_target(cluster)])
    assert not done.value.code
    out = capsys.readouterr().out
    assert f"{topic} 1" in " ".join(out.split()) and "Successful" in out
    assert cluster.zk.get(Z.offset_path(group, topic, 0))[0] == b"4"
    assert cluster.zk.exists(Z.offset_path(group, topic, 1)) is None


def _target(cluster: ClusterHandle) -> list[str]:
    return ["--bootstrap-server", cluster.bootstrap]
