"""Record sets served by sendfile through a real cluster: replicas and consumers get them whole.

Values of 5 to 60 KB in batches of up to 1 MB make nearly every fetch answer a file region, for the
followers replicating with acks=all and for two real consumers; both clients check every batch's
CRC, and the values are compared byte for byte with what was produced.
"""

from __future__ import annotations

import random
import time
import uuid
from pathlib import Path

from tests.integration.conftest import ClusterHandle


def _values(count: int) -> list[bytes]:
    rng = random.Random(8)
    return [rng.randbytes(rng.randrange(5_000, 60_000)) for _ in range(count)]


def test_large_record_sets_reach_followers_and_consumers_intact(cluster: ClusterHandle) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition

    topic = f"sendfile-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    values = _values(300)
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "acks": "all",
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "message.max.bytes": 2_000_000,
        }
    )
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(60) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"g-{topic}",
            "enable.auto.commit": False,
            "check.crcs": True,
            "fetch.max.bytes": 8 << 20,
            "max.partition.fetch.bytes": 4 << 20,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < len(values) and time.monotonic() < deadline:
        for message in consumer.consume(1000, timeout=1.0):
            assert message.error() is None, message.error()
            got.append(message.value() or b"")
    consumer.close()
    assert got == values

    reader = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap,
        enable_auto_commit=False,
        check_crcs=True,
        max_partition_fetch_bytes=2 << 20,
    )
    partition = KafkaTopicPartition(topic, 0)
    reader.assign([partition])
    reader.seek(partition, 0)
    read: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(read) < len(values) and time.monotonic() < deadline:
        for records in reader.poll(timeout_ms=1000).values():
            read.extend(r.value for r in records)
    reader.close()
    assert read == values

    # Followers fetched the log as file regions too: every replica's files hold the same bytes.
    def logs() -> list[bytes]:
        return [
            b"".join(p.read_bytes() for p in sorted(Path(d, f"{topic}-0").glob("*.log")))
            for d in cluster.local.broker_data_dirs()
        ]

    deadline = time.monotonic() + 30
    while len(set(logs())) != 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    copies = logs()
    assert len(copies) == 3 and len(set(copies)) == 1
    assert sum(len(v) for v in values) < len(copies[0])
