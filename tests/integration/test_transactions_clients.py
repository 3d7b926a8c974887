"""Transactions as real clients use them: librdkafka (confluent-kafka), kafka-python and aiokafka
transactional producers, read_committed and read_uncommitted consumers of each.

Committed transactions are read exactly once, aborted ones never, an open one not before its
commit (and nothing behind it on its partition: the last stable offset holds there); a
read_uncommitted consumer sees every record written.
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

PARTITIONS = 3


def new_topic(cluster: Any, prefix: str) -> str:
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    return topic


def transactional(cluster: Any, **extra: object) -> Producer:
    p = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "transactional.id": f"txn-{uuid.uuid4()}",
            "linger.ms": 5,
            **extra,
        }
    )
    p.init_transactions(60)
    return p


def write(p: Producer, topic: str, values: Iterable[str]) -> None:
    for i, value in enumerate(values):
        p.produce(topic, value.encode(), partition=i % PARTITIONS)
    p.flush(30)


def read_all(cluster: Any, topic: str, isolation: str, *, quiet_s: float = 3.0) -> list[str]:
    """Every record a consumer of ``isolation`` reads from the start, once it has been quiet
    for ``quiet_s``."""
    c = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"reader-{uuid.uuid4()}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        got: list[str] = []
        quiet_since = time.monotonic()
        deadline = time.monotonic() + 60
        while time.monotonic() - quiet_since < quiet_s and time.monotonic() < deadline:
            batch = c.consume(1000, timeout=0.5)
            for msg in batch:
                assert msg.error() is None, msg.error()
                got.append((msg.value() or b"").decode())
            if batch:
                quiet_since = time.monotonic()
        return got
    finally:
        c.close()


def test_committed_transactions_are_read_once_and_aborted_ones_never(cluster: Any) -> None:
    topic = new_topic(cluster, "txn-commit-abort")
    p = transactional(cluster)
    committed = [f"c1-{i}" for i in range(30)] + [f"c2-{i}" for i in range(10)]
    aborted = [f"a-{i}" for i in range(20)]
    p.begin_transaction()
    write(p, topic, committed[:30])
    p.commit_transaction(30)
    p.begin_transaction()
    write(p, topic, aborted)
    p.abort_transaction(30)
    p.begin_transaction()
    write(p, topic, committed[30:])
    p.commit_transaction(30)

    seen = read_all(cluster, topic, "read_committed")
    assert Counter(seen) == Counter(committed)
    everything = read_all(cluster, topic, "read_uncommitted")
    assert Counter(everything) == Counter(committed + aborted)


def test_an_open_transaction_holds_back_its_partition_until_it_commits(cluster: Any) -> None:
    topic = new_topic(cluster, "txn-open")
    p = transactional(cluster)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, f"open-{i}".encode(), partition=0)
    p.flush(30)
    plain = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True})
    for i in range(5):
        plain.produce(topic, f"after-{i}".encode(), partition=0)
        plain.produce(topic, f"elsewhere-{i}".encode(), partition=1)
    plain.flush(30)

    # The open transaction's records, and those written after them on partition 0, wait for
    # its end; partition 1 is not held back.
    before = read_all(cluster, topic, "read_committed")
    assert sorted(before) == sorted(f"elsewhere-{i}" for i in range(5))
    assert len(read_all(cluster, topic, "read_uncommitted")) == 20

    p.commit_transaction(30)
    after = read_all(cluster, topic, "read_committed")
    assert Counter(after) == Counter(
        [f"open-{i}" for i in range(10)]
        + [f"after-{i}" for i in range(5)]
        + [f"elsewhere-{i}" for i in range(5)]
    )


def test_read_committed_end_offsets_stop_at_the_open_transaction(cluster: Any) -> None:
    topic = new_topic(cluster, "txn-lso")
    plain = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(4):
        plain.produce(topic, f"plain-{i}".encode(), partition=0)
    plain.flush(30)
    p = transactional(cluster)
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, f"open-{i}".encode(), partition=0)
    p.flush(30)

    def end(isolation: str) -> int:
        c = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "group.id": f"ends-{uuid.uuid4()}",
                "isolation.level": isolation,
            }
        )
        try:
            # librdkafka asks ListOffsets with its isolation level for the high mark.
            return int(c.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)[1])
        finally:
            c.close()

    assert end("read_uncommitted") == 10
    assert end("read_committed") == 4
    p.abort_transaction(30)
    # abort_transaction returns once the abort is decided; the markers follow (as in Kafka).
    # The ABORT marker takes an offset of its own.
    deadline = time.monotonic() + 20
    while (end("read_committed"), end("read_uncommitted")) != (11, 11):
        assert time.monotonic() < deadline, "the ABORT marker never ended the transaction"
        time.sleep(0.2)


def test_kafka_python_transactions_and_read_committed(cluster: Any) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTopicPartition

    topic = new_topic(cluster, "txn-kafka-python")
    p = KafkaProducer(
        bootstrap_servers=cluster.bootstrap,
        transactional_id=f"kp-{uuid.uuid4()}",
        enable_idempotence=True,
    )
    try:
        p.init_transactions()
        p.begin_transaction()
        for i in range(12):
            p.send(topic, f"kc-{i}".encode(), partition=i % PARTITIONS)
        p.commit_transaction()
        p.begin_transaction()
        for i in range(8):
            p.send(topic, f"ka-{i}".encode(), partition=i % PARTITIONS)
        p.flush()
        p.abort_transaction()
    finally:
        p.close()

    c = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap,
        isolation_level="read_committed",
        enable_auto_commit=False,
        consumer_timeout_ms=4000,
    )
    try:
        c.assign([KTopicPartition(topic, n) for n in range(PARTITIONS)])
        c.seek_to_beginning()
        seen = [m.value.decode() for m in c]
    finally:
        c.close()
    assert Counter(seen) == Counter(f"kc-{i}" for i in range(12))
    assert Counter(read_all(cluster, topic, "read_committed")) == Counter(seen)


def test_aiokafka_transactions_and_read_committed(cluster: Any) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka import TopicPartition as ATopicPartition

    topic = new_topic(cluster, "txn-aiokafka")

    async def scenario() -> list[str]:
        p = AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap, transactional_id=f"aio-{uuid.uuid4()}"
        )
        await p.start()
        try:
            async with p.transaction():
                for i in range(9):
                    await p.send(topic, f"ac-{i}".encode(), partition=i % PARTITIONS)
            await p.begin_transaction()
            for i in range(6):
                await p.send(topic, f"aa-{i}".encode(), partition=i % PARTITIONS)
            await p.abort_transaction()
        finally:
            await p.stop()
        c = AIOKafkaConsumer(
            bootstrap_servers=cluster.bootstrap,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await c.start()
        try:
            c.assign([ATopicPartition(topic, n) for n in range(PARTITIONS)])
            got: list[str] = []
            deadline = time.monotonic() + 20
            while len(got) < 9 and time.monotonic() < deadline:
                batches = await c.getmany(timeout_ms=500)
                got += [m.value.decode() for ms in batches.values() for m in ms]
            # Anything more (an aborted record) would arrive now.
            batches = await c.getmany(timeout_ms=2000)
            got += [m.value.decode() for ms in batches.values() for m in ms]
            return got
        finally:
            await c.stop()

    seen = asyncio.run(scenario())
    assert Counter(seen) == Counter(f"ac-{i}" for i in range(9))


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_the_gateway_reads_with_the_asked_isolation(cluster: Any, isolation: str) -> None:
    import requests

    topic = new_topic(cluster, "txn-gateway")
    p = transactional(cluster)
    p.begin_transaction()
    write(p, topic, [f"gc-{i}" for i in range(6)])
    p.commit_transaction(30)
    p.begin_transaction()
    write(p, topic, [f"ga-{i}" for i in range(6)])
    p.abort_transaction(30)
    p.begin_transaction()
    write(p, topic, [f"go-{i}" for i in range(6)])  # left open

    gateway = cluster.gateways[0]
    seen: list[str] = []
    ends = []
    for partition in range(PARTITIONS):
        answer = requests.get(
            f"{gateway}/topics/{topic}/partitions/{partition}/records",
            params={"offset": "0", "max_records": "100", "isolation": isolation},
            headers={"Accept": "application/vnd.kafka.binary.v2+json"},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        seen += [base64.b64decode(r["value"]).decode() for r in answer.json()["records"]]
        offsets = requests.get(
            f"{gateway}/topics/{topic}/partitions/{partition}/offsets",
            params={"isolation": isolation},
            timeout=30,
        )
        assert offsets.status_code == 200, offsets.text
        ends.append(offsets.json()["end_offset"])
    committed = [f"gc-{i}" for i in range(6)]
    if isolation == "read_committed":
        assert Counter(seen) == Counter(committed)
        # Each partition: 2 committed records and the COMMIT marker, 2 aborted records and
        # the ABORT marker; the open transaction starts there.
        assert ends == [6] * PARTITIONS
    else:
        assert Counter(seen) == Counter(
            committed + [f"ga-{i}" for i in range(6)] + [f"go-{i}" for i in range(6)]
        )
        assert ends == [8] * PARTITIONS
    p.abort_transaction(30)
