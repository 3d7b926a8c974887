"""The group coordinator when its broker fails: killed, the whole cluster restarted, paused.

A cluster of its own (3 brokers, 1 controller, under a ZooKeeper chroot of the session's
ZooKeeper), so that killing and restarting brokers disturbs no other test. Every test leaves
all brokers running.

- A coordinator killed with SIGKILL while two librdkafka consumers work: the group moves to a
  live broker and resumes from its committed offsets within a bound.
- Offsets committed before a full restart of brokers and controllers are where a new consumer
  of the group starts.
- A coordinator paused past its ZooKeeper session: another broker takes the group over; after
  SIGCONT the old one refuses, and no commit it held while paused reaches ZooKeeper.
"""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pafka.local.cluster import LocalCluster
from pafka.local.zookeeper import ZooKeeperServer
from pafka.zk.znodes import (
    BrokerInfo,
    CommittedOffsetZNode,
    GroupCoordinatorZNode,
    PartitionOwnerZNode,
)
from pafka.zk.znodes import ConsumerGroupZNodes as Z
from tests.integration.conftest import TEST_BROKER_ENV, ClusterHandle
from tests.integration.test_groups_bad_input import (
    NONE,
    NOT_COORDINATOR,
    GroupConn,
    assignment,
    form_group,
)
from tests.integration.wire import request_once

SESSION_TIMEOUT_MS = 6000
COORDINATOR_NOT_AVAILABLE = 15
# The brokers' ZooKeeper session timeout (LocalCluster): how long a dead broker stays registered.
ZK_SESSION_TIMEOUT_S = 6.0
# From the kill until the group works again: the dead broker's registration expires (ZooKeeper
# session), the designated survivor adopts the group, the consumers find it, the members that
# no longer heartbeat expire (consumer session), the group rebalances and commits again.
FAILOVER_BOUND_S = ZK_SESSION_TIMEOUT_S + SESSION_TIMEOUT_MS / 1000 + 10.0


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, cluster_zookeeper: ZooKeeperServer
) -> Iterator[ClusterHandle]:
    """This module's own cluster (named like the session one so that failures dump its logs)."""
    chroot = f"/groups-coordinator-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=cluster_zookeeper.connect_string)
    zk.start(timeout=15)
    zk.ensure_path(chroot)
    zk.stop()
    zk.close()
    connect = cluster_zookeeper.connect_string + chroot
    local = LocalCluster(
        Path(tmp_path_factory.mktemp("groups-coordinator")),
        brokers=3,
        controllers=1,
        zookeeper=connect,
        broker_env=TEST_BROKER_ENV,
    )
    # Its ports are reserved for it (tests/conftest.py: PAFKA_LOCAL_PORTS=ephemeral): another
    # cluster starting while one of its brokers is down cannot take that broker's ports.
    local.start()
    handle = ClusterHandle(local, connect)
    try:
        yield handle
    finally:
        handle.close()
        local.stop()


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_for(what: str, condition: Callable[[], Any], timeout_s: float) -> Any:
    """Poll until ``condition`` returns something truthy; return it."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = condition()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s:.0f} s: {what}")
        time.sleep(0.1)


def claim(cluster: ClusterHandle, group: str) -> GroupCoordinatorZNode:
    data, _ = cluster.zk.get(Z.coordinator_path(group))
    return GroupCoordinatorZNode.decode(group, data)


def registered(cluster: ClusterHandle, broker: int) -> bool:
    return cluster.zk.exists(BrokerInfo.path(broker)) is not None


def committed(cluster: ClusterHandle, group: str, topic: str, partition: int) -> tuple[int, int]:
    """The committed offset in ZooKeeper and the version of its znode (-1, -1: none)."""
    path = Z.offset_path(group, topic, partition)
    try:
        data, stat = cluster.zk.get(path)
    except NoNodeError:
        return -1, -1
    return CommittedOffsetZNode.decode(path, data).offset, stat.version


def owners(cluster: ClusterHandle, group: str, topic: str, partitions: int) -> dict[int, str]:
    found = {}
    for p in range(partitions):
        path = Z.owner_path(group, topic, p)
        try:
            data, _ = cluster.zk.get(path)
        except NoNodeError:
            continue
        found[p] = PartitionOwnerZNode.decode(path, data).member_id
    return found


def find_coordinator(address: tuple[str, int], group: str) -> int:
    resp = request_once(
        address, FindCoordinatorRequest[3](key=group, key_type=0), FindCoordinatorResponse, 3
    )
    assert resp.error_code == NONE, resp
    return int(resp.node_id)


def restart_if_down(cluster: ClusterHandle, broker: int) -> None:
    name = f"broker-{broker}"
    if not cluster.local.services[name].alive():
        cluster.local.restart(name)
    wait_for(f"broker {broker} registered", lambda: registered(cluster, broker), 60)


# -- a kill -9 of the coordinator under two consumers ----------------------------------------------


@dataclass
class Events:
    """What one consumer did, with monotonic timestamps."""

    member_id: str = ""
    assignments: list[tuple[float, frozenset[int]]] = field(default_factory=list)
    records: list[tuple[float, int, int, bytes]] = field(default_factory=list)
    commits_sent: list[tuple[float, dict[int, int]]] = field(default_factory=list)
    commits_acked: list[tuple[float, dict[int, int]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class ConfluentMember:
    """A librdkafka group member on a thread: it "processes" each record by noting it and
    commits what it processed, synchronously, after every batch."""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str) -> None:
        from confluent_kafka import Consumer

        self.name = name
        self.topic = topic
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": name,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": SESSION_TIMEOUT_MS,
                "heartbeat.interval.ms": 1000,
                "partition.assignment.strategy": "range",
            }
        )
        self.lock = threading.Lock()
        self.events = Events()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def snapshot(self) -> Events:
        with self.lock:
            e = self.events
            return Events(
                e.member_id,
                list(e.assignments),
                list(e.records),
                list(e.commits_sent),
                list(e.commits_acked),
                list(e.errors),
            )

    def _assigned(self, partitions: frozenset[int]) -> None:
        with self.lock:
            self.events.member_id = self.consumer.memberid() or ""
            self.events.assignments.append((time.monotonic(), partitions))

    def _run(self) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        current: set[int] = set()

        def on_assign(_c: Any, tps: list[Any]) -> None:
            current.update(tp.partition for tp in tps)
            self._assigned(frozenset(current))

        def on_revoke(_c: Any, tps: list[Any]) -> None:
            current.difference_update(tp.partition for tp in tps)
            self._assigned(frozenset(current))

        self.consumer.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke)
        try:
            while not self.stop.is_set():
                pending: dict[int, int] = {}
                for m in self.consumer.consume(num_messages=100, timeout=0.2):
                    if m.error():
                        with self.lock:
                            self.events.errors.append(str(m.error()))
                        continue
                    p, o, value = int(m.partition() or 0), int(m.offset() or 0), m.value() or b""
                    with self.lock:
                        self.events.records.append((time.monotonic(), p, o, value))
                    pending[p] = o + 1
                if not pending:
                    continue
                with self.lock:
                    self.events.commits_sent.append((time.monotonic(), dict(pending)))
                try:
                    result = self.consumer.commit(
                        offsets=[TopicPartition(self.topic, p, o) for p, o in pending.items()],
                        asynchronous=False,
                    )
                except KafkaException as exc:
                    with self.lock:
                        self.events.errors.append(f"commit {pending}: {exc}")
                    continue
                acked = {tp.partition: tp.offset for tp in result or [] if tp.error is None}
                with self.lock:
                    self.events.commits_acked.append((time.monotonic(), acked))
        finally:
            self.consumer.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=60)


class Producing:
    """Records to every partition from a thread until stopped; where each one landed."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        from confluent_kafka import Producer

        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 120_000,
            }
        )
        self.topic = topic
        self.partitions = partitions
        self.lock = threading.Lock()
        self.delivered: dict[tuple[int, int], bytes] = {}
        self.failed: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="producer", daemon=True)
        self.thread.start()

    def _delivered(self, err: Any, msg: Any) -> None:
        with self.lock:
            if err is not None:
                self.failed.append(str(err))
            else:
                self.delivered[(msg.partition(), msg.offset())] = msg.value()

    def _run(self) -> None:
        i = 0
        while not self.stop.is_set():
            for p in range(self.partitions):
                value = f"{p}-{i}".encode()
                self.producer.produce(
                    self.topic, value=value, partition=p, on_delivery=self._delivered
                )
            i += 1
            self.producer.poll(0.02)
        self.producer.flush(120)

    def close(self) -> tuple[dict[tuple[int, int], bytes], list[str]]:
        """Stop, wait for every delivery report: (partition, offset) -> value, and failures."""
        self.stop.set()
        self.thread.join(timeout=150)
        with self.lock:
            return dict(self.delivered), list(self.failed)


def highest_commits(members: list[Events], before: float, *, acked: bool = True) -> dict[int, int]:
    """Highest commit per partition acknowledged (or only sent) before ``before``."""
    out: dict[int, int] = {}
    for e in members:
        for t, offsets in e.commits_acked if acked else e.commits_sent:
            if t < before:
                for p, o in offsets.items():
                    out[p] = max(o, out.get(p, 0))
    return out


def test_group_resumes_on_a_new_coordinator_after_kill_9(cluster: ClusterHandle) -> None:
    partitions = 6
    topic, group = _name("coord-kill"), _name("coord-kill")
    cluster.create_topic(topic, partitions=partitions, replication_factor=3)
    producing = Producing(cluster.bootstrap, topic, partitions)
    members = [ConfluentMember(f"m{i}", cluster.bootstrap, group, topic) for i in range(2)]
    victim = -1
    try:

        def stable() -> bool:
            views = [m.snapshot() for m in members]
            assigned = [v.assignments[-1][1] for v in views if v.assignments]
            return (
                len(assigned) == 2
                and sorted(p for a in assigned for p in a) == list(range(partitions))
                and all(len(v.commits_acked) >= 3 for v in views)
            )

        wait_for("2 consumers sharing the topic and committing", stable, 60)
        before = claim(cluster, group)
        victim = before.broker_id

        cluster.local.kill(f"broker-{victim}", signal.SIGKILL)
        t_kill = time.monotonic()

        def moved() -> GroupCoordinatorZNode | None:
            now = claim(cluster, group)
            ok = now.broker_id != victim and registered(cluster, now.broker_id)
            return now if ok and now.epoch > before.epoch else None

        after = wait_for("the coordinator znode naming a live broker", moved, FAILOVER_BOUND_S)
        t_moved = time.monotonic() - t_kill

        def resumed() -> float | None:
            """When every partition was reassigned after the kill and every consumer had a
            commit acknowledged since its new assignment (seconds after the kill)."""
            views = [m.snapshot() for m in members]
            times = []
            covered: list[int] = []
            for v in views:
                t_assigned, parts = v.assignments[-1] if v.assignments else (0.0, frozenset())
                if t_assigned < t_kill:
                    return None
                covered.extend(parts)
                acks = [t for t, offsets in v.commits_acked if t > t_assigned and offsets]
                if parts and not acks:
                    return None
                times.append(max(t_assigned, min(acks)) if parts else t_assigned)
            if sorted(covered) != list(range(partitions)):
                return None
            return max(times) - t_kill

        t_resumed = wait_for("the group consuming and committing again", resumed, 60)
        print(
            f"coordinator broker {victim} killed: znode moved to broker {after.broker_id} "
            f"(epoch {before.epoch} -> {after.epoch}) after {t_moved:.1f} s; "
            f"group consuming and committing again after {t_resumed:.1f} s"
        )
        assert t_resumed <= FAILOVER_BOUND_S, (t_resumed, FAILOVER_BOUND_S)

        # The owners znodes name the member each partition is assigned to.
        def owners_match() -> bool:
            views = [m.snapshot() for m in members]
            expected = {p: v.member_id for v in views for p in v.assignments[-1][1]}
            return owners(cluster, group, topic, partitions) == expected

        wait_for("owners/ matching the consumers' assignments", owners_match, 30)

        # Everything produced is consumed; then the committed offsets reach the log ends.
        produced, failed = producing.close()
        assert not failed, failed[:5]
        ends = {p: 1 + max(o for q, o in produced if q == p) for p in range(partitions)}

        def caught_up() -> bool:
            read = {(p, o) for m in members for _, p, o, _ in m.snapshot().records}
            offsets = {p: committed(cluster, group, topic, p)[0] for p in range(partitions)}
            return set(produced) <= read and offsets == ends

        wait_for("every record consumed and committed", caught_up, 90)
        assert owners_match()

        # The consumers are idle now: what they read, and where they started reading.
        views = [m.snapshot() for m in members]
        reads = Counter((p, o) for v in views for _, p, o, _ in v.records)
        values = {(p, o): value for v in views for _, p, o, value in v.records}
        assert {k: values[k] for k in produced} == produced, "a record read differs from its write"
        # Records may be read again only past the last commit acknowledged before the kill.
        acked_at_kill = highest_commits(views, t_kill)
        again = sorted(k for k, n in reads.items() if n > 1)
        early = [(p, o) for p, o in again if o < acked_at_kill.get(p, 0)]
        assert not early, f"committed records read twice: {early[:10]} (committed {acked_at_kill})"
        # Each partition's new owner started at a committed position: not before the last commit
        # acknowledged before the kill, not past the last one sent before its new assignment.
        for v in views:
            t_assigned, parts = v.assignments[-1]
            for p in parts:
                first = min(
                    (o for t, q, o, _ in v.records if q == p and t > t_assigned), default=None
                )
                if first is None:
                    # Assigned after the last record of p was read (a later rebalance, once the
                    # producer stopped): no start to check, and caught_up() saw p committed to
                    # its end.
                    continue
                low, high = (
                    acked_at_kill.get(p, 0),
                    highest_commits(views, t_assigned, acked=False).get(p, 0),
                )
                assert low <= first <= high, (p, low, first, high)
    finally:
        for m in members:
            m.close()
        if not producing.stop.is_set():
            producing.close()
        if victim >= 0:
            restart_if_down(cluster, victim)

    print(f"{len(produced)} records, {len(again)} read twice (uncommitted at the kill)")


# -- a full cluster restart -----------------------------------------------------------------------


def test_committed_offsets_survive_a_full_cluster_restart(cluster: ClusterHandle) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    partitions = 3
    topic, group = _name("coord-restart"), _name("coord-restart")
    cluster.create_topic(topic, partitions=partitions, replication_factor=2)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    for p in range(partitions):
        for i in range(20):
            producer.send(topic, value=f"{p}-{i}".encode(), partition=p)
    producer.flush(30)
    producer.close()
    wanted = {0: 7, 1: 13, 2: 19}
    tps = {p: TopicPartition(topic, p) for p in range(partitions)}

    def group_consumer() -> Any:
        return KafkaConsumer(
            bootstrap_servers=cluster.bootstrap,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )

    member = group_consumer()
    try:
        member.subscribe([topic])

        def assigned() -> bool:
            member.poll(timeout_ms=100, max_records=1)
            return len(member.assignment()) == partitions

        wait_for("the consumer assigned every partition", assigned, 30)
        member.commit({tps[p]: OffsetAndMetadata(o, f"at {o}", -1) for p, o in wanted.items()})
    finally:
        member.close()
    assert {p: committed(cluster, group, topic, p)[0] for p in wanted} == wanted

    cluster.local.stop()
    assert not any(s.alive() for s in cluster.local.services.values())
    cluster.local.start()
    cluster.wait_for_leaders(topic, partitions)

    fresh = group_consumer()
    try:
        fresh.assign(list(tps.values()))
        assert {p: fresh.position(tp) for p, tp in tps.items()} == wanted
        firsts = _first_records(fresh, partitions)
        assert firsts == {p: (o, f"{p}-{o}".encode()) for p, o in wanted.items()}
    finally:
        fresh.close()

    # A member of the group (it joins, so the coordinator loads the group) starts there too.
    joined = group_consumer()
    try:
        joined.subscribe([topic])
        assert _first_records(joined, partitions) == firsts
    finally:
        joined.close()

    coordinator = find_coordinator(cluster.broker_address(cluster.broker_ids()[0]), group)
    conn = GroupConn(cluster.broker_address(coordinator), group)
    try:
        top, found = conn.fetch([(topic, p) for p in range(partitions)])
    finally:
        conn.close()
    assert top == NONE
    assert found == {(topic, p): (o, f"at {o}", NONE) for p, o in wanted.items()}


def _first_records(consumer: Any, partitions: int) -> dict[int, tuple[int, bytes]]:
    firsts: dict[int, tuple[int, bytes]] = {}
    deadline = time.monotonic() + 60
    while len(firsts) < partitions and time.monotonic() < deadline:
        for tp, records in consumer.poll(timeout_ms=200).items():
            if records and tp.partition not in firsts:
                firsts[tp.partition] = (records[0].offset, records[0].value)
    return firsts


# -- a paused coordinator -------------------------------------------------------------------------


def test_a_paused_coordinator_cannot_commit(cluster: ClusterHandle) -> None:
    topic, group = _name("coord-pause"), _name("coord-pause")
    cluster.create_topic(topic, partitions=2, replication_factor=3)
    tps = [(topic, 0), (topic, 1)]
    paused = find_coordinator(cluster.broker_address(cluster.broker_ids()[0]), group)
    (member,) = form_group([GroupConn(cluster.broker_address(paused), group)], topic, 2)
    mid, generation = member.member_id, member.generation
    # A second connection to the coordinator, to carry a commit while it is paused.
    stale = GroupConn(cluster.broker_address(paused), group)
    taken_over: GroupConn | None = None
    service = cluster.local.services[f"broker-{paused}"]
    try:
        assert member.conn.commit(generation, mid, dict.fromkeys(tps, 10)) == dict.fromkeys(
            tps, NONE
        )
        before = claim(cluster, group)
        assert before.broker_id == paused
        assert {tp: committed(cluster, group, *tp)[0] for tp in tps} == dict.fromkeys(tps, 10)
        versions = {tp: committed(cluster, group, *tp)[1] for tp in tps}

        cluster.local.send_signal(service, signal.SIGSTOP)
        t_pause = time.monotonic()
        with ThreadPoolExecutor(max_workers=1) as pool:
            # Sent now, read by the paused broker only once it runs again.
            held = pool.submit(stale.commit, generation, mid, dict.fromkeys(tps, 999))
            try:

                def successor() -> int | None:
                    now = claim(cluster, group)
                    gone = not registered(cluster, paused)
                    return now.broker_id if gone and now.broker_id != paused else None

                new = wait_for("another broker claiming the group", successor, 30)
                t_taken = time.monotonic() - t_pause
                assert claim(cluster, group).epoch > before.epoch
                address = cluster.broker_address(new)
                assert find_coordinator(address, group) == new
                # The member rejoins at the new coordinator and commits there.
                taken_over = GroupConn(address, group)
                rejoined = taken_over.join(mid, topics=(topic,))
                assert rejoined.error_code == NONE, rejoined
                assert rejoined.generation_id > generation
                synced = taken_over.sync(rejoined.generation_id, mid, {mid: assignment(tps)})
                assert synced.error_code == NONE
                result = taken_over.commit(rejoined.generation_id, mid, dict.fromkeys(tps, 20))
                assert result == dict.fromkeys(tps, NONE)
            finally:
                cluster.local.send_signal(service, signal.SIGCONT)
            # The commit the paused broker held is refused, and changed nothing. Woken before
            # its ZooKeeper connection is back, it answers COORDINATOR_NOT_AVAILABLE; after,
            # NOT_COORDINATOR: clients look for the coordinator again on either.
            refused = held.result(timeout=60)
            assert set(refused) == set(tps), refused
            assert set(refused.values()) <= {NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE}, refused
        print(f"broker {paused} paused: broker {new} took the group over after {t_taken:.1f} s")
        assert {tp: committed(cluster, group, *tp) for tp in tps} == {
            tp: (20, versions[tp] + 1) for tp in tps
        }

        # Woken, the old coordinator sends clients on; the new one keeps the group.
        wait_for(f"broker {paused} registered again", lambda: registered(cluster, paused), 60)
        assert stale.heartbeat(rejoined.generation_id, mid) == NOT_COORDINATOR
        assert stale.commit(rejoined.generation_id, mid, dict.fromkeys(tps, 30)) == (
            dict.fromkeys(tps, NOT_COORDINATOR)
        )
        assert find_coordinator(cluster.broker_address(paused), group) == new
        assert claim(cluster, group).broker_id == new
        assert taken_over.heartbeat(rejoined.generation_id, mid) == NONE
        assert {tp: committed(cluster, group, *tp)[0] for tp in tps} == dict.fromkeys(tps, 20)
    finally:
        cluster.local.send_signal(service, signal.SIGCONT)
        for conn in (member.conn, stale, taken_over):
            if conn is not None:
                conn.close()
        restart_if_down(cluster, paused)
