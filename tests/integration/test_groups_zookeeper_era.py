"""ZooKeeper-coordinated groups beside Kafka-protocol groups on the shared real cluster, and
garbage in every kind of node under ``/consumers`` affecting only its own group.

:class:`ZkEraConsumer` acts as Kafka 0.8's ZookeeperConsumerConnector does (the seeds' way): an
ephemeral registration under ``ids/``, the range assignment computed by every consumer from the
sorted consumer ids and partitions, ephemeral ``owners/`` nodes holding the consumer-thread id,
and offsets committed as bare decimal text straight into ZooKeeper.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.admin import ListGroupsRequest, ListGroupsResponse
from kafka.protocol.consumer import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pafka.cli.main import main
from pafka.zk.znodes import ConsumerGroupZNodes as Z
from pafka.zk.znodes import ZkConsumerRegistration
from tests.integration.conftest import ClusterHandle
from tests.integration.test_groups_bad_input import (
    INCONSISTENT_GROUP_PROTOCOL,
    NON_EMPTY_GROUP,
    NONE,
    GroupConn,
    connect,
    decode_assignment,
)

UNKNOWN_SERVER_ERROR = -1
PARTITIONS = 4
RECORDS = 40
LIST_V = 4


class ZkEraConsumer:
    """One Kafka 0.8-style consumer: its own ZooKeeper session, so its nodes are ephemeral."""

    def __init__(
        self, zk_connect: str, group: str, topic: str, host: str, *, pykafka: bool = False
    ) -> None:
        self.group, self.topic, self.pykafka = group, topic, pykafka
        self.consumer_id = (
            f"{host}:{uuid.uuid4()}"
            if pykafka
            else f"{group}_{host}-{int(time.time() * 1000)}-{uuid.uuid4().hex[:8]}"
        )
        self.zk = KazooClient(hosts=zk_connect)
        self.zk.start(timeout=15)
        self.owned: set[int] = set()

    def register(self) -> None:
        """pykafka's BalancedConsumer writes the bare topic name, Kafka 0.8 its JSON."""
        node = ZkConsumerRegistration(self.consumer_id, (self.topic,), "static", 1)
        data = self.topic.encode() if self.pykafka else node.encode()
        self.zk.ensure_path(Z.ids_path(self.group))
        self.zk.create(Z.member_path(self.group, self.consumer_id), data, ephemeral=True)

    def _owner(self, p: int) -> tuple[str, bytes]:
        """pykafka names an owner ``{leader}-{partition}`` and writes its consumer id; Kafka 0.8
        names it by the partition and writes the consumer-thread id."""
        if self.pykafka:
            leader = 1  # only the name's form matters to the readers under test
            return Z.broker_owner_path(self.group, self.topic, leader, p), self.consumer_id.encode()
        return Z.owner_path(self.group, self.topic, p), f"{self.consumer_id}-0".encode()

    def claim(self) -> None:
        """The seeds' range assignment over the registered consumers (every consumer computes
        the same), then an ephemeral owner node per partition it takes."""
        consumers = sorted(self.zk.get_children(Z.ids_path(self.group)))
        me = consumers.index(self.consumer_id)
        share, extra = divmod(PARTITIONS, len(consumers))
        start = me * share + min(me, extra)
        mine = range(start, start + share + (1 if me < extra else 0))
        self.zk.ensure_path(Z.owners_topic_path(self.group, self.topic))
        for p in mine:
            path, data = self._owner(p)
            self.zk.create(path, data, ephemeral=True)
            self.owned.add(p)

    def commit(self, partition: int, offset: int) -> None:
        path = Z.offset_path(self.group, self.topic, partition)
        self.zk.ensure_path(path)
        self.zk.set(path, str(offset).encode())

    def close(self) -> None:
        self.zk.stop()
        self.zk.close()


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _produce(cluster: ClusterHandle, topic: str) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(RECORDS):
        producer.produce(topic, f"r{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def _consume_all(cluster: ClusterHandle, group: str, topic: str) -> tuple[Consumer, set[int]]:
    """A Kafka-protocol member that reads every record and commits; left open."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 10_000,
        }
    )
    consumer.subscribe([topic])
    seen: set[int] = set()
    deadline = time.monotonic() + 60
    while len(seen) < RECORDS and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen.add(int(msg.value().decode()[1:]))
            consumer.commit(msg, asynchronous=False)
    return consumer, seen


def _list_groups(cluster: ClusterHandle) -> tuple[int, dict[str, tuple[str, str]]]:
    """ListGroups from every broker: top error, and group -> (protocol type, state)."""
    found: dict[str, tuple[str, str]] = {}
    for broker in cluster.broker_ids():
        conn = GroupConn(cluster.broker_address(broker), "")
        try:
            resp = conn.call(
                ListGroupsRequest[LIST_V](states_filter=[]), ListGroupsResponse, LIST_V
            )
        finally:
            conn.close()
        if resp.error_code != NONE:
            return int(resp.error_code), found
        for g in resp.groups:
            found[g.group_id] = (g.protocol_type, getattr(g, "group_state", ""))
    return NONE, found


def _commit_v0(conn: GroupConn, topic: str, offsets: dict[int, int]) -> dict[int, int]:
    R = OffsetCommitRequest[0]
    parts = [
        R.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
            partition_index=p, committed_offset=o, committed_metadata=""
        )
        for p, o in sorted(offsets.items())
    ]
    req = R(group_id=conn.group, topics=[R.OffsetCommitRequestTopic(name=topic, partitions=parts)])
    resp = conn.call(req, OffsetCommitResponse, 0)
    return {p.partition_index: int(p.error_code) for t in resp.topics for p in t.partitions}


def _fetch_v0(conn: GroupConn, topic: str, partitions: list[int]) -> dict[int, tuple[int, int]]:
    R = OffsetFetchRequest[0]
    req = R(
        group_id=conn.group,
        topics=[R.OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)],
    )
    resp = conn.call(req, OffsetFetchResponse, 0)
    return {
        p.partition_index: (int(p.committed_offset), int(p.error_code))
        for t in resp.topics
        for p in t.partitions
    }


def _pafka(capsys: pytest.CaptureFixture[str], cluster: ClusterHandle, *args: str) -> str:
    capsys.readouterr()
    try:
        main([*args, "--bootstrap-server", cluster.bootstrap])
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr()
    return capsys.readouterr().out


@pytest.fixture
def zk_era_group(cluster: ClusterHandle) -> Iterator[tuple[str, str, list[ZkEraConsumer]]]:
    topic, group = _name("zkera"), _name("zkera-g")
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=1)
    cluster.wait_for_leaders(topic, PARTITIONS)
    consumers = [ZkEraConsumer(cluster.zk_connect, group, topic, f"host{i}") for i in range(2)]
    try:
        for c in consumers:
            c.register()
        for c in consumers:
            c.claim()
        yield topic, group, consumers
    finally:
        for c in consumers:
            c.close()


def test_zookeeper_era_group_beside_a_kafka_protocol_group(
    cluster: ClusterHandle,
    zk_era_group: tuple[str, str, list[ZkEraConsumer]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic, zk_group, zk_consumers = zk_era_group
    _produce(cluster, topic)
    zk_consumers[0].commit(0, 7)
    zk_consumers[1].commit(2, 3)
    owners_before = {
        p: cluster.zk.get(Z.owner_path(zk_group, topic, p))[0] for p in range(PARTITIONS)
    }

    # A Kafka-protocol group on the same topic consumes everything as usual.
    kafka_group = _name("kafka-g")
    consumer, seen = _consume_all(cluster, kafka_group, topic)
    try:
        assert seen == set(range(RECORDS))

        # Its offsets, read by the coordinator: the consumers' bare decimals.
        conn = connect(cluster, zk_group)
        try:
            code, found = conn.fetch([(topic, p) for p in range(PARTITIONS)])
            assert code == NONE
            assert {tp[1]: v[0] for tp, v in found.items()} == {0: 7, 1: -1, 2: 3, 3: -1}

            # A Kafka-protocol member may not join it and take its partitions.
            resp = conn.join("", topics=(topic,))
            assert resp.error_code == INCONSISTENT_GROUP_PROTOCOL, resp

            described = conn.describe()
            assert (described.error_code, described.group_state) == (NONE, "Stable")
            assert described.protocol_type == ""
            assert {m.member_id for m in described.members} == {c.consumer_id for c in zk_consumers}
            assert {m.client_host for m in described.members} == {"/host0", "/host1"}
        finally:
            conn.close()
        # ... and nothing of theirs was touched.
        for p, data in owners_before.items():
            assert cluster.zk.get(Z.owner_path(zk_group, topic, p))[0] == data

        code, listed = _list_groups(cluster)
        assert code == NONE
        assert listed[zk_group] == ("", "Stable")
        assert listed[kafka_group] == ("consumer", "Stable")

        # OffsetCommit v0 (Kafka 0.8.1) on any broker: straight into ZooKeeper, bare decimal.
        for broker in cluster.broker_ids():
            conn = GroupConn(cluster.broker_address(broker), zk_group)
            try:
                assert _commit_v0(conn, topic, {1: 5 + broker}) == {1: NONE}
                assert _fetch_v0(conn, topic, [1])[1] == (5 + broker, NONE)
            finally:
                conn.close()
            assert cluster.zk.get(Z.offset_path(zk_group, topic, 1))[0] == str(5 + broker).encode()

        # The Kafka-protocol group's offsets are bare decimals too, the rest beside them.
        data, _ = cluster.zk.get(Z.offset_path(kafka_group, topic, 0))
        assert data == str(RECORDS // PARTITIONS).encode()
        details = json.loads(cluster.zk.get(Z.commit_path(kafka_group, topic, 0))[0])
        assert details["offset"] == RECORDS // PARTITIONS

        listing = _pafka(capsys, cluster, "groups", "list")
        assert {zk_group, kafka_group} <= set(listing.split())
        zk_rows = _pafka(capsys, cluster, "groups", "describe", zk_group).splitlines()
        by_partition = {int(r.split()[2]): r.split() for r in zk_rows if r.startswith(zk_group)}
        assert set(by_partition) == set(range(PARTITIONS))
        assert by_partition[0][3:6] == ["7", str(RECORDS // PARTITIONS), "3"]  # offset, end, lag
        assert by_partition[0][6] == zk_consumers[0].consumer_id
        assert by_partition[3][6] == zk_consumers[1].consumer_id
        kafka_rows = _pafka(capsys, cluster, "groups", "describe", kafka_group).splitlines()
        lags = [r.split()[5] for r in kafka_rows if r.startswith(kafka_group)]
        assert lags == ["0"] * PARTITIONS
    finally:
        consumer.close()

    # Once the ZooKeeper-era consumers are gone, the group is an ordinary one with offsets:
    # Kafka-protocol members may take it over from there.
    for c in zk_consumers:
        c.close()
    conn = connect(cluster, zk_group)
    try:
        resp = conn.join("", topics=(topic,))
        assert resp.error_code != INCONSISTENT_GROUP_PROTOCOL, resp
    finally:
        conn.close()


# -- garbage under /consumers -------------------------------------------------------------------

GARBAGE = st.one_of(
    st.binary(max_size=40),
    st.sampled_from(
        [
            b"\xff\xfe\x00",
            b"[]",
            b"null",
            b"-12",
            b"99999999999999999999999",
            b'{"version":1}',
            b'{"broker":"x","epoch":[]}',
            b'{"offset":-5}',
            b'{"member_id":7}',
            b'{"subscription":{"t":true},"pattern":"static"}',
            b'{"generation":1e400}',
            b"{" * 5000,
        ]
    ),
)
NODE_KINDS = ["root", "coordinator", "ids", "owners", "offsets", "offset_commits"]


def _plant(zk: KazooClient, group: str, kind: str, data: bytes) -> str:
    """A group whose ``kind`` node holds ``data`` (everything else well formed)."""
    path = {
        "root": Z.group_path(group),
        "coordinator": Z.coordinator_path(group),
        "ids": Z.member_path(group, "m-1"),
        "owners": Z.owner_path(group, "t", 0),
        "offsets": Z.offset_path(group, "t", 0),
        "offset_commits": Z.commit_path(group, "t", 0),
    }[kind]
    if kind == "offset_commits":
        zk.create(Z.offset_path(group, "t", 0), b"5", makepath=True)
    zk.create(path, data, makepath=True)
    return path


@pytest.fixture(scope="module")
def healthy(cluster: ClusterHandle) -> Iterator[tuple[str, str, Consumer]]:
    topic, group = _name("healthy"), _name("healthy-g")
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=1)
    cluster.wait_for_leaders(topic, PARTITIONS)
    _produce(cluster, topic)
    consumer, seen = _consume_all(cluster, group, topic)
    assert seen == set(range(RECORDS))
    yield topic, group, consumer
    consumer.close()


def _broker_logs(cluster: ClusterHandle) -> str:
    return "\n".join(Path(b.log_path).read_text(errors="replace") for b in cluster.local.brokers())


def _check_group(cluster: ClusterHandle, group: str) -> list[Any]:
    """Every group request for ``group``: each answers (no connection closed)."""
    conn = connect(cluster, group)
    try:
        described = conn.describe()
        fetched, _ = conn.fetch([("t", 0)])
        joined = conn.join("", topics=("t",))
        return [described.error_code, described.error_message, fetched, joined.error_code]
    finally:
        conn.close()


@pytest.mark.parametrize("kind", NODE_KINDS)
@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=GARBAGE)
def test_garbage_in_one_group_affects_that_group_alone(
    cluster: ClusterHandle, healthy: tuple[str, str, Consumer], kind: str, data: bytes
) -> None:
    topic, good_group, _member = healthy
    bad_group = _name(f"bad-{kind}")
    path = _plant(cluster.zk, bad_group, kind, data)
    try:
        described, message, _fetched, _joined = _check_group(cluster, bad_group)
        if described != NONE:
            # One clear error (DescribeGroups before v6 has no message), the node named in the
            # coordinator's log.
            assert described == UNKNOWN_SERVER_ERROR
            assert message is None or path in message
            assert f"znode {path} is malformed" in _broker_logs(cluster)
        code, listed = _list_groups(cluster)
        assert code == NONE and good_group in listed
        conn = connect(cluster, good_group)
        try:
            code, found = conn.fetch([(topic, p) for p in range(PARTITIONS)])
            assert code == NONE
            assert all(v[0] == RECORDS // PARTITIONS for v in found.values())
            assert conn.describe().group_state == "Stable"
        finally:
            conn.close()
    finally:
        with contextlib.suppress(NoNodeError):
            cluster.zk.delete(Z.group_path(bad_group), recursive=True)


def test_a_group_of_garbage_fails_with_the_node_named(cluster: ClusterHandle) -> None:
    """The issue's case: a member node without session timeouts used to raise KeyError and
    close the connection; now the group answers UNKNOWN_SERVER_ERROR naming the node."""
    group = _name("keyerror")
    path = _plant(cluster.zk, group, "ids", b'{"version":1,"subscription":["t"]}')
    described, _message, fetched, joined = _check_group(cluster, group)
    assert described == UNKNOWN_SERVER_ERROR
    assert f"znode {path} is malformed: has no 'session_timeout_ms'" in _broker_logs(cluster)
    assert fetched == UNKNOWN_SERVER_ERROR and joined == UNKNOWN_SERVER_ERROR
    code, listed = _list_groups(cluster)
    assert code == NONE and group not in listed
    cluster.zk.delete(Z.group_path(group), recursive=True)


@pytest.mark.parametrize("kind", NODE_KINDS)
def test_a_group_of_garbage_is_deleted_unless_a_consumer_is_registered(
    cluster: ClusterHandle, healthy: tuple[str, str, Consumer], kind: str
) -> None:
    """As ZooKeeper-era tools delete a group: what its nodes hold is not read, only whether a
    consumer is registered under ids (a member node, garbage or not, keeps it)."""
    _topic, good_group, _member = healthy
    group = _name(f"delete-{kind}")
    _plant(cluster.zk, group, kind, b"\xff\xfe\x00")
    conn = connect(cluster, group)
    try:
        code = conn.delete()
    finally:
        conn.close()
    try:
        if kind == "ids":
            assert code == NON_EMPTY_GROUP
            assert cluster.zk.exists(Z.member_path(group, "m-1"))
        else:
            assert code == NONE
            assert not cluster.zk.exists(Z.group_path(group))
        assert good_group in _list_groups(cluster)[1]
    finally:
        with contextlib.suppress(NoNodeError):
            cluster.zk.delete(Z.group_path(group), recursive=True)


def test_groups_keep_working_while_another_joins_and_leaves(cluster: ClusterHandle) -> None:
    """A ZooKeeper-era group's consumers come and go (ephemeral nodes) while the coordinator
    holds the group: listing follows them."""
    topic, group = _name("zkera2"), _name("zkera2-g")
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=1)
    one = ZkEraConsumer(cluster.zk_connect, group, topic, "h")
    one.commit(0, 1)  # the group exists with offsets only: an ordinary Empty group
    conn = connect(cluster, group)
    try:
        assert conn.describe().group_state == "Empty"
        one.register()
        one.claim()
        assert conn.describe().group_state == "Stable"
        assert _list_groups(cluster)[1][group] == ("", "Stable")
        one.close()
        assert conn.describe().group_state == "Empty"
    finally:
        conn.close()


def test_json_offsets_of_older_pafka_migrate_when_the_group_is_loaded(
    cluster: ClusterHandle,
) -> None:
    topic, group = _name("migrate"), _name("migrate-g")
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    legacy = b'{"version":1,"offset":12,"leader_epoch":3,"metadata":"m","commit_timestamp":5}'
    cluster.zk.create(Z.offset_path(group, topic, 0), legacy, makepath=True)
    conn = connect(cluster, group)
    try:
        code, found = conn.fetch([(topic, 0)])
        assert (code, found[(topic, 0)]) == (NONE, (12, "m", NONE))
    finally:
        conn.close()
    assert cluster.zk.get(Z.offset_path(group, topic, 0))[0] == b"12"
    details = json.loads(cluster.zk.get(Z.commit_path(group, topic, 0))[0])
    assert (details["offset"], details["leader_epoch"], details["metadata"]) == (12, 3, "m")


def test_offset_commit_v1_keeps_the_commit_time_it_carries(cluster: ClusterHandle) -> None:
    topic, group = _name("v1"), _name("v1-g")
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    R = OffsetCommitRequest[1]
    part = R.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
        partition_index=0, committed_offset=9, commit_timestamp=1_234_567, committed_metadata="v1"
    )
    req = R(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[R.OffsetCommitRequestTopic(name=topic, partitions=[part])],
    )
    conn = connect(cluster, group)
    try:
        resp = conn.call(req, OffsetCommitResponse, 1)
        assert [p.error_code for t in resp.topics for p in t.partitions] == [NONE]
        code, found = conn.fetch([(topic, 0)])
        assert (code, found[(topic, 0)]) == (NONE, (9, "v1", NONE))
    finally:
        conn.close()
    assert cluster.zk.get(Z.offset_path(group, topic, 0))[0] == b"9"
    details = json.loads(cluster.zk.get(Z.commit_path(group, topic, 0))[0])
    assert details["commit_timestamp"] == 1_234_567


def test_pykafka_balanced_consumers_are_described_with_their_partitions(
    cluster: ClusterHandle,
) -> None:
    topic, group = _name("pyk"), _name("pyk-g")
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=1)
    consumers = [
        ZkEraConsumer(cluster.zk_connect, group, topic, f"pyhost{i}", pykafka=True)
        for i in range(2)
    ]
    try:
        for c in consumers:
            c.register()
        for c in consumers:
            c.claim()
        conn = connect(cluster, group)
        try:
            described = conn.describe()
            assert (described.error_code, described.group_state) == (NONE, "Stable")
            owned = {
                m.member_id: decode_assignment(bytes(m.member_assignment))
                for m in described.members
            }
            assert owned == {
                c.consumer_id: frozenset((topic, p) for p in c.owned) for c in consumers
            }
            assert {m.client_host for m in described.members} == {"/pyhost0", "/pyhost1"}
            assert conn.join("", topics=(topic,)).error_code == INCONSISTENT_GROUP_PROTOCOL
        finally:
            conn.close()
    finally:
        for c in consumers:
            c.close()
