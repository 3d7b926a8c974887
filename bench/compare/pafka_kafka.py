"""pafka through the Kafka protocol, with librdkafka's Python client (confluent-kafka).

The server side is a local pafka cluster of real processes (:class:`pafka.local.cluster.
LocalCluster`): ZooKeeper, one controller and ``max(1, replication_factor)`` brokers. Producers
are tuned for throughput (a 5 ms linger, 1 MB batches, ``acks`` from the workload) and send each
record to an explicit partition, round-robin (in paced runs, sticky runs of 10 ms of records:
:func:`bench.compare.workloads.run_records`); in paced (latency) runs they linger 1 ms, the
setting a Kafka user after latency would pick, as the OpenMessaging Benchmark sets its client
options per driver. Consumers join one group per topic and read what has arrived in
``consume(num_messages=...)`` batches, with librdkafka's fetch backoff lowered to 1 ms (see
:func:`consumer_config`).
"""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any, ClassVar

from bench.compare.client_loop import (
    ChunkedProgress,
    ConsumeTally,
    paced_batches,
    partition_cycle,
    read_deadline,
    send_deadline,
    worker_rate_per_s,
)
from bench.compare.driver import ConsumeStats, Endpoint, ProduceStats, Progress, Workload, stamp
from bench.compare.workloads import run_records

NAME = "pafka-kafka"

# What an acknowledged write survives, from the broker's flush policy: appends go to the page
# cache (pafka.storage.log, flush.messages defaults to never), and the broker fsyncs every log
# at its periodic checkpoint (services.broker: checkpoint_interval_ms = 5000) and on shutdown.
DURABILITY = (
    "acked writes are in the leader's page cache (written, not fsynced): they survive a broker "
    "process crash (kill -9), and a machine crash loses up to the last ~5 s (the broker fsyncs "
    "every log every 5 s); with RF 3 and acks=all (min ISR 2) a write is on at least 2 brokers "
    "before it is acknowledged"
)

# Members starting together join one generation after this delay (Kafka's 3 s is for real
# deployments; every run here starts its consumers at once).
BROKER_ENV = {"PAFKA_BROKER_GROUP_INITIAL_REBALANCE_DELAY_MS": "1000"}
# A consumer that sees nothing for this long while records are still due gives up loudly.
IDLE_TIMEOUT_S = 60.0
PRODUCE_BATCH_RECORDS = 1000
LINGER_MS = 5
# Paced producers send 10 ms of records to a partition at a time (sticky runs), so 1 ms of
# linger already fills a batch of a millisecond's records.
PACED_LINGER_MS = 1
CONSUME_BATCH_RECORDS = 10_000
FLUSH_TIMEOUT_S = 120.0


class System:
    """A local pafka cluster: ZooKeeper, 1 controller, ``max(1, RF)`` brokers, ``gateways``."""

    name = NAME
    durability = DURABILITY
    gateways = 0
    # Added to each gateway's environment.
    gateway_env: ClassVar[dict[str, str]] = {}

    def __init__(self) -> None:
        from pafka.local.cluster import LocalCluster
        from pafka.local.zookeeper import ZooKeeperServer

        self.cluster: LocalCluster | None = None
        self.zookeeper: ZooKeeperServer | None = None

    def install(self) -> None:
        from pafka.local.zookeeper import java_available

        if not java_available():
            raise RuntimeError(
                "pafka needs Debian's zookeeper and a JDK: run `make system-deps` "
                "(apt-get install zookeeper default-jre-headless)"
            )

    def start(self, workdir: Path, workload: Workload) -> Endpoint:
        from pafka.local.cluster import LocalCluster
        from pafka.local.zookeeper import ZooKeeperServer

        # A ZooKeeper of its own on a random port: a local cluster otherwise takes 2181 when it
        # looks free, and on a machine running other clusters its brokers could end up
        # registering in someone else's ZooKeeper.
        self.zookeeper = ZooKeeperServer(workdir / "pafka" / "zookeeper", port=0)
        try:
            self.zookeeper.start()
            self.cluster = LocalCluster(
                workdir / "pafka",
                brokers=max(1, workload.replication_factor),
                controllers=1,
                zookeeper=self.zookeeper.connect_string,
                gateways=self.gateways,
                broker_env=BROKER_ENV,
                service_env={f"gateway-{i}": self.gateway_env for i in range(1, self.gateways + 1)},
            )
            self.cluster.start()
        except BaseException:
            self.stop()
            raise
        extra = {f"gateway-{g.id}": g.http_url for g in self.cluster.gateways()}
        return Endpoint(system=self.name, address=self.cluster.bootstrap, extra=extra)

    def server_pids(self) -> list[int]:
        pids = [s.pid for s in self.cluster.services.values() if s.pid > 0] if self.cluster else []
        if self.zookeeper is not None and self.zookeeper.process is not None:
            pids.append(self.zookeeper.process.pid)
        return pids

    def profile_pids(self) -> dict[str, int]:
        """The processes worth a py-spy profile, by name: brokers and gateways."""
        if self.cluster is None:
            return {}
        return {s.name: s.pid for s in self.cluster.services.values() if s.kind != "controller"}

    def create_stream(self, endpoint: Endpoint, topic: str, workload: Workload) -> None:
        create_topic(endpoint.address, topic, workload)

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None
        if self.zookeeper is not None:
            self.zookeeper.stop()
            self.zookeeper = None


def create_topic(
    bootstrap: str,
    topic: str,
    workload: Workload,
    timeout_s: float = 60.0,
    client_config: dict[str, Any] | None = None,
) -> None:
    """Create ``topic`` and wait until every partition has a leader."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, **(client_config or {})})
    rf = workload.replication_factor
    config = {"min.insync.replicas": "2"} if rf >= 3 else {}
    new = NewTopic(topic, num_partitions=workload.partitions, replication_factor=rf, config=config)
    admin.create_topics([new])[topic].result(timeout_s)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = admin.list_topics(topic, timeout=10).topics.get(topic)
        if (
            found is not None
            and found.error is None
            and len(found.partitions) == workload.partitions
            and all(p.leader >= 0 for p in found.partitions.values())
        ):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{topic}: partitions without a leader after {timeout_s:.0f}s")


def producer_config(bootstrap: str, workload: Workload) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "acks": workload.acks,
        "linger.ms": linger_ms(workload),
        "batch.size": 1_000_000,
        "batch.num.messages": 100_000,
        "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 256 * 1024,
        "enable.idempotence": False,
        "compression.type": "none",
        # Successes cost nothing in Python; only failures call back.
        "delivery.report.only.error": True,
    }


def linger_ms(workload: Workload) -> int:
    """The producer's linger: LINGER_MS unpaced (full batches), PACED_LINGER_MS paced."""
    return LINGER_MS if workload.rate_per_s is None else PACED_LINGER_MS


# What one partition's fetch may bring: the consumers of the comparison, over Kafka's protocol and
# over REST, read in fetches of this size (see consumer_config on librdkafka's queue).
PARTITION_FETCH_BYTES = 10 * 1024 * 1024


def consumer_config(bootstrap: str, topic: str, worker: int = 0) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{topic}",
        # Static members (KIP-345) leave no rebalance behind when they close: a consumer done
        # with its share would otherwise stop the others' fetching while the group rebalances,
        # and their last records would wait ~1 s for it.
        "group.instance.id": f"bench-{topic}-{worker}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "fetch.wait.max.ms": 100,
        "fetch.max.bytes": 50 * 1024 * 1024,
        "max.partition.fetch.bytes": PARTITION_FETCH_BYTES,
        # One 10 MiB partition fetch of 100-byte records passes librdkafka's queued.min.messages
        # (100k) at once, and it then stops fetching for fetch.queue.backoff.ms, 1 s by default:
        # the consumer stalls whatever the broker does (measured at ~190k instead of 1.1M
        # records/s, and as tail latency in paced runs). A Kafka user with large fetches sets
        # it low too.
        "fetch.queue.backoff.ms": 1,
        "session.timeout.ms": 30_000,
    }


def security_config(endpoint: Endpoint) -> dict[str, Any]:
    """The client properties of a secured variant (``security.protocol``, ``ssl.*``,
    ``sasl.*``), carried in the endpoint; none for plaintext."""
    raw = endpoint.extra.get("kafka_config")
    return dict(json.loads(raw)) if raw else {}


class ClientDriver:
    """confluent-kafka producer and group consumer loops."""

    def produce(
        self,
        endpoint: Endpoint,
        topic: str,
        workload: Workload,
        worker: int,
        count: int,
        progress: Progress,
    ) -> ProduceStats:
        from confluent_kafka import Producer

        failures: list[str] = []

        def failed(err: Any, _msg: Any) -> None:
            if err is not None:
                failures.append(str(err))

        producer = Producer(
            {**producer_config(endpoint.address, workload), **security_config(endpoint)}
        )
        rate_per_s = worker_rate_per_s(workload.rate_per_s, workload.producers)
        partitions = partition_cycle(worker, workload.partitions, run_records(workload))
        chunks = ChunkedProgress(progress)
        size, deadline = workload.message_size_bytes, send_deadline(workload)
        started = time.perf_counter()
        sent = 0
        for due in paced_batches(count, rate_per_s, PRODUCE_BATCH_RECORDS):
            if time.monotonic() > deadline:
                break
            by_partition: dict[int, list[dict[str, Any]]] = {}
            for partition in itertools.islice(partitions, due):
                by_partition.setdefault(partition, []).append({"value": stamp(size)})
            for partition, messages in by_partition.items():
                _enqueue(producer, topic, partition, messages, failed)
            sent += due
            producer.poll(0)
            chunks.add(due)
        unsent = producer.flush(FLUSH_TIMEOUT_S)
        seconds = time.perf_counter() - started
        chunks.flush()
        if unsent or failures:
            first = failures[0] if failures else f"not delivered within {FLUSH_TIMEOUT_S:.0f}s"
            raise RuntimeError(
                f"{NAME} producer {worker}: {unsent + len(failures)} of {sent} records were not "
                f"acknowledged ({first})"
            )
        return ProduceStats(records=sent, bytes=sent * size, seconds=seconds)

    def consume(
        self,
        endpoint: Endpoint,
        topic: str,
        workload: Workload,
        worker: int,
        count: int,
        progress: Progress,
    ) -> ConsumeStats:
        from confluent_kafka import Consumer

        assigned: list[int] = []

        def on_assign(_consumer: Any, partitions: list[Any]) -> None:
            assigned[:] = [p.partition for p in partitions]

        consumer = Consumer(
            {**consumer_config(endpoint.address, topic, worker), **security_config(endpoint)}
        )
        consumer.subscribe([topic], on_assign=on_assign)
        try:
            # Ready once the group gave this member its partitions: the runner starts the
            # producers only then, so no record waits for a rebalance.
            join_deadline = time.monotonic() + IDLE_TIMEOUT_S
            early = consumer.consume(num_messages=1, timeout=0.1)
            while not assigned and not early and time.monotonic() < join_deadline:
                early = consumer.consume(num_messages=1, timeout=0.1)
            progress(0)
            tally = ConsumeTally(progress, IDLE_TIMEOUT_S)
            tally.add(_values(early))
            drain_at = read_deadline(workload)
            while tally.records < count and time.monotonic() < drain_at:
                tally.add(_values(_next_batch(consumer, count - tally.records)))
                tally.raise_if_idle(f"{NAME} consumer {worker} of {topic}", count)
            return tally.stats()
        finally:
            consumer.close()


def _enqueue(
    producer: Any, topic: str, partition: int, messages: list[dict[str, Any]], failed: Any
) -> None:
    """Hand ``messages`` to the client with ``produce_batch`` (one call, not one per record),
    waiting for room while its queue is full."""
    while messages:
        queued = producer.produce_batch(topic, messages, partition=partition, on_delivery=failed)
        if queued == len(messages):
            return
        refused = [m for m in messages if "_error" in m]
        errors = {str(m.pop("_error")) for m in refused}
        if any("QUEUE_FULL" not in e and "Queue full" not in e for e in errors):
            raise RuntimeError(f"{NAME}: the client refused records: {sorted(errors)[0]}")
        messages = refused
        producer.poll(0.005)  # the client's queue is full: let it drain


def _next_batch(consumer: Any, most: int) -> list[Any]:
    """What has arrived, at most ``most`` records, waiting up to 0.5 s for the first one.

    ``consume(n, timeout)`` alone would wait for all ``n`` (or the timeout) and so add up to
    the timeout to every latency of a paced run.
    """
    first = consumer.poll(0.5)
    if first is None:
        return []
    if most <= 1:
        return [first]
    return [first, *consumer.consume(num_messages=min(CONSUME_BATCH_RECORDS, most - 1), timeout=0)]


def _values(messages: list[Any]) -> list[bytes]:
    # Errors in a batch are the client's transient ones (it retries them itself): skipped.
    return [v for m in messages if m.error() is None and (v := m.value()) is not None]
