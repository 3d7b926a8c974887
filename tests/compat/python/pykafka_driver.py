"""pykafka driver of the compatibility suite: ``pykafka_driver.py BROKER_VERSION OP 'JSON'``
(pykafka's ``broker_version``: "0.9.0", its default, or "0.10.0"), run by the Python of pykafka's
own environment (pykafka 2.8 pins kazoo 2.5, pafka kazoo 2.11). The contract is in
tests/compat/drivers.py. At 0.9.0 pykafka speaks Kafka 0.9's protocol (Produce v0 and magic 0,
Fetch v0, OffsetCommit v1), at 0.10.0 magic 1 through Produce v2 and Fetch v2; its groups are the
BalancedConsumer with ``managed=False``, whose members rebalance among themselves through
ZooKeeper (the seeds' algorithm)."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from typing import Any

from pykafka import KafkaClient
from pykafka.common import CompressionType, OffsetType
from pykafka.protocol import CreateTopicRequest

CODECS = {
    "none": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
}
TIMEOUT_S = 60


def record(msg: Any, member: str | None = None) -> dict[str, Any]:
    out = {
        "partition": msg.partition_id,
        "offset": msg.offset,
        "key": None if msg.partition_key is None else msg.partition_key.decode(),
        "value": None if msg.value is None else msg.value.decode(),
    }
    if member is not None:
        out["member"] = member
    return out


def wait_for(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Driver:
    def __init__(self, broker_version: str, args: dict[str, Any]) -> None:
        self.args = args
        self.broker_version = broker_version
        self.client = KafkaClient(hosts=args["bootstrap"], broker_version=broker_version)

    def topic(self) -> Any:
        return self.client.topics[self.args["topic"]]

    def metadata(self) -> dict[str, Any]:
        self.client.update_cluster()
        topics = {t: len(self.client.topics[t].partitions) for t in self.args["topics"]}
        return {"brokers": sorted(self.client.brokers), "topics": topics}

    def create_topic(self) -> dict[str, Any]:
        request = CreateTopicRequest(
            self.args["topic"].encode(),
            num_partitions=self.args["partitions"],
            replication_factor=self.args["replication_factor"],
            replica_assignment=[],
            config_entries=[],
        )
        broker = next(iter(self.client.brokers.values()))
        broker.create_topics([request], timeout=10000)
        return {}

    def _produce(self, records: list[dict[str, Any]], codec: str) -> None:
        topic = self.topic()
        by_key = {r["key"].encode(): r["partition"] for r in records}

        def partitioner(partitions: list[Any], key: bytes) -> Any:
            return next(p for p in partitions if p.id == by_key[key])

        producer = topic.get_producer(
            partitioner=partitioner,
            compression=CODECS[codec],
            required_acks=-1,
            linger_ms=50,
            delivery_reports=True,
            sync=False,
        )
        try:
            for r in records:
                producer.produce(r["value"].encode(), partition_key=r["key"].encode())
            for _ in records:
                _msg, exc = producer.get_delivery_report(timeout=TIMEOUT_S)
                if exc is not None:
                    raise exc
        finally:
            producer.stop()

    def produce(self) -> dict[str, Any]:
        self._produce(self.args["records"], self.args.get("codec", "none"))
        return {"produced": len(self.args["records"])}

    def consume(self) -> dict[str, Any]:
        topic = self.topic()
        partition = topic.partitions[self.args["partition"]]
        consumer = topic.get_simple_consumer(
            partitions=[partition],
            auto_offset_reset=OffsetType.EARLIEST,
            reset_offset_on_start=True,
            consumer_timeout_ms=TIMEOUT_S * 1000,
        )
        try:
            if self.args["offset"] > 0:
                # pykafka's counter is the last offset consumed; the next read is one past it.
                consumer.reset_offsets([(partition, self.args["offset"] - 1)])
            got = []
            while len(got) < self.args["count"]:
                msg = consumer.consume()
                if msg is None:
                    break
                got.append(record(msg))
            return {"records": got}
        finally:
            consumer.stop()

    def _group_consumer(self) -> Any:
        return self.topic().get_simple_consumer(consumer_group=self.args["group"])

    def commit(self) -> dict[str, Any]:
        consumer = self._group_consumer()
        try:
            partitions = self.topic().partitions
            consumer.commit_offsets(
                [(partitions[int(p)], o) for p, o in self.args["offsets"].items()]
            )
            return {}
        finally:
            consumer.stop()

    def fetch_offsets(self) -> dict[str, Any]:
        consumer = self._group_consumer()
        try:
            wanted = set(self.args.get("partitions") or self.topic().partitions)
            return {
                "offsets": {
                    str(p): res.offset
                    for p, res in consumer.fetch_offsets()
                    if p in wanted and res.offset >= 0
                }
            }
        finally:
            consumer.stop()

    def describe(self) -> dict[str, Any]:
        group = self.args["group"]
        coordinator = self.client.cluster.get_group_coordinator(group.encode())
        described = coordinator.describe_groups([group.encode()]).groups[group.encode()]
        return {
            "state": described.state.decode(),
            "protocol_type": described.protocol_type.decode(),
            "members": len(described.members),
        }

    def group(self) -> dict[str, Any]:
        args = self.args
        first: list[dict[str, Any]] = []
        second: list[dict[str, Any]] = []
        sink = [first]
        stop = {"a": threading.Event(), "b": threading.Event()}
        errors: list[BaseException] = []

        def member(name: str) -> None:
            try:
                # The client must outlive the consumer: pykafka holds it through weak references.
                client = KafkaClient(hosts=args["bootstrap"], broker_version=self.broker_version)
                consumer = client.topics[args["topic"]].get_balanced_consumer(
                    consumer_group=args["group"],
                    zookeeper_connect=args["zookeeper"],
                    managed=False,
                    auto_commit_enable=True,
                    auto_commit_interval_ms=200,
                    auto_offset_reset=OffsetType.EARLIEST,
                    consumer_timeout_ms=200,
                )
                while not stop[name].is_set():
                    msg = consumer.consume(block=True)
                    if msg is not None:
                        sink[0].append(record(msg, name))
                consumer.commit_offsets()
                consumer.stop()  # removes its registration: the other member rebalances
            except BaseException as exc:
                errors.append(exc)

        threads = {n: threading.Thread(target=member, args=(n,), daemon=True) for n in stop}
        for t in threads.values():
            t.start()
        wait_for(lambda: len(first) >= args["first"] or bool(errors), "the first records")
        described = self.describe()
        stop["b"].set()
        threads["b"].join(TIMEOUT_S)
        sink[0] = second
        self._produce(args["second"], "none")
        wait_for(lambda: len(second) >= len(args["second"]) or bool(errors), "the second records")
        stop["a"].set()
        threads["a"].join(TIMEOUT_S)
        if errors:
            raise errors[0]
        return {
            "first": first,
            "second": second,
            "describe": described,
            "committed": self.fetch_offsets()["offsets"],
        }


def main() -> None:
    # On stderr, shown when a test fails: pykafka logs its rebalances and commit errors.
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    version, op, raw = sys.argv[1:4]
    print(json.dumps(getattr(Driver(version, json.loads(raw)), op)()))


if __name__ == "__main__":
    main()
