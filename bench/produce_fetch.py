"""Produce/fetch throughput with librdkafka (confluent-kafka): 100-byte records, 1 and 3 partitions.

Run against a running cluster or let it start a local one:

    python -m bench.produce_fetch --bootstrap 127.0.0.1:9092
    python -m bench.produce_fetch --records 500000          # starts and stops a local cluster

For each partition count it creates a fresh topic (replication factor 1), produces ``--records``
records with acks=1 from one producer, then reads them all back from the beginning with one
consumer (assign, no group), and prints records/s and MB/s for both phases, plus the RSS of
every broker process when the cluster is local. With ``--latency-rate N`` it then produces at N
records/s (acks=1, 1 ms linger) for ``--latency-seconds`` while a consumer in another process
reads them, and prints end-to-end latency percentiles (send time carried in each record).
"""

from __future__ import annotations

import argparse
import os
import struct
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RECORD_BYTES = 100
SENT_NS = struct.Struct(">q")  # the latency phase's send time, first in each record


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
            # librdkafka stops fetching for fetch.queue.backoff.ms (1 s by default) once its
            # queue holds queued.min.messages (100k): two 10 MiB fetches of 100-byte records
            # do, so by default the consumer idles most of each second, whatever the broker.
            "fetch.queue.backoff.ms": 1,
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


def _records_of_fetch_v4(payload: bytes) -> memoryview:
    """The records bytes of a one-partition Fetch v4 response, located without decoding.

    Layout: correlation_id i32, throttle_ms i32, topics i32, topic name i16+bytes,
    partitions i32, partition i32, error i16, high watermark i64, last stable offset i64,
    aborted transactions i32 (-1 = null, else 16 bytes each), records i32+bytes.
    """
    import struct

    view = memoryview(payload)
    pos = 4 + 4 + 4
    (name_len,) = struct.unpack_from(">h", view, pos)
    pos += 2 + name_len + 4 + 4 + 2 + 8 + 8
    (aborted,) = struct.unpack_from(">i", view, pos)
    pos += 4 + max(aborted, 0) * 16
    (size,) = struct.unpack_from(">i", view, pos)
    return view[pos + 4 : pos + 4 + max(size, 0)]


def fetch_raw(bootstrap: str, topic: str, records: int) -> tuple[Phase, float]:
    """Partition 0 read with plain Fetch v4 requests (10 MiB each) by a client that only walks
    batch headers: what the broker serves when the client is not the bottleneck."""
    import socket
    import struct

    from kafka.protocol.consumer import FetchRequest

    version = 4
    cls = FetchRequest[version]
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    offset, seen_bytes, seen_records, correlation_id = 0, 0, 0, 0
    started = time.perf_counter()
    with socket.create_connection((host, int(port))) as sock:
        while seen_records < records:
            correlation_id += 1
            partition = cls.FetchTopic.FetchPartition(
                partition=0, fetch_offset=offset, partition_max_bytes=10 << 20
            )
            request = cls(
                replica_id=-1,
                max_wait_ms=100,
                min_bytes=1,
                max_bytes=50 << 20,
                topics=[cls.FetchTopic(topic=topic, partitions=[partition])],
            )
            request.with_header(correlation_id=correlation_id, client_id="bench")
            sock.sendall(bytes(request.encode(version=version, header=True, framed=True)))
            (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
            data = _records_of_fetch_v4(sock.recv(size, socket.MSG_WAITALL))
            seen_bytes += len(data)
            pos = 0
            while pos + 61 <= len(data):
                base, length = struct.unpack_from(">qi", data, pos)
                (delta,) = struct.unpack_from(">i", data, pos + 23)
                (count,) = struct.unpack_from(">i", data, pos + 57)
                seen_records += count
                offset = base + delta + 1
                pos += 12 + length
    elapsed = time.perf_counter() - started
    return Phase("fetchraw", seen_records, elapsed), seen_bytes / elapsed / 1e6


def _latency_consumer(bootstrap: str, topic: str, records: int, out: Any) -> None:
    """Read ``records`` records; send back (sent_ns, latency_ns) of every 10th."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
            "fetch.queue.backoff.ms": 1,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    out.put("ready")
    seen, samples = 0, []
    while seen < records:
        # A 1 ms wait at most: consume() holds out for the whole batch until its timeout.
        for msg in consumer.consume(10_000, timeout=0.001):
            if msg.error() is None:
                seen += 1
                value = msg.value()
                if seen % 10 == 0 and value is not None:
                    (sent_ns,) = SENT_NS.unpack_from(value)
                    samples.append(time.time_ns() - sent_ns)
    consumer.close()
    out.put(samples)


def latency(bootstrap: str, topic: str, rate_per_s: int, seconds: float) -> str:
    """End-to-end latency at a paced produce rate (acks=1, 1 ms linger), one partition."""
    import multiprocessing

    from confluent_kafka import Producer

    records = int(rate_per_s * seconds)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    reader = ctx.Process(target=_latency_consumer, args=(bootstrap, topic, records, queue))
    reader.start()
    queue.get()
    time.sleep(1.0)  # the consumer's first fetch is in flight before the clock starts
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "1",
            "linger.ms": 1,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "enable.idempotence": False,
        }
    )
    padding = os.urandom(RECORD_BYTES - SENT_NS.size)
    started = time.perf_counter()
    sent = 0
    while sent < records:
        # Send what is due by now, then sleep to the next millisecond's share.
        due = min(records, int((time.perf_counter() - started) * rate_per_s) + 1)
        while sent < due:
            producer.produce(topic, SENT_NS.pack(time.time_ns()) + padding, partition=0)
            sent += 1
        producer.poll(0)
        pause = started + sent / rate_per_s - time.perf_counter()
        if pause > 0:
            time.sleep(min(pause, 0.001))
    producer.flush(60)
    elapsed = time.perf_counter() - started
    samples = queue.get()
    reader.join()
    # The first fifth is warm-up (connections, the consumer's first fetches).
    ms = sorted(x / 1e6 for x in samples[len(samples) // 5 :])

    def pct(q: float) -> float:
        return ms[min(len(ms) - 1, int(len(ms) * q))]

    return (
        f"latency  rate={records / elapsed:,.0f} records/s  p50 {pct(0.5):.1f} ms  "
        f"p99 {pct(0.99):.1f} ms  p99.9 {pct(0.999):.1f} ms  max {ms[-1]:.1f} ms"
    )


def page_cache_read_mb_per_s(data_dir: Path, topic: str) -> float:
    """Baseline: the same partition's segment files read in 10 MiB preads from the page cache."""
    files = sorted((data_dir / f"{topic}-0").glob("*.log"))
    total = 0
    started = time.perf_counter()
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            pos = 0
            while chunk := os.pread(fd, 10 << 20, pos):
                pos += len(chunk)
                total += len(chunk)
        finally:
            os.close(fd)
    return total / (time.perf_counter() - started) / 1e6


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
    parser.add_argument("--latency-rate", type=int, help="also measure latency at this rate/s")
    parser.add_argument("--latency-seconds", type=float, default=10.0)
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
            if partitions == 1:
                raw, mb_per_s = fetch_raw(bootstrap, topic, args.records)
                print(f"{raw.line(partitions)}  ({mb_per_s:.0f} MB/s of batch bytes)", flush=True)
                if cluster is not None:
                    baseline = page_cache_read_mb_per_s(Path(cluster.broker_data_dirs()[0]), topic)
                    print(
                        f"baseline page-cache read {baseline:.0f} MB/s; "
                        f"broker fetch / baseline = {mb_per_s / baseline:.2f}",
                        flush=True,
                    )
        if args.latency_rate:
            topic = f"bench-latency-{uuid.uuid4().hex[:6]}"
            create_topic(bootstrap, topic, 1)
            print(latency(bootstrap, topic, args.latency_rate, args.latency_seconds), flush=True)
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
