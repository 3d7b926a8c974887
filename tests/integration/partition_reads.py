"""Reading partition 0 of a topic from its start with a real client, for tests that compare
what clients see: librdkafka (confluent-kafka) and kafka-python, each stopping after ``count``
records or after several empty polls."""

from __future__ import annotations

import uuid
from typing import Any


def confluent_messages(bootstrap: str, topic: str, count: int) -> list[Any]:
    """librdkafka's messages of partition 0 from offset 0 (errors fail the test)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"unused-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    messages: list[Any] = []
    empty_polls = 0
    while len(messages) < count and empty_polls < 20:
        msg = consumer.poll(1.0)
        if msg is None:
            empty_polls += 1
            continue
        assert msg.error() is None, msg.error()
        messages.append(msg)
    consumer.close()
    return messages


def kafka_python_records(bootstrap: str, topic: str, count: int, **options: Any) -> list[Any]:
    """kafka-python's records of partition 0 from offset 0; ``options`` go to its consumer
    (``api_version`` for an old protocol, fetch sizes)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **options)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    rows: list[Any] = []
    empty_polls = 0
    while len(rows) < count and empty_polls < 10:
        batch = consumer.poll(timeout_ms=1000)
        if not batch:
            empty_polls += 1
        for msgs in batch.values():
            rows += msgs
    consumer.close()
    return rows
