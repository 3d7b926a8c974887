"""Offsets committed inside transactions (KIP-98, KIP-447) on the shared real cluster, over
the wire: TxnOffsetCommit of each version leaves them pending in ZooKeeper, invisible to
OffsetFetch (UNSTABLE_OFFSET_COMMIT when stable offsets are required), until the transaction
coordinator's WriteTxnMarkers for the group's ``__consumer_offsets`` partition commits or
aborts them; a retried marker changes nothing. Failover is in ``..._failover.py``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTP

from pafka.groups.offsets_partition import offsets_partition
from pafka.protocol.versions import SUPPORTED, ApiKey
from pafka.zk.znodes import ConsumerGroupZNodes as Z
from tests.integration.conftest import ClusterHandle
from tests.integration.test_groups_bad_input import (
    GroupConn,
    connect,
    coordinator_id,
    form_group,
)
from tests.integration.txn_offsets_wire import (
    FENCED_INSTANCE_ID,
    ILLEGAL_GENERATION,
    INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING,
    NO_OFFSET,
    NONE,
    NOT_COORDINATOR,
    NOT_LEADER_OR_FOLLOWER,
    UNKNOWN_MEMBER_ID,
    UNKNOWN_SERVER_ERROR,
    UNKNOWN_TOPIC_OR_PARTITION,
    UNSTABLE_OFFSET_COMMIT,
    fetch,
    group_in_partition,
    indexed,
    marker,
    new_producer_id,
    pending_in_zookeeper,
    txn_commit,
)

PARTITIONS = 2


@pytest.fixture
def topic(cluster: ClusterHandle) -> str:
    name = f"txnoff-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=PARTITIONS, replication_factor=1)
    return name


@pytest.fixture
def conn(cluster: ClusterHandle) -> Iterator[GroupConn]:
    c = connect(cluster, f"txnoff-g-{uuid.uuid4().hex[:8]}")
    yield c
    c.close()


def _both(topic: str) -> list[tuple[str, int]]:
    return [(topic, p) for p in range(PARTITIONS)]


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_pending_until_the_commit_marker(
    cluster: ClusterHandle, conn: GroupConn, topic: str, version: int
) -> None:
    pid = new_producer_id()
    assert txn_commit(conn, pid, {(topic, 0): 5, (topic, 1): 9}, version=version) == {
        (topic, 0): NONE,
        (topic, 1): NONE,
    }
    assert pending_in_zookeeper(cluster.zk, conn.group, pid) == set(_both(topic))
    assert indexed(cluster.zk, pid, conn.group)
    # Invisible until committed; unstable to a reader requiring stable offsets.
    assert fetch(conn, _both(topic), require_stable=False) == {
        (topic, 0): (NO_OFFSET, NONE),
        (topic, 1): (NO_OFFSET, NONE),
    }
    assert fetch(conn, _both(topic), require_stable=True) == {
        (topic, 0): (NO_OFFSET, UNSTABLE_OFFSET_COMMIT),
        (topic, 1): (NO_OFFSET, UNSTABLE_OFFSET_COMMIT),
    }
    assert marker(conn, pid, committed=True) == NONE
    for stable in (False, True):
        assert fetch(conn, _both(topic), require_stable=stable) == {
            (topic, 0): (5, NONE),
            (topic, 1): (9, NONE),
        }
    # The committed offsets are where ZooKeeper-era readers look, with the commit beside them.
    assert cluster.zk.get(Z.offset_path(conn.group, topic, 0))[0] == b"5"
    assert b'"metadata":"txn"' in cluster.zk.get(Z.commit_path(conn.group, topic, 1))[0]
    assert pending_in_zookeeper(cluster.zk, conn.group, pid) == set()
    assert cluster.zk.exists(Z.txn_producer_path(conn.group, pid)) is None
    assert not indexed(cluster.zk, pid, conn.group)


def test_abort_discards_and_a_retried_marker_changes_nothing(
    cluster: ClusterHandle, conn: GroupConn, topic: str
) -> None:
    assert conn.commit(-1, "", {(topic, 0): 3}) == {(topic, 0): NONE}
    pid = new_producer_id()
    assert txn_commit(conn, pid, {(topic, 0): 8, (topic, 1): 8}) == dict.fromkeys(
        _both(topic), NONE
    )
    assert marker(conn, pid, committed=False) == NONE
    assert fetch(conn, _both(topic), require_stable=True) == {
        (topic, 0): (3, NONE),
        (topic, 1): (NO_OFFSET, NONE),
    }
    assert pending_in_zookeeper(cluster.zk, conn.group, pid) == set()
    _, stat = cluster.zk.get(Z.offset_path(conn.group, topic, 0))
    # Retries of either outcome find nothing pending: nothing is written.
    assert marker(conn, pid, committed=False) == NONE
    assert marker(conn, pid, committed=True) == NONE
    assert cluster.zk.get(Z.offset_path(conn.group, topic, 0))[1].mzxid == stat.mzxid
    assert fetch(conn, _both(topic), require_stable=True)[(topic, 0)] == (3, NONE)

    # Committed, then the marker retried: the same offsets, written once.
    assert txn_commit(conn, pid, {(topic, 1): 4}) == {(topic, 1): NONE}
    assert marker(conn, pid, committed=True) == NONE
    _, stat = cluster.zk.get(Z.offset_path(conn.group, topic, 1))
    assert marker(conn, pid, committed=True) == NONE
    assert cluster.zk.get(Z.offset_path(conn.group, topic, 1))[1].mzxid == stat.mzxid
    assert fetch(conn, _both(topic), require_stable=True)[(topic, 1)] == (4, NONE)


def test_a_plain_commit_after_the_transactional_one_wins(conn: GroupConn, topic: str) -> None:
    pid = new_producer_id()
    # t-0: plain commit before the transaction's; t-1: plain commit after it.
    assert conn.commit(-1, "", {(topic, 0): 1}) == {(topic, 0): NONE}
    assert txn_commit(conn, pid, {(topic, 0): 10, (topic, 1): 10}) == dict.fromkeys(
        _both(topic), NONE
    )
    assert conn.commit(-1, "", {(topic, 1): 20}) == {(topic, 1): NONE}
    # The plain commit is visible at once, though the partition is still unstable.
    assert fetch(conn, _both(topic), require_stable=False)[(topic, 1)] == (20, NONE)
    assert fetch(conn, _both(topic), require_stable=True)[(topic, 1)] == (
        NO_OFFSET,
        UNSTABLE_OFFSET_COMMIT,
    )
    assert marker(conn, pid, committed=True) == NONE
    assert fetch(conn, _both(topic), require_stable=True) == {
        (topic, 0): (10, NONE),
        (topic, 1): (20, NONE),
    }


def test_v3_member_checks(cluster: ClusterHandle, topic: str) -> None:
    group = f"txnoff-m-{uuid.uuid4().hex[:8]}"
    (member,) = form_group([connect(cluster, group)], topic, PARTITIONS)
    conn, pid = member.conn, new_producer_id()
    try:
        gen = member.generation
        tp = {(topic, 0): 7}
        assert txn_commit(conn, pid, tp, member=(member.member_id, None, gen + 1)) == {
            (topic, 0): ILLEGAL_GENERATION
        }
        assert txn_commit(conn, pid, tp, member=("stranger", None, gen)) == {
            (topic, 0): UNKNOWN_MEMBER_ID
        }
        # Kafka checks a generation even without a member id, and neither when both are unset.
        assert txn_commit(conn, pid, tp, member=("", None, gen + 1)) == {
            (topic, 0): ILLEGAL_GENERATION
        }
        assert txn_commit(conn, pid, tp, member=("", None, -1)) == {(topic, 0): NONE}
        # No ownership check: a transactional producer commits what its consumer read.
        assert txn_commit(conn, pid, {(topic, 1): 8}, member=(member.member_id, None, gen)) == {
            (topic, 1): NONE
        }
        # Versions below 3 carry no member at all.
        assert txn_commit(conn, pid, tp, version=2) == {(topic, 0): NONE}
        assert marker(conn, pid, committed=True) == NONE
        assert fetch(conn, _both(topic), require_stable=True) == {
            (topic, 0): (7, NONE),
            (topic, 1): (8, NONE),
        }
    finally:
        conn.close()


def test_a_fenced_static_instance(cluster: ClusterHandle, topic: str) -> None:
    from tests.integration.test_groups_bad_input import (
        JoinGroupRequest,
        JoinGroupResponse,
        subscription,
    )

    group = f"txnoff-s-{uuid.uuid4().hex[:8]}"
    conn = connect(cluster, group)
    try:
        R = JoinGroupRequest[5]
        req = R(
            group_id=group,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            member_id="",
            group_instance_id="instance-1",
            protocol_type="consumer",
            protocols=[R.JoinGroupRequestProtocol(name="range", metadata=subscription(topic))],
        )
        joined = conn.call(req, JoinGroupResponse, 5)
        assert joined.error_code == NONE, joined
        pid = new_producer_id()
        assert txn_commit(
            conn, pid, {(topic, 0): 1}, member=("someone-else", "instance-1", -1)
        ) == {(topic, 0): FENCED_INSTANCE_ID}
        assert txn_commit(
            conn, pid, {(topic, 0): 1}, member=(joined.member_id, "instance-1", -1)
        ) == {(topic, 0): NONE}
        assert marker(conn, pid, committed=False) == NONE
    finally:
        conn.close()


def test_refusals(cluster: ClusterHandle, conn: GroupConn, topic: str) -> None:
    pid = new_producer_id()
    assert txn_commit(conn, pid, {(topic, 0): 1, ("no-such-topic-txnoff", 0): 1}) == {
        (topic, 0): NONE,
        ("no-such-topic-txnoff", 0): UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert txn_commit(conn, -1, {(topic, 0): 1}) == {(topic, 0): INVALID_PRODUCER_ID_MAPPING}
    assert marker(conn, pid, committed=True, partition=50) == UNKNOWN_TOPIC_OR_PARTITION
    # Another broker is not the group's coordinator.
    other = next(b for b in cluster.broker_ids() if b != coordinator_id(cluster, conn.group))
    elsewhere = GroupConn(cluster.broker_address(other), conn.group)
    try:
        assert txn_commit(elsewhere, pid, {(topic, 0): 2}) == {(topic, 0): NOT_COORDINATOR}
    finally:
        elsewhere.close()
    # A fenced producer epoch: neither its commits nor its markers are taken.
    assert txn_commit(conn, pid, {(topic, 1): 4}, epoch=3) == {(topic, 1): NONE}
    assert txn_commit(conn, pid, {(topic, 1): 5}, epoch=2) == {(topic, 1): INVALID_PRODUCER_EPOCH}
    assert marker(conn, pid, committed=True, epoch=2) == INVALID_PRODUCER_EPOCH
    assert pending_in_zookeeper(cluster.zk, conn.group, pid) == set(_both(topic))
    # The coordinator aborting on timeout bumps the epoch: the abort marker carries the new one.
    assert marker(conn, pid, committed=False, epoch=4) == NONE
    assert fetch(conn, _both(topic), require_stable=True) == {
        (topic, 0): (NO_OFFSET, NONE),
        (topic, 1): (NO_OFFSET, NONE),
    }


def test_one_marker_completes_the_producers_groups_of_its_partition(
    cluster: ClusterHandle, topic: str
) -> None:
    index = offsets_partition(f"txnoff-p-{uuid.uuid4().hex}")
    groups = [group_in_partition("txnoff-p", index) for _ in range(3)]
    other = group_in_partition("txnoff-q", (index + 1) % 50)
    conns = {g: connect(cluster, g) for g in [*groups, other]}
    pid = new_producer_id()
    try:
        for c in conns.values():
            assert txn_commit(c, pid, {(topic, 0): 11}) == {(topic, 0): NONE}
        # Each group's coordinator completes the groups it holds; any other answers
        # NOT_LEADER_OR_FOLLOWER (retriable) until their own coordinators have.
        for _ in range(2):
            codes = {g: marker(conns[g], pid, committed=True, partition=index) for g in groups}
            assert set(codes.values()) <= {NONE, NOT_LEADER_OR_FOLLOWER}, codes
        # The second round finds every group completed by the first.
        assert codes == dict.fromkeys(groups, NONE)
        assert not any(pending_in_zookeeper(cluster.zk, g, pid) for g in groups)
        for g in groups:
            assert fetch(conns[g], [(topic, 0)], require_stable=True) == {(topic, 0): (11, NONE)}
        # A group of another offsets partition waits for its own marker.
        assert pending_in_zookeeper(cluster.zk, other, pid) == {(topic, 0)}
        assert marker(conns[other], pid, committed=False) == NONE
        assert pending_in_zookeeper(cluster.zk, other, pid) == set()
    finally:
        for c in conns.values():
            c.close()


def test_offset_delete_and_delete_groups_drop_pending_offsets(
    cluster: ClusterHandle, conn: GroupConn, topic: str
) -> None:
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KafkaTP

    pid = new_producer_id()
    assert txn_commit(conn, pid, {(topic, 0): 6, (topic, 1): 6}) == dict.fromkeys(
        _both(topic), NONE
    )
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        admin.delete_group_offsets(conn.group, [KafkaTP(topic, 0)])
        assert pending_in_zookeeper(cluster.zk, conn.group, pid) == {(topic, 1)}
        assert fetch(conn, _both(topic), require_stable=True) == {
            (topic, 0): (NO_OFFSET, NONE),
            (topic, 1): (NO_OFFSET, UNSTABLE_OFFSET_COMMIT),
        }
        assert conn.delete() == NONE
        assert cluster.zk.exists(Z.group_path(conn.group)) is None
    finally:
        admin.close()
    # The marker finds the group gone, forgets it, and does not bring it back.
    assert marker(conn, pid, committed=True) == NONE
    assert not indexed(cluster.zk, pid, conn.group)
    assert cluster.zk.exists(Z.group_path(conn.group)) is None


def _poll(consumer: Consumer, want: int, timeout_s: float) -> int:
    seen, deadline = 0, time.monotonic() + timeout_s
    while seen < want and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen += 1
    return seen


@pytest.mark.skipif(
    ApiKey.END_TXN not in SUPPORTED, reason="the broker serves no transaction coordinator"
)
def test_librdkafka_consume_transform_produce(cluster: ClusterHandle) -> None:
    """A read_committed consumer's positions sent to a transaction (librdkafka's
    send_offsets_to_transaction: AddOffsetsToTxn, TxnOffsetCommit v3 with the member, the
    markers): committed with the transaction, never when it aborts."""
    src, dst, group = (f"txnoff-e2e-{k}-{uuid.uuid4().hex[:6]}" for k in ("in", "out", "g"))
    cluster.create_topic(src, partitions=2, replication_factor=3)
    cluster.create_topic(dst, partitions=1, replication_factor=3)
    plain = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(10):
        plain.produce(src, str(i).encode(), partition=i % 2)
    assert plain.flush(30) == 0
    config = {
        "bootstrap.servers": cluster.bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
    }
    consumer = Consumer(config)
    consumer.subscribe([src])
    txn = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": f"t-{group}"})
    txn.init_transactions(30)
    try:
        assert _poll(consumer, 10, 60) == 10
        both = [KafkaTP(src, 0), KafkaTP(src, 1)]
        txn.begin_transaction()
        txn.produce(dst, b"out")
        positions = consumer.position(consumer.assignment())
        txn.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
        txn.commit_transaction(30)
        committed = consumer.committed(both, timeout=30)
        assert sorted((t.partition, t.offset) for t in committed) == [(0, 5), (1, 5)]
        txn.begin_transaction()
        txn.produce(dst, b"out2")
        rewound = [KafkaTP(src, 0, 1), KafkaTP(src, 1, 1)]
        txn.send_offsets_to_transaction(rewound, consumer.consumer_group_metadata(), 30)
        txn.abort_transaction(30)
        committed = consumer.committed(both, timeout=30)
        assert sorted((t.partition, t.offset) for t in committed) == [(0, 5), (1, 5)]
    finally:
        consumer.close()
    # A new member of the group resumes after the committed transaction's positions.
    again = Consumer(config)
    again.subscribe([src])
    try:
        assert _poll(again, 1, 8) == 0
    finally:
        again.close()


def test_a_malformed_pending_node_fails_its_group_only(
    cluster: ClusterHandle, conn: GroupConn, topic: str
) -> None:
    pid = new_producer_id()
    assert txn_commit(conn, pid, {(topic, 0): 3}) == {(topic, 0): NONE}
    path = Z.txn_offset_path(conn.group, pid, topic, 0)
    good, _ = cluster.zk.get(path)
    cluster.zk.set(path, b'{"offset": "three"}')
    try:
        assert txn_commit(conn, pid, {(topic, 0): 4}) == {(topic, 0): UNKNOWN_SERVER_ERROR}
        assert marker(conn, pid, committed=True) == UNKNOWN_SERVER_ERROR
        # A fetch not asking for stable offsets does not read pending offsets.
        assert fetch(conn, [(topic, 0)], require_stable=False) == {(topic, 0): (NO_OFFSET, NONE)}
        # Another group is unaffected.
        other = connect(cluster, f"txnoff-ok-{uuid.uuid4().hex[:8]}")
        try:
            assert txn_commit(other, pid, {(topic, 1): 1}) == {(topic, 1): NONE}
            assert fetch(other, [(topic, 1)], require_stable=True) == {
                (topic, 1): (NO_OFFSET, UNSTABLE_OFFSET_COMMIT)
            }
        finally:
            other.close()
    finally:
        cluster.zk.set(path, good)
    assert marker(conn, pid, committed=True) == NONE
    assert fetch(conn, [(topic, 0)], require_stable=True) == {(topic, 0): (3, NONE)}
