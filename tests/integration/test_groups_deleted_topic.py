"""A consumer whose subscribed topic is deleted (and perhaps recreated) closes promptly, with
the eager and the cooperative-sticky protocol (confluent-kafka)."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from tests.integration.conftest import ClusterHandle

PARTITIONS = 2
CLOSE_WITHIN_S = 15.0


def _produce(cluster: ClusterHandle, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(count):
        producer.produce(topic, f"r{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def _delete(cluster: ClusterHandle, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.delete_topics([topic], operation_timeout=30)[topic].result(timeout=60)
    deadline = time.monotonic() + 60
    while topic in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"{topic} still listed"
        time.sleep(0.2)


@pytest.mark.parametrize("settle_s", [0.0, 5.0])
@pytest.mark.parametrize("members", [1, 2])
@pytest.mark.parametrize("recreate", [False, True], ids=["deleted", "recreated"])
@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_consumer_closes_promptly_after_its_topic_is_deleted(
    cluster: ClusterHandle, strategy: str, recreate: bool, members: int, settle_s: float
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"doomed-{suffix}", f"doomed-g-{suffix}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=1)
    cluster.wait_for_leaders(topic, PARTITIONS)
    _produce(cluster, topic, 10)
    config = {
        "bootstrap.servers": cluster.bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": strategy,
        "session.timeout.ms": 10_000,
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 200,
    }
    consumers = [Consumer(config) for _ in range(members)]
    for c in consumers:
        c.subscribe([topic])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 10 and time.monotonic() < deadline:
        for c in consumers:
            msg = c.poll(0.2)
            if msg is not None and msg.error() is None:
                seen += 1
    assert seen == 10
    consumer = consumers[0]
    others = consumers[1:]
    _delete(cluster, topic)
    if recreate:
        cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=1)
        cluster.wait_for_leaders(topic, PARTITIONS)
    # Let the client notice (metadata refresh, a rebalance) before it is asked to close.
    until = time.monotonic() + settle_s
    while time.monotonic() < until:
        for c in consumers:
            c.poll(0.1)
    keep_polling = threading.Event()

    def poll_others() -> None:
        while not keep_polling.is_set():
            for c in others:
                c.poll(0.1)

    poller = threading.Thread(target=poll_others, daemon=True)
    poller.start()

    closed = threading.Event()

    def close() -> None:
        consumer.close()
        closed.set()

    started = time.monotonic()
    threading.Thread(target=close, daemon=True).start()
    assert closed.wait(CLOSE_WITHIN_S + 30), "close() hung"
    took = time.monotonic() - started
    keep_polling.set()
    poller.join(timeout=10)
    for c in others:
        c.close()
    assert took < CLOSE_WITHIN_S
