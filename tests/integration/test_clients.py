"""Real Kafka clients against a real pafka cluster: kafka-python, librdkafka and aiokafka.

Each client produces keyed records with headers under every compression codec and reads them
back with assign/seek; the records must come back identical and in order per partition.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict

import pytest

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
RECORDS_PER_CODEC = 60
PARTITIONS = 3

Record = tuple[bytes | None, bytes, tuple[tuple[str, bytes], ...]]


def _records(tag: str) -> list[Record]:
    out: list[Record] = []
    for i in range(RECORDS_PER_CODEC):
        key = f"key-{i % 7}".encode() if i % 5 else None
        value = f"{tag}-value-{i}-".encode() * (1 + i % 9)
        headers = (("h", f"{i}".encode()), ("tag", tag.encode())) if i % 3 else ()
        out.append((key, value, headers))
    return out


def _by_partition(rows: list[tuple[int, int, Record]]) -> dict[int, list[Record]]:
    parts: dict[int, list[tuple[int, Record]]] = defaultdict(list)
    for partition, offset, rec in rows:
        parts[partition].append((offset, rec))
    return {p: [r for _, r in sorted(v)] for p, v in parts.items()}


def _expected(sent: list[tuple[int, Record]]) -> dict[int, list[Record]]:
    parts: dict[int, list[Record]] = defaultdict(list)
    for partition, rec in sent:
        parts[partition].append(rec)
    return dict(parts)


def _new_topic(cluster, prefix: str) -> str:  # type: ignore[no-untyped-def]
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=PARTITIONS, replication_factor=3)
    return name


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_round_trip(cluster, codec: str) -> None:  # type: ignore[no-untyped-def]
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = _new_topic(cluster, f"kp-{codec}")
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap,
        acks="all",
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
    )
    sent: list[tuple[int, Record]] = []
    futures = []
    for rec in _records("kp"):
        key, value, headers = rec
        futures.append((producer.send(topic, key=key, value=value, headers=list(headers)), rec))
    for fut, rec in futures:
        meta = fut.get(timeout=30)
        sent.append((meta.partition, rec))
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    rows: list[tuple[int, int, Record]] = []
    while len(rows) < len(sent):
        batch = consumer.poll(timeout_ms=5000)
        assert batch, f"consumer stalled after {len(rows)} of {len(sent)} records"
        for tp, msgs in batch.items():
            for m in msgs:
                hdrs = tuple((k, bytes(v)) for k, v in m.headers)
                rows.append((tp.partition, m.offset, (m.key, m.value, hdrs)))
    consumer.close()
    assert _by_partition(rows) == _expected(sent)


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_kafka_round_trip(cluster, codec: str) -> None:  # type: ignore[no-untyped-def]
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = _new_topic(cluster, f"ck-{codec}")
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "compression.type": codec,
            "linger.ms": 5,
        }
    )
    sent: list[tuple[int, Record]] = []
    errors: list[str] = []

    def delivered(err, msg, rec):  # type: ignore[no-untyped-def]
        if err is not None:
            errors.append(str(err))
        else:
            sent.append((msg.partition(), rec))

    for rec in _records("ck"):
        key, value, headers = rec
        producer.produce(
            topic,
            key=key,
            value=value,
            headers=list(headers) or None,
            on_delivery=lambda err, msg, rec=rec: delivered(err, msg, rec),
        )
    assert producer.flush(30) == 0
    assert not errors

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"unused-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    rows: list[tuple[int, int, Record]] = []
    empty_polls = 0
    while len(rows) < len(sent) and empty_polls < 20:
        msg = consumer.poll(1.0)
        if msg is None:
            empty_polls += 1
            continue
        assert msg.error() is None, msg.error()
        hdrs = tuple((k, bytes(v)) for k, v in (msg.headers() or []))
        rows.append((msg.partition(), msg.offset(), (msg.key(), msg.value(), hdrs)))
    consumer.close()
    assert _by_partition(rows) == _expected(sent)


@pytest.mark.parametrize("codec", CODECS)
def test_aiokafka_round_trip(cluster, codec: str) -> None:  # type: ignore[no-untyped-def]
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    topic = _new_topic(cluster, f"ak-{codec}")

    async def scenario() -> tuple[list[tuple[int, Record]], list[tuple[int, int, Record]]]:
        producer = AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap,
            acks="all",
            compression_type=None if codec == "none" else codec,
        )
        await producer.start()
        sent: list[tuple[int, Record]] = []
        try:
            for rec in _records("ak"):
                key, value, headers = rec
                meta = await producer.send_and_wait(topic, value, key=key, headers=list(headers))
                sent.append((meta.partition, rec))
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False)
        await consumer.start()
        rows: list[tuple[int, int, Record]] = []
        try:
            tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            while len(rows) < len(sent):
                batch = await consumer.getmany(timeout_ms=5000)
                assert batch, f"consumer stalled after {len(rows)} records"
                for tp, msgs in batch.items():
                    for m in msgs:
                        hdrs = tuple((k, bytes(v)) for k, v in m.headers)
                        rows.append((tp.partition, m.offset, (m.key, m.value, hdrs)))
        finally:
            await consumer.stop()
        return sent, rows

    sent, rows = asyncio.run(scenario())
    assert _by_partition(rows) == _expected(sent)


def test_confluent_admin_creates_and_deletes_topics(cluster) -> None:  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    name = f"admin-{uuid.uuid4().hex[:8]}"
    futures = admin.create_topics([NewTopic(name, num_partitions=4, replication_factor=2)])
    futures[name].result(30)
    meta = admin.list_topics(timeout=10)
    assert name in meta.topics
    assert len(meta.topics[name].partitions) == 4
    assert all(len(p.replicas) == 2 for p in meta.topics[name].partitions.values())

    duplicate = admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])
    with pytest.raises(Exception, match=r"TOPIC_ALREADY_EXISTS|already exists"):
        duplicate[name].result(30)

    admin.delete_topics([name])[name].result(30)
    assert name not in admin.list_topics(timeout=10).topics
    for broker_dir in cluster.broker_data_dirs():
        assert not any(p.name.startswith(f"{name}-") for p in broker_dir.iterdir())
