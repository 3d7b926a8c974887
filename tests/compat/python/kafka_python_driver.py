"""kafka-python driver of the compatibility suite, pinned to an old protocol generation.

``kafka_python_driver.py API_VERSION OP 'JSON'`` (API_VERSION like ``0.10`` or ``0.8.2``); the
contract is in tests/compat/drivers.py. Pinning ``api_version`` makes kafka-python speak only
what that Kafka release served (0.8.2: Produce v0 and magic 0, Fetch v0, no groups)."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata


def record(msg: Any, member: str | None = None) -> dict[str, Any]:
    out = {
        "partition": msg.partition,
        "offset": msg.offset,
        "key": None if msg.key is None else msg.key.decode(),
        "value": None if msg.value is None else msg.value.decode(),
    }
    if member is not None:
        out["member"] = member
    return out


class Client:
    def __init__(self, api_version: tuple[int, ...], args: dict[str, Any]) -> None:
        self.api_version = api_version
        self.args = args
        self.common = {
            "bootstrap_servers": args["bootstrap"].split(","),
            "api_version": api_version,
        }

    def metadata(self) -> dict[str, Any]:
        consumer = KafkaConsumer(**self.common)
        try:
            topics = {t: len(consumer.partitions_for_topic(t) or ()) for t in self.args["topics"]}
            brokers = sorted(b.node_id for b in consumer._client.cluster.brokers())
            return {"brokers": brokers, "topics": topics}
        finally:
            consumer.close()

    def create_topic(self) -> dict[str, Any]:
        admin = KafkaAdminClient(**self.common)
        try:
            admin.create_topics(
                [
                    NewTopic(
                        self.args["topic"],
                        self.args["partitions"],
                        self.args["replication_factor"],
                    )
                ]
            )
            return {}
        finally:
            admin.close()

    def _produce(self, records: list[dict[str, Any]], codec: str) -> None:
        producer = KafkaProducer(
            **self.common,
            acks="all",
            request_timeout_ms=10000,
            max_block_ms=10000,
            compression_type=None if codec == "none" else codec,
            linger_ms=50,
        )
        try:
            futures = [
                producer.send(
                    self.args["topic"],
                    key=r["key"].encode(),
                    value=r["value"].encode(),
                    partition=r["partition"],
                )
                for r in records
            ]
            for f in futures:
                f.get(timeout=15)
        finally:
            producer.close(timeout=10)

    def produce(self) -> dict[str, Any]:
        self._produce(self.args["records"], self.args.get("codec", "none"))
        return {"produced": len(self.args["records"])}

    def consume(self) -> dict[str, Any]:
        consumer = KafkaConsumer(**self.common, enable_auto_commit=False)
        tp = TopicPartition(self.args["topic"], self.args["partition"])
        consumer.assign([tp])
        consumer.seek(tp, self.args["offset"])
        got: list[dict[str, Any]] = []
        deadline = time.monotonic() + 60
        try:
            while len(got) < self.args["count"] and time.monotonic() < deadline:
                for msgs in consumer.poll(timeout_ms=500).values():
                    got += [record(m) for m in msgs]
            return {"records": got[: self.args["count"]]}
        finally:
            consumer.close()

    def group(self) -> dict[str, Any]:
        args = self.args
        first: list[dict[str, Any]] = []
        second: list[dict[str, Any]] = []
        phase = [first]
        lock = threading.Lock()
        stop = {"a": threading.Event(), "b": threading.Event()}
        errors: list[BaseException] = []

        def member(name: str) -> None:
            try:
                consumer = KafkaConsumer(
                    args["topic"],
                    **self.common,
                    group_id=args["group"],
                    auto_offset_reset="earliest",
                    auto_commit_interval_ms=200,
                )
                while not stop[name].is_set():
                    for msgs in consumer.poll(timeout_ms=200).values():
                        with lock:
                            phase[0].extend(record(m, name) for m in msgs)
                consumer.close()  # commits what it read, then leaves the group
            except BaseException as exc:
                errors.append(exc)

        # Daemon threads: a failing driver exits instead of waiting for its members.
        threads = {n: threading.Thread(target=member, args=(n,), daemon=True) for n in ("a", "b")}
        for t in threads.values():
            t.start()
        wait_for(lambda: len(first) >= args["first"] or bool(errors), "the first records")
        described = self.describe()
        stop["b"].set()
        threads["b"].join()
        with lock:
            phase[0] = second
        self._produce(args["second"], "none")
        wait_for(lambda: len(second) >= len(args["second"]) or bool(errors), "the second records")
        stop["a"].set()
        threads["a"].join()
        if errors:
            raise errors[0]
        return {
            "first": first,
            "second": second,
            "describe": described,
            "committed": self.fetch_offsets(len({r["partition"] for r in args["second"]}))[
                "offsets"
            ],
        }

    def describe(self) -> dict[str, Any]:
        admin = KafkaAdminClient(**self.common)
        try:
            group = admin.describe_groups([self.args["group"]])[self.args["group"]]
            return {
                "state": group["group_state"],
                "protocol_type": group["protocol_type"],
                "members": len(group["members"]),
            }
        finally:
            admin.close()

    def commit(self) -> dict[str, Any]:
        consumer = KafkaConsumer(**self.common, group_id=self.args["group"])
        try:
            consumer.commit(
                {
                    TopicPartition(self.args["topic"], int(p)): OffsetAndMetadata(o, "", -1)
                    for p, o in self.args["offsets"].items()
                }
            )
            return {}
        finally:
            consumer.close()

    def fetch_offsets(self, partitions: int | None = None) -> dict[str, Any]:
        consumer = KafkaConsumer(**self.common, group_id=self.args["group"])
        wanted = self.args.get("partitions") or range(partitions or 0)
        try:
            out = {}
            for p in wanted:
                offset = consumer.committed(TopicPartition(self.args["topic"], p))
                if offset is not None:
                    out[str(p)] = offset
            return {"offsets": out}
        finally:
            consumer.close()


def wait_for(predicate: Any, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.05)


def main() -> None:
    version, op, raw = sys.argv[1:4]
    client = Client(tuple(int(x) for x in version.split(".")), json.loads(raw))
    result = getattr(client, op)()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
