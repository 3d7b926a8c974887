"""Produce/fetch throughput with librdkafka (confluent-kafka): 100-byte records, 1 and 3 partitions.

Run against a running cluster or let it start a local one:

    python -m bench.produce_fetch --bootstrap 127.0.0.1:9092
    python -m bench.produce_fetch --records 500000          # starts and stops a local cluster

For each partition count it creates a fresh topic (replication factor 1), produces ``--records``
records with acks=1 from one producer, then reads them all back from the beginning with one
consumer (assign, no group), and prints records/s and MB/s for both phases, plus the RSS of
every broker process when the cluster is local.
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

RECORD_BYTES = 100


@dataclass(frozen=True)
class Phase:
    name: str
    records: int
    seconds: float

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.records * RECORD_BYTES / self.seconds / 1e6 if self.seconds else 0.0

    def line(self, partitions: int) -> str:
        return (
            f"{self.name:8s} partitions={partitions} records={self.records:>9d} "
            f"{self.records_per_s:>12,.0f} records/s {self.mb_per_s:>8.1f} MB/s"
        )


def produce(bootstrap: str, topic: str, records: int) -> Phase:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "1",
            "linger.ms": 10,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "enable.idempotence": False,
        }
    )
    value = os.urandom(RECORD_BYTES)
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - started
    if remaining:
        raise SystemExit(f"{remaining} records were not acknowledged")
    return Phase("produce", records, elapsed)


def fetch(bootstrap: str, topic: str, partitions: int, records: int) -> Phase:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 50 * 1024 * 1024,
            "max.partition.fetch.bytes": 10 * 1024 * 1024,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = 0
    started = time.perf_counter()
    while seen < records:
        for msg in consumer.consume(10_000, timeout=5.0):
            if msg.error() is None:
                seen += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    return Phase("fetch", seen, elapsed)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="bootstrap servers; default: start a local cluster")
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--partitions", type=int, nargs="+", default=[1, 3])
    args = parser.parse_args()

    cluster = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        import tempfile

        from pafka.local.cluster import LocalCluster

        cluster = LocalCluster(
            Path(tempfile.mkdtemp(prefix="pafka-bench-")), brokers=1, controllers=1
        )
        cluster.start()
        bootstrap = cluster.bootstrap
    try:
        for partitions in args.partitions:
            topic = f"bench-{partitions}p-{uuid.uuid4().hex[:6]}"
            create_topic(bootstrap, topic, partitions)
            print(produce(bootstrap, topic, args.records).line(partitions), flush=True)
            print(fetch(bootstrap, topic, partitions, args.records).line(partitions), flush=True)
        if cluster is not None:
            for broker_id, pid in cluster.broker_pids().items():
                print(f"broker {broker_id} RSS {rss_mib(pid):.0f} MiB")
    finally:
        if cluster is not None:
            cluster.stop()


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[
        topic
    ].result(60)


if __name__ == "__main__":
    main()
