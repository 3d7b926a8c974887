"""A consumer whose subscribed topic is deleted (and perhaps recreated) closes promptly, with
the eager and the cooperative-sticky protocol (confluent-kafka)."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from tests.integration.conftest import ClusterHandle

PARTITIONS = 2
CLOSE_WITHIN_S = 5.0


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


@pytest.mark.parametrize("recreate", [False, True], ids=["deleted", "recreated"])
@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_consumer_closes_promptly_after_its_topic_is_deleted(
    cluster: ClusterHandle, strategy: str, recreate: bool
) -> None:
    """Two members committing on revocation and before closing; one closes at once after the
    deletion, while the other keeps polling."""
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
        "session.timeout.ms": 45_000,
        "enable.auto.commit": False,
    }
    consumers = [Consumer(config) for _ in range(2)]

    def revoker(c: Consumer):  # type: ignore[no-untyped-def]
        def on_revoke(_c: Any, partitions: list[Any]) -> None:
            with contextlib.suppress(KafkaException):  # nothing to commit, or a deleted topic
                c.commit(asynchronous=False)

        return on_revoke

    for c in consumers:
        c.subscribe([topic], on_revoke=revoker(c))
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
    keep_polling = threading.Event()

    def poll_others() -> None:
        while not keep_polling.is_set():
            for c in others:
                c.poll(0.1)

    poller = threading.Thread(target=poll_others, daemon=True)
    poller.start()

    closed = threading.Event()

    def close() -> None:
        with contextlib.suppress(KafkaException):
            consumer.commit(asynchronous=False)
        consumer.close()
        closed.set()

    started = time.monotonic()
    threading.Thread(target=close, daemon=True).start()
    assert closed.wait(CLOSE_WITHIN_S + 30), "close() hung"
    took = time.monotonic() - started
    keep_polling.set()
    poller.join(timeout=10)
    assert took < CLOSE_WITHIN_S
    started = time.monotonic()
    for c in others:
        c.close()
    assert time.monotonic() - started < CLOSE_WITHIN_S
