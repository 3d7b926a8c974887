"""Broker memory with many partitions: RSS of one broker hosting N partitions with data.

    python -m bench.partitions_memory --partitions 1000 --mib-per-partition 1

Creates one topic with N partitions on a fresh single-broker local cluster, writes the given
amount of data into every partition with librdkafka, reads a record back from every partition,
then prints the broker's resident memory. Records are kept in segment files, not in Python
objects, so RSS should not grow with the data stored.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from pathlib import Path

from bench.produce_fetch import create_topic, rss_mib
from pafka.local.cluster import LocalCluster

RECORD_BYTES = 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--mib-per-partition", type=float, default=1.0)
    args = parser.parse_args()

    from confluent_kafka import Consumer, Producer, TopicPartition

    cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="pafka-mem-")), brokers=1, controllers=1)
    cluster.start()
    try:
        pid = cluster.broker_pids()[1]
        topic = f"mem-{uuid.uuid4().hex[:6]}"
        create_topic(cluster.bootstrap, topic, args.partitions)
        print(
            f"after creating {args.partitions} partitions: RSS {rss_mib(pid):.0f} MiB", flush=True
        )
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "linger.ms": 20,
                "acks": "1",
                "queue.buffering.max.messages": 1_000_000,
            }
        )
        per_partition = int(args.mib_per_partition * 1024 * 1024 / RECORD_BYTES)
        value = os.urandom(RECORD_BYTES)
        started = time.perf_counter()
        for _ in range(per_partition):
            for p in range(args.partitions):
                while True:
                    try:
                        producer.produce(topic, value, partition=p)
                        break
                    except BufferError:
                        producer.poll(0.05)
            producer.poll(0)
        producer.flush(300)
        total_mib = per_partition * args.partitions * RECORD_BYTES / 2**20
        print(
            f"wrote {total_mib:.0f} MiB in {time.perf_counter() - started:.0f}s: "
            f"RSS {rss_mib(pid):.0f} MiB",
            flush=True,
        )
        consumer = Consumer(
            {"bootstrap.servers": cluster.bootstrap, "group.id": "mem", "enable.auto.commit": False}
        )
        consumer.assign(
            [TopicPartition(topic, p, per_partition - 1) for p in range(args.partitions)]
        )
        seen = 0
        deadline = time.monotonic() + 120
        while seen < args.partitions and time.monotonic() < deadline:
            seen += sum(1 for m in consumer.consume(1000, timeout=1.0) if m.error() is None)
        consumer.close()
        print(f"read the last record of {seen} partitions: RSS {rss_mib(pid):.0f} MiB", flush=True)
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
