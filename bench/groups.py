"""Consumer groups: rebalance time with real clients, and OffsetCommit throughput.

    python -m bench.groups [--rounds 5] [--heartbeat-ms 500] [--commits 2000] [--seconds 10]

Starts a 3-broker local cluster and creates a 100-partition topic (replication factor 1).

Rebalance: two members join a group and settle; then, ``--rounds`` times, a third member joins
and later leaves again. Each rebalance is timed from the moment the member starts (before its
client is built) or starts to leave (before ``close()``, which sends LeaveGroup) until every
live member holds a non-empty assignment and together they hold each of the 100 partitions
exactly once, as the members' own assignment callbacks report it. Members are threads of this
process, each with its own client: librdkafka (confluent-kafka, its "range" assignor) and
kafka-python (pafka's range assignor). Existing members learn of a rebalance from a heartbeat,
so the figures move with ``--heartbeat-ms``.

Commits: one kafka-python member owning all 100 partitions sends synchronous OffsetCommits of
1 and of 100 partitions. The coordinator stores a commit as one ZooKeeper transaction (a version
check of its claim, then one set per partition), so the baseline, in the same run, is that
same transaction sent to the same ZooKeeper through kazoo, plus plain ``set`` round trips.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pafka.local.cluster import LocalCluster
from pafka.zk.znodes import CommittedOffsetZNode

PARTITIONS = 100
WAIT_S = 60.0
SETTLE_S = 1.0
# Scratch znodes of the ZooKeeper baseline, outside pafka's layout.
BASELINE_ROOT = "/bench-groups-baseline"


def balanced(
    assigned: dict[str, frozenset[int]], live: set[str], partitions: frozenset[int]
) -> bool:
    """Every live member holds something, and together each partition exactly once."""
    held = [assigned.get(m, frozenset()) for m in live]
    return (
        bool(live)
        and all(held)
        and sum(len(h) for h in held) == len(partitions)
        and frozenset().union(*held) == partitions
    )


class Tracker:
    """The members' assignments as their callbacks report them, and the time to balance."""

    def __init__(self, partitions: frozenset[int]) -> None:
        self._cond = threading.Condition()
        self._partitions = partitions
        self._assigned: dict[str, frozenset[int]] = {}
        self._live: set[str] = set()
        self._changes = 0
        self._mark = 0.0
        self._finished: float | None = None

    def changes(self) -> int:
        with self._cond:
            return self._changes

    def change(self, *, add: str | None = None, remove: str | None = None) -> None:
        """A member starts joining or leaving: the clock starts."""
        with self._cond:
            if add:
                self._live.add(add)
            if remove:
                self._live.discard(remove)
            self._changes += 1
            self._mark = time.perf_counter()
            self._finished = None
            self._check()

    def assigned(self, name: str, partitions: set[int]) -> None:
        with self._cond:
            self._assigned[name] = frozenset(partitions)
            self._check()

    def _check(self) -> None:
        if self._finished is None and balanced(self._assigned, self._live, self._partitions):
            self._finished = time.perf_counter()
            self._cond.notify_all()

    def wait(self, after: int, timeout_s: float = WAIT_S) -> float:
        """Seconds from the change numbered ``after + 1`` (or later) until balance."""
        with self._cond:
            if not self._cond.wait_for(
                lambda: self._changes > after and self._finished is not None, timeout_s
            ):
                raise TimeoutError(f"no balanced assignment within {timeout_s:.0f} s")
            assert self._finished is not None
            return self._finished - self._mark


Member = Callable[[str, Tracker, threading.Event], None]


def librdkafka_member(bootstrap: str, topic: str, group: str, heartbeat_ms: int) -> Member:
    def run(name: str, tracker: Tracker, stop: threading.Event) -> None:
        from confluent_kafka import Consumer

        tracker.change(add=name)
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": name,
                "partition.assignment.strategy": "range",
                "heartbeat.interval.ms": heartbeat_ms,
                "session.timeout.ms": 10_000,
                "enable.auto.commit": False,
            }
        )
        consumer.subscribe(
            [topic],
            on_assign=lambda _c, ps: tracker.assigned(name, {p.partition for p in ps}),
            on_revoke=lambda _c, _ps: tracker.assigned(name, set()),
        )
        while not stop.is_set():
            consumer.poll(0.02)
        tracker.change(remove=name)
        consumer.close()

    return run


def kafka_python_member(bootstrap: str, topic: str, group: str, heartbeat_ms: int) -> Member:
    def run(name: str, tracker: Tracker, stop: threading.Event) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer

        from pafka.groups.kafka_python_assignors import PafkaRangeAssignor

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                tracker.assigned(name, set())

            def on_partitions_assigned(self, assigned: Any) -> None:
                tracker.assigned(name, {tp.partition for tp in assigned})

        tracker.change(add=name)
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=name,
            partition_assignment_strategy=[PafkaRangeAssignor],
            heartbeat_interval_ms=heartbeat_ms,
            session_timeout_ms=10_000,
            enable_auto_commit=False,
        )
        consumer.subscribe([topic], listener=Listener())
        while not stop.is_set():
            consumer.poll(timeout_ms=20)
        tracker.change(remove=name)
        consumer.close()

    return run


def rebalances(member: Member, rounds: int) -> tuple[float, list[float], list[float]]:
    """(first formation, joins, leaves) in seconds: two members settle, a third comes and goes."""
    tracker = Tracker(frozenset(range(PARTITIONS)))
    threads: list[tuple[threading.Thread, threading.Event]] = []

    def start(name: str) -> threading.Event:
        stop = threading.Event()
        thread = threading.Thread(target=member, args=(name, tracker, stop), daemon=True)
        thread.start()
        threads.append((thread, stop))
        return stop

    joins: list[float] = []
    leaves: list[float] = []
    try:
        before = tracker.changes()
        start("a")
        start("b")
        first = tracker.wait(before + 1)
        for i in range(rounds):
            time.sleep(SETTLE_S)
            before = tracker.changes()
            stop = start(f"c{i}")
            joins.append(tracker.wait(before))
            time.sleep(SETTLE_S)
            before = tracker.changes()
            stop.set()
            leaves.append(tracker.wait(before))
    finally:
        for _, stop in threads:
            stop.set()
        for thread, _ in threads:
            thread.join(30)
    return first, joins, leaves


def commit_rates(bootstrap: str, topic: str, commits: int, seconds: float) -> dict[int, float]:
    """Synchronous commits/s of one member, for 1 and for all 100 partitions per commit."""
    from kafka import KafkaConsumer, OffsetAndMetadata

    from pafka.groups.kafka_python_assignors import PafkaRangeAssignor

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=f"bench-commit-{uuid.uuid4().hex[:6]}",
        partition_assignment_strategy=[PafkaRangeAssignor],
        enable_auto_commit=False,
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + WAIT_S
        while len(consumer.assignment()) < PARTITIONS:
            if time.monotonic() > deadline:
                raise TimeoutError("the commit member never got all partitions")
            consumer.poll(timeout_ms=100)
        tps = sorted(consumer.assignment())

        def commit(i: int, width: int) -> None:
            consumer.commit({tp: OffsetAndMetadata(i, "", -1) for tp in tps[:width]})

        return {
            1: _rate(lambda i: commit(i, 1), commits, seconds),
            PARTITIONS: _rate(lambda i: commit(i, PARTITIONS), max(1, commits // 4), seconds),
        }
    finally:
        consumer.close()


def zookeeper_rates(connect: str, commits: int, seconds: float) -> dict[str, float]:
    """The same writes straight to ZooKeeper: per second, one round trip each."""
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=connect)
    zk.start(timeout=15)
    paths = [f"{BASELINE_ROOT}/{p}" for p in range(PARTITIONS)]
    claim = f"{BASELINE_ROOT}/claim"
    try:
        for path in [claim, *paths]:
            zk.ensure_path(path)
        version = zk.exists(claim).version

        def txn(i: int, width: int) -> None:
            t = zk.transaction()
            t.check(claim, version)
            data = CommittedOffsetZNode(offset=i).encode()
            for path in paths[:width]:
                t.set_data(path, data)
            t.commit()

        return {
            "set": _rate(
                lambda i: zk.set(paths[0], CommittedOffsetZNode(i).encode()), commits, seconds
            ),
            "txn1": _rate(lambda i: txn(i, 1), commits, seconds),
            "txn100": _rate(lambda i: txn(i, PARTITIONS), max(1, commits // 4), seconds),
        }
    finally:
        zk.delete(BASELINE_ROOT, recursive=True)
        zk.stop()
        zk.close()


def create_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(60)


def _rate(call: Callable[[int], object], count: int, seconds: float) -> float:
    """Calls per second over ``count`` calls, or fewer if ``seconds`` run out first."""
    started = time.perf_counter()
    done = 0
    while done < count and time.perf_counter() - started < seconds:
        call(done)
        done += 1
    return done / (time.perf_counter() - started)


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:6.0f} ms  max {max(values) * 1000:6.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="joins and leaves per client")
    parser.add_argument("--heartbeat-ms", type=int, default=500)
    parser.add_argument("--commits", type=int, default=2000, help="commits of 1 partition")
    parser.add_argument("--seconds", type=float, default=10.0, help="time bound of each rate")
    args = parser.parse_args()
    cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="pafka-groups-")), brokers=3, controllers=1)
    cluster.start()
    try:
        bootstrap = cluster.bootstrap
        topic = f"groups-{uuid.uuid4().hex[:6]}"
        create_topic(bootstrap, topic)
        print(
            f"rebalance: 3 members, {PARTITIONS} partitions, heartbeat {args.heartbeat_ms} ms, "
            f"{args.rounds} joins and leaves each",
            flush=True,
        )
        for client, factory in (
            ("librdkafka", librdkafka_member),
            ("kafka-python", kafka_python_member),
        ):
            group = f"bench-rebalance-{client}-{uuid.uuid4().hex[:6]}"
            first, joins, leaves = rebalances(
                factory(bootstrap, topic, group, args.heartbeat_ms), args.rounds
            )
            print(f"  {client:12s} first 2 members {first * 1000:6.0f} ms", flush=True)
            print(f"  {client:12s} join  (2 -> 3)  {_ms(joins)}", flush=True)
            print(f"  {client:12s} leave (3 -> 2)  {_ms(leaves)}", flush=True)

        commits = commit_rates(bootstrap, topic, args.commits, args.seconds)
        assert cluster.zookeeper_connect is not None
        zk = zookeeper_rates(cluster.zookeeper_connect, args.commits, args.seconds)
        print("commits (synchronous, one member) against ZooKeeper round trips, same run:")
        print(f"  ZooKeeper set (1 node)                  {zk['set']:>8,.0f} /s")
        for width, key in ((1, "txn1"), (PARTITIONS, "txn100")):
            print(
                f"  OffsetCommit {width:3d} partition(s) {commits[width]:>8,.0f} /s   "
                f"ZooKeeper check+{width} set txn {zk[key]:>8,.0f} /s   "
                f"ratio {commits[width] / zk[key]:.2f}",
                flush=True,
            )
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
