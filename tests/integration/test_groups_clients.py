"""Consumer groups with real clients: members die, leave and join while the group consumes.

For kafka-python, librdkafka (eager range and cooperative-sticky), aiokafka and a mixed
kafka-python + librdkafka group, three member processes consume a 12-partition topic; member A
is killed with SIGKILL, member B leaves cleanly (SIGTERM: commit, close, LeaveGroup), member D
joins late. Members commit after processing each batch. At every step the group's znodes
(``/consumers/{group}/ids``, ``owners``, the group node) must match what the live members say
they own; at the end every record has been consumed, only A's uncommitted work was read twice,
and the committed offsets in ZooKeeper are the log end offsets.
"""

from __future__ import annotations

import signal
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.groups_util import (
    Worker,
    consumption_problems,
    read_group,
    wait_closed,
    wait_group_matches,
    wait_until,
)

PARTITIONS = 12
GROUP_TIMEOUT_S = 60.0
CONSUME_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Case:
    name: str
    clients: tuple[str, str, str, str]  # A (killed), B (leaves), C (stays), D (joins late)
    protocol: str


CASES = [
    Case("kafka-python", ("kafka-python",) * 4, "range"),
    Case("confluent-eager", ("confluent",) * 4, "range"),
    Case("confluent-cooperative", ("confluent-cooperative",) * 4, "cooperative-sticky"),
    Case("aiokafka", ("aiokafka",) * 4, "roundrobin"),
    Case("mixed", ("kafka-python", "confluent", "kafka-python", "confluent"), "range"),
]


class Produced:
    """Keyed records with unique values, and where each one landed (partition, offset)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from kafka import KafkaProducer

        self.topic = topic
        self.at: dict[str, tuple[int, int]] = {}
        self._producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)

    def batch(self, tag: str, count: int) -> list[str]:
        values = [f"{self.topic}:{tag}:{i}" for i in range(count)]
        futures = [
            (v, self._producer.send(self.topic, key=v.encode(), value=v.encode())) for v in values
        ]
        for value, fut in futures:
            meta = fut.get(timeout=30)
            self.at[value] = (meta.partition, meta.offset)
        return values

    def end_offsets(self) -> dict[int, int]:
        return {p: max(o for q, o in self.at.values() if q == p) + 1 for p in range(PARTITIONS)}

    def close(self) -> None:
        self._producer.close()


def log_end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(PARTITIONS)])
    finally:
        consumer.close()
    return {tp.partition: offset for tp, offset in ends.items()}


def wait_reads(worker: Worker, values: list[str]) -> None:
    """Until ``worker`` has processed at least one of ``values``."""
    wanted = set(values)
    wait_until(
        lambda: None if any(r.value in wanted for r in worker.view().records) else "none yet",
        CONSUME_TIMEOUT_S,
        f"{worker.name} reading the new batch",
        alive=[worker],
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_members_killed_leaving_and_joining(cluster, tmp_path: Path, case: Case) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"groups-{case.name}-{suffix}", f"group-{case.name}-{suffix}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=2)
    produced = Produced(cluster.bootstrap, topic)
    workers: dict[str, Worker] = {}

    def start(name: str, client: str) -> Worker:
        workers[name] = Worker(
            name, client, bootstrap=cluster.bootstrap, group=group, topic=topic, log_dir=tmp_path
        )
        return workers[name]

    def group_matches(*live: Worker) -> None:
        wait_group_matches(
            cluster.zk,
            group,
            live,
            GROUP_TIMEOUT_S,
            topic=topic,
            partitions=PARTITIONS,
            protocol=case.protocol if live else None,
        )

    try:
        produced.batch("first", 600)
        a, b, c = (start(n, client) for n, client in zip("ABC", case.clients, strict=False))
        group_matches(a, b, c)

        wait_reads(a, produced.batch("before-kill", 200))
        a.signal(signal.SIGKILL)
        group_matches(b, c)

        wait_reads(b, produced.batch("before-leave", 200))
        wait_closed(b, GROUP_TIMEOUT_S)
        group_matches(c)

        d = start("D", case.clients[3])
        group_matches(c, d)
        produced.batch("final", 200)

        def missing() -> str | None:
            seen = {r.value for w in workers.values() for r in w.view().records}
            lost = sorted(set(produced.at) - seen)
            return f"{len(lost)} records not consumed, e.g. {lost[:5]}" if lost else None

        wait_until(missing, CONSUME_TIMEOUT_S, "every record consumed", alive=[c, d])
        wait_closed(c, GROUP_TIMEOUT_S)
        wait_closed(d, GROUP_TIMEOUT_S)
        group_matches()

        views = {name: w.view() for name, w in workers.items()}
        consumed = [r for v in views.values() for r in v.records]
        problems = consumption_problems(
            consumed, produced.at, killed="A", killed_committed=views["A"].committed
        )
        failures = {name: v.failures for name, v in views.items() if v.failures}
        assert not problems, f"{problems}; client-side failures: {failures}"

        ends = log_end_offsets(cluster.bootstrap, topic)
        assert ends == produced.end_offsets()
        committed = {
            p: node.offset for (_, p), node in read_group(cluster.zk, group).offsets.items()
        }
        assert committed == ends, f"committed offsets in ZooKeeper {committed}, log ends {ends}"
    finally:
        for w in workers.values():
            w.stop()
        produced.close()
