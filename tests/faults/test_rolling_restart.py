"""Rolling restart under load: RF 3, min ISR 2, acks=all with idempotence, unclean election off.

Every broker in turn gets SIGTERM (controlled shutdown) and comes back while a producer keeps
writing; no write may fail and every acknowledged record must be read back exactly once, in
order per partition.
"""

from __future__ import annotations

import signal
import threading
import time
import uuid

import pytest

from tests.integration.conftest import ClusterHandle

pytestmark = pytest.mark.faults

PARTITIONS = 6


def test_rolling_restart_loses_no_acknowledged_write(fault_cluster: ClusterHandle) -> None:
    from confluent_kafka import Producer
    from kafka import KafkaConsumer, TopicPartition

    topic = f"rolling-{uuid.uuid4().hex[:6]}"
    fault_cluster.create_topic(
        topic, partitions=PARTITIONS, replication_factor=3, config={"min.insync.replicas": "2"}
    )
    producer = Producer(
        {
            "bootstrap.servers": fault_cluster.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 120_000,
        }
    )
    acked: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    failed: list[str] = []
    stop = threading.Event()

    def delivered(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is None:
            acked[msg.partition()].append(msg.value())
        else:
            failed.append(str(err))

    def produce() -> None:
        i = 0
        while not stop.is_set():
            producer.produce(
                topic, value=f"r{i:07d}".encode(), partition=i % PARTITIONS, on_delivery=delivered
            )
            producer.poll(0)
            i += 1
            if i % 200 == 0:
                time.sleep(0.01)
        producer.flush(120)

    thread = threading.Thread(target=produce)
    thread.start()
    try:
        for broker_id in fault_cluster.broker_ids():
            time.sleep(2)
            fault_cluster.local.kill(f"broker-{broker_id}", signal.SIGTERM)
            fault_cluster.local.restart(f"broker-{broker_id}")
            deadline = time.monotonic() + 60
            while any(
                len(fault_cluster.partition_state(topic, p).isr) < 3 for p in range(PARTITIONS)
            ):
                assert time.monotonic() < deadline, "replicas did not rejoin the ISR"
                time.sleep(0.2)
    finally:
        stop.set()
        thread.join()
    assert not failed, failed[:5]

    consumer = KafkaConsumer(bootstrap_servers=fault_cluster.bootstrap, enable_auto_commit=False)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 120
    while (
        sum(map(len, got.values())) < sum(map(len, acked.values())) and time.monotonic() < deadline
    ):
        for tp, records in consumer.poll(timeout_ms=1000).items():
            got[tp.partition].extend(r.value for r in records)
    consumer.close()
    for p in range(PARTITIONS):
        assert got[p] == acked[p], f"partition {p} differs from what was acknowledged"
