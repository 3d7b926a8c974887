"""The cost of replication: acks=all on RF=3 against acks=1 on RF=1, side by side in one run.

    python -m bench.replication --records 200000

Starts a 3-broker local cluster, creates one RF=1 and one RF=3 (min ISR 2) topic with one
partition each, produces the same number of 100-byte records to each with one librdkafka
producer, and prints records/s for both and their ratio.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from pathlib import Path

from pafka.local.cluster import LocalCluster

RECORD_BYTES = 100


def produce(bootstrap: str, topic: str, records: int, acks: str) -> float:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "linger.ms": 10,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "enable.idempotence": acks == "all",
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
    if producer.flush(300):
        raise SystemExit("records were not acknowledged")
    return records / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    args = parser.parse_args()
    from confluent_kafka.admin import AdminClient, NewTopic

    cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="pafka-repl-")), brokers=3, controllers=1)
    cluster.start()
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        single, replicated = (f"{n}-{uuid.uuid4().hex[:6]}" for n in ("rf1", "rf3"))
        futures = admin.create_topics(
            [
                NewTopic(single, 1, 1),
                NewTopic(replicated, 1, 3, config={"min.insync.replicas": "2"}),
            ]
        )
        for future in futures.values():
            future.result(60)
        baseline = produce(cluster.bootstrap, single, args.records, "1")
        print(f"acks=1   RF=1 {baseline:>12,.0f} records/s", flush=True)
        measured = produce(cluster.bootstrap, replicated, args.records, "all")
        print(f"acks=all RF=3 {measured:>12,.0f} records/s", flush=True)
        print(f"acks=all RF=3 / acks=1 RF=1 = {measured / baseline:.2f}")
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
