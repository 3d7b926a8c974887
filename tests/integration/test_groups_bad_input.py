"""Consumer-group requests the coordinator must refuse, each with the error code Kafka's clients
expect, and malformed group payloads that must never crash a broker.

Requests are raw, built with kafka-python's message classes (an encoder independent of pafka's
codec) and sent to the group's coordinator as FindCoordinator names it, except where a test
checks that the other brokers refuse. Each test uses groups and topics of its own on the shared
cluster. Group members here are plain sockets: a test decides exactly when each one joins,
syncs, heartbeats and commits.
"""

from __future__ import annotations

import re
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kafka.protocol.admin import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from kafka.protocol.consumer import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.protocol.metadata import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)

from pafka.groups.consumer_protocol import decode_assignment as pafka_decode_assignment
from pafka.zk.znodes import ConsumerGroupZNodes as Z
from pafka.zk.znodes import PartitionOwnerZNode
from tests.integration.conftest import ClusterHandle
from tests.integration.wire import roundtrip

# Kafka's error codes, as the protocol spells them.
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
OFFSET_METADATA_TOO_LARGE = 12
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79

# Request versions: JoinGroup v5 needs the MEMBER_ID_REQUIRED round trip (v4+) and carries
# group instance ids; OffsetFetch v5 has a top-level error code (v2+).
JOIN_V = 5
SYNC_V = 3
HEARTBEAT_V = 3
LEAVE_V = 3
COMMIT_V = 7
FETCH_V = 5
FIND_V = 3
DESCRIBE_V = 5
DELETE_V = 1

SESSION_TIMEOUT_MS = 10_000
NO_OFFSET = -1
T = TypeVar("T")
TopicPartition = tuple[str, int]


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def subscription(*topics: str) -> bytes:
    return bytes(
        ConsumerProtocolSubscription(version=0, topics=list(topics), user_data=None).encode()
    )


def assignment(partitions: Iterable[TopicPartition]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, p in sorted(partitions):
        by_topic.setdefault(topic, []).append(p)
    encoded = ConsumerProtocolAssignment(
        version=0, assigned_partitions=sorted(by_topic.items()), user_data=None
    ).encode()
    return bytes(encoded)


def decode_assignment(data: bytes) -> frozenset[TopicPartition]:
    if not data:
        return frozenset()
    return frozenset(
        (tp.topic, tp.partition) for tp in ConsumerProtocolAssignment.decode(data).partitions()
    )


def range_assignment(
    member_ids: Sequence[str], topic: str, partitions: int
) -> dict[str, frozenset[TopicPartition]]:
    """Kafka's range assignor for one topic: members in id order take consecutive ranges, the
    first ``partitions % members`` of them one partition more."""
    members = sorted(member_ids)
    share, extra = divmod(partitions, len(members))
    out: dict[str, frozenset[TopicPartition]] = {}
    start = 0
    for i, member in enumerate(members):
        count = share + (1 if i < extra else 0)
        out[member] = frozenset((topic, p) for p in range(start, start + count))
        start += count
    return out


def concurrently(*calls: Callable[[], T]) -> list[T]:
    """Run blocking requests (joins and syncs wait for the whole group) side by side."""
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = [pool.submit(call) for call in calls]
        return [f.result(timeout=60) for f in futures]


class GroupConn:
    """One connection to one broker, speaking the group APIs for one group."""

    def __init__(self, address: tuple[str, int], group: str) -> None:
        self.address = address
        self.group = group
        self.sock = socket.create_connection(address, timeout=30)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def call(self, request: Any, response_cls: Any, version: int) -> Any:
        self.correlation_id += 1
        return roundtrip(self.sock, request, response_cls, version, self.correlation_id)

    def join(
        self,
        member_id: str = "",
        *,
        protocol_type: str = "consumer",
        protocols: Sequence[tuple[str, bytes]] | None = None,
        topics: Sequence[str] = ("t",),
        session_timeout_ms: int = SESSION_TIMEOUT_MS,
        version: int = JOIN_V,
    ) -> Any:
        R = JoinGroupRequest[version]
        chosen = [("range", subscription(*topics))] if protocols is None else protocols
        fields: dict[str, Any] = {
            "group_id": self.group,
            "session_timeout_ms": session_timeout_ms,
            "rebalance_timeout_ms": session_timeout_ms,
            "member_id": member_id,
            "protocol_type": protocol_type,
            "protocols": [R.JoinGroupRequestProtocol(name=n, metadata=m) for n, m in chosen],
        }
        if version >= 5:
            fields["group_instance_id"] = None
        return self.call(R(**fields), JoinGroupResponse, version)

    def sync(
        self, generation: int, member_id: str, assignments: dict[str, bytes] | None = None
    ) -> Any:
        R = SyncGroupRequest[SYNC_V]
        req = R(
            group_id=self.group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=None,
            assignments=[
                R.SyncGroupRequestAssignment(member_id=m, assignment=a)
                for m, a in (assignments or {}).items()
            ],
        )
        return self.call(req, SyncGroupResponse, SYNC_V)

    def heartbeat(self, generation: int, member_id: str) -> int:
        req = HeartbeatRequest[HEARTBEAT_V](
            group_id=self.group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=None,
        )
        return int(self.call(req, HeartbeatResponse, HEARTBEAT_V).error_code)

    def leave(self, member_id: str) -> tuple[int, list[int]]:
        R = LeaveGroupRequest[LEAVE_V]
        req = R(
            group_id=self.group,
            members=[R.MemberIdentity(member_id=member_id, group_instance_id=None)],
        )
        resp = self.call(req, LeaveGroupResponse, LEAVE_V)
        return int(resp.error_code), [int(m.error_code) for m in resp.members]

    def commit(
        self,
        generation: int,
        member_id: str,
        offsets: dict[TopicPartition, int],
        metadata: str = "",
    ) -> dict[TopicPartition, int]:
        R = OffsetCommitRequest[COMMIT_V]
        by_topic: dict[str, list[Any]] = {}
        for (topic, p), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(
                R.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                    partition_index=p,
                    committed_offset=offset,
                    committed_leader_epoch=-1,
                    committed_metadata=metadata,
                )
            )
        req = R(
            group_id=self.group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=None,
            topics=[
                R.OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()
            ],
        )
        resp = self.call(req, OffsetCommitResponse, COMMIT_V)
        return {
            (t.name, p.partition_index): int(p.error_code)
            for t in resp.topics
            for p in t.partitions
        }

    def fetch(
        self, partitions: Iterable[TopicPartition]
    ) -> tuple[int, dict[TopicPartition, tuple[int, str | None, int]]]:
        """Top-level error code, and (offset, metadata, error code) per partition."""
        R = OffsetFetchRequest[FETCH_V]
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(partitions):
            by_topic.setdefault(topic, []).append(p)
        req = R(
            group_id=self.group,
            topics=[
                R.OffsetFetchRequestTopic(name=t, partition_indexes=ps)
                for t, ps in by_topic.items()
            ],
        )
        resp = self.call(req, OffsetFetchResponse, FETCH_V)
        found = {
            (t.name, p.partition_index): (
                int(p.committed_offset),
                p.metadata,
                int(p.error_code),
            )
            for t in resp.topics
            for p in t.partitions
        }
        return int(resp.error_code), found

    def describe(self) -> Any:
        return self.describe_at(DESCRIBE_V)

    def describe_at(self, version: int) -> Any:
        fields: dict[str, Any] = {"groups": [self.group]}
        if version >= 3:
            fields["include_authorized_operations"] = False
        req = DescribeGroupsRequest[version](**fields)
        return self.call(req, DescribeGroupsResponse, version).groups[0]

    def delete(self) -> int:
        req = DeleteGroupsRequest[DELETE_V](groups_names=[self.group])
        return int(self.call(req, DeleteGroupsResponse, DELETE_V).results[0].error_code)

    def metadata(self) -> Any:
        return self.call(MetadataRequest[1](topics=None), MetadataResponse, 1)


def coordinator_id(cluster: ClusterHandle, group: str) -> int:
    """FindCoordinator, asked of the first broker."""
    address = cluster.broker_address(cluster.broker_ids()[0])
    with socket.create_connection(address, timeout=15) as sock:
        req = FindCoordinatorRequest[FIND_V](key=group, key_type=0)
        resp = roundtrip(sock, req, FindCoordinatorResponse, FIND_V, 1)
    assert resp.error_code == NONE, resp
    assert (resp.host, resp.port) == cluster.broker_address(resp.node_id)
    return int(resp.node_id)


def connect(cluster: ClusterHandle, group: str) -> GroupConn:
    return GroupConn(cluster.broker_address(coordinator_id(cluster, group)), group)


def new_member(conn: GroupConn, **join: Any) -> str:
    """The MEMBER_ID_REQUIRED half of a v4+ join: the id the coordinator hands out."""
    resp = conn.join("", **join)
    assert resp.error_code == MEMBER_ID_REQUIRED, resp
    assert resp.member_id
    return str(resp.member_id)


@dataclass(frozen=True)
class JoinedMember:
    conn: GroupConn
    member_id: str
    generation: int
    partitions: frozenset[TopicPartition]


def form_group(conns: Sequence[GroupConn], topic: str, partitions: int) -> list[JoinedMember]:
    """Every connection joins as a member of one generation; the leader hands out a range
    assignment of ``topic``. Members come back in the order of ``conns``."""
    ids = [new_member(c, topics=(topic,)) for c in conns]
    joined = concurrently(
        *(lambda c=c, m=m: c.join(m, topics=(topic,)) for c, m in zip(conns, ids, strict=True))
    )
    assert [j.error_code for j in joined] == [NONE] * len(conns), joined
    generations = {j.generation_id for j in joined}
    assert len(generations) == 1, f"members joined different generations {generations}"
    (generation,) = generations
    leader = joined[0].leader
    leader_resp = next(j for j in joined if j.member_id == leader)
    assert sorted(m.member_id for m in leader_resp.members) == sorted(ids)
    plan = range_assignment(ids, topic, partitions)
    synced = concurrently(
        *(
            lambda c=c, m=m: c.sync(
                generation, m, {k: assignment(v) for k, v in plan.items()} if m == leader else {}
            )
            for c, m in zip(conns, ids, strict=True)
        )
    )
    assert [s.error_code for s in synced] == [NONE] * len(conns), synced
    members = [
        JoinedMember(c, m, generation, decode_assignment(bytes(s.assignment)))
        for c, m, s in zip(conns, ids, synced, strict=True)
    ]
    assert {m.member_id: m.partitions for m in members} == plan
    return members


def new_group(
    cluster: ClusterHandle, prefix: str, partitions: int, members: int = 1
) -> tuple[str, str, list[JoinedMember]]:
    """A topic, and a group of raw members sharing it (a range assignment): (topic, group,
    members)."""
    topic, group = _name(f"gbad-{prefix}"), _name(prefix)
    cluster.create_topic(topic, partitions=partitions, replication_factor=1)
    conns = [connect(cluster, group) for _ in range(members)]
    return topic, group, form_group(conns, topic, partitions)


def empty_group(cluster: ClusterHandle, prefix: str, partitions: int) -> tuple[str, GroupConn]:
    """A topic, and a connection to the coordinator of a group nobody has used yet."""
    topic = _name(f"gbad-{prefix}")
    cluster.create_topic(topic, partitions=partitions, replication_factor=1)
    return topic, connect(cluster, _name(prefix))


# -- unknown members and stale generations -------------------------------------------------------


def test_made_up_members_of_an_unknown_group_are_refused(cluster: ClusterHandle) -> None:
    topic, conn = empty_group(cluster, "never-joined", 1)
    try:
        assert conn.heartbeat(1, "ghost") == UNKNOWN_MEMBER_ID
        assert conn.sync(1, "ghost", {"ghost": assignment([(topic, 0)])}).error_code == (
            UNKNOWN_MEMBER_ID
        )
        # A commit without a generation is stored whatever its member id while the group has
        # no members, as Kafka stores it (pykafka's ZooKeeper-balanced consumers send their
        # own consumer ids this way).
        assert conn.commit(-1, "ghost", {(topic, 0): 3}) == {(topic, 0): NONE}
        top, found = conn.fetch([(topic, 0)])
        assert top == NONE
        assert found == {(topic, 0): (3, "", NONE)}
    finally:
        conn.close()


def test_commit_of_a_generation_of_an_unknown_group(cluster: ClusterHandle) -> None:
    topic, conn = empty_group(cluster, "never-joined", 1)
    try:
        # Kafka: "this is a request coming from an older generation; either way, reject the
        # commit" (v9+ would say GROUP_ID_NOT_FOUND).
        assert conn.commit(1, "ghost", {(topic, 0): 3}) == {(topic, 0): ILLEGAL_GENERATION}
        assert cluster.zk.exists(Z.group_path(conn.group)) is None
    finally:
        conn.close()


def test_made_up_members_of_a_live_group_are_refused(cluster: ClusterHandle) -> None:
    topic, _, (member,) = new_group(cluster, "live", 2)
    conn, gen = member.conn, member.generation
    try:
        assert conn.heartbeat(gen, "ghost") == UNKNOWN_MEMBER_ID
        assert conn.sync(gen, "ghost").error_code == UNKNOWN_MEMBER_ID
        assert conn.commit(gen, "ghost", {(topic, 0): 1}) == {(topic, 0): UNKNOWN_MEMBER_ID}
        # No member id, no generation: only while the group has no members.
        assert conn.commit(-1, "", {(topic, 0): 1}) == {(topic, 0): UNKNOWN_MEMBER_ID}
        # The real member was not disturbed.
        assert conn.heartbeat(gen, member.member_id) == NONE
        assert conn.fetch([(topic, 0)])[1][(topic, 0)][0] == NO_OFFSET
        assert conn.leave(member.member_id) == (NONE, [NONE])
        # Once the group is empty, the simple commit is accepted.
        assert conn.commit(-1, "", {(topic, 0): 4}) == {(topic, 0): NONE}
        assert conn.fetch([(topic, 0)])[1][(topic, 0)][0] == 4
    finally:
        conn.close()


def test_leave_of_an_unknown_member_does_not_rebalance_the_group(cluster: ClusterHandle) -> None:
    _, _, (member,) = new_group(cluster, "leave", 1)
    try:
        assert member.conn.leave("ghost") == (NONE, [UNKNOWN_MEMBER_ID])
        assert member.conn.heartbeat(member.generation, member.member_id) == NONE
        assert member.conn.describe().group_state == "Stable"
    finally:
        member.conn.close()


def test_stale_generations_are_refused(cluster: ClusterHandle) -> None:
    topic, group, (a,) = new_group(cluster, "stale", 2)
    b_conn = connect(cluster, group)
    gen = a.generation
    try:
        assert a.partitions == {(topic, 0), (topic, 1)}
        assert a.conn.heartbeat(gen, a.member_id) == NONE
        assert a.conn.heartbeat(gen - 1, a.member_id) == ILLEGAL_GENERATION
        assert a.conn.heartbeat(gen + 1, a.member_id) == ILLEGAL_GENERATION
        assert a.conn.sync(gen - 1, a.member_id).error_code == ILLEGAL_GENERATION
        stale = a.conn.commit(gen - 1, a.member_id, {(topic, 0): 5, (topic, 1): 6})
        assert stale == {(topic, 0): ILLEGAL_GENERATION, (topic, 1): ILLEGAL_GENERATION}
        fresh = a.conn.commit(gen, a.member_id, {(topic, 0): 7, (topic, 1): 8})
        assert fresh == {(topic, 0): NONE, (topic, 1): NONE}

        # A second member joins: the group rebalances, A's heartbeats say so until A rejoins.
        b_id = new_member(b_conn, topics=(topic,))
        with ThreadPoolExecutor(max_workers=1) as pool:
            b_join = pool.submit(b_conn.join, b_id, topics=(topic,))
            codes: list[int] = []
            for _ in range(100):
                codes.append(a.conn.heartbeat(gen, a.member_id))
                if codes[-1] == REBALANCE_IN_PROGRESS:
                    break
            assert codes[-1] == REBALANCE_IN_PROGRESS, codes
            assert set(codes) <= {NONE, REBALANCE_IN_PROGRESS}, codes
            a_rejoined = a.conn.join(a.member_id, topics=(topic,))
            b_joined = b_join.result(timeout=30)
        assert a_rejoined.error_code == b_joined.error_code == NONE
        assert a_rejoined.generation_id == b_joined.generation_id == gen + 1
        # The old generation is stale now, for heartbeats and commits alike.
        assert a.conn.heartbeat(gen, a.member_id) == ILLEGAL_GENERATION
        assert a.conn.commit(gen, a.member_id, {(topic, 0): 9}) == {(topic, 0): ILLEGAL_GENERATION}
        _, found = a.conn.fetch([(topic, 0), (topic, 1)])
        assert {tp: v[0] for tp, v in found.items()} == {(topic, 0): 7, (topic, 1): 8}
    finally:
        a.conn.close()
        b_conn.close()


def test_a_member_cannot_commit_a_partition_it_does_not_own(cluster: ClusterHandle) -> None:
    _, group, members = new_group(cluster, "owner", 2, members=2)
    try:
        a, b = members
        (mine,) = a.partitions
        (theirs,) = b.partitions
        # The owners znodes record the assignment the leader computed.
        for m in members:
            for tp in m.partitions:
                data, _ = cluster.zk.get(Z.owner_path(group, *tp))
                assert PartitionOwnerZNode.decode(Z.owner_path(group, *tp), data).member_id == (
                    m.member_id
                )
        result = a.conn.commit(a.generation, a.member_id, {mine: 11, theirs: 12})
        assert result == {mine: NONE, theirs: ILLEGAL_GENERATION}
        _, found = a.conn.fetch([mine, theirs])
        assert {tp: v[0] for tp, v in found.items()} == {mine: 11, theirs: NO_OFFSET}
        assert cluster.zk.exists(Z.offset_path(group, *theirs)) is None
        # B commits its own partition in the same generation.
        assert b.conn.commit(b.generation, b.member_id, {theirs: 13}) == {theirs: NONE}
    finally:
        for m in members:
            m.conn.close()


# -- JoinGroup validation ------------------------------------------------------------------------


def test_join_with_a_foreign_protocol_type_or_no_protocols(cluster: ClusterHandle) -> None:
    group = _name("protocols")
    conn = connect(cluster, group)
    try:
        for version in (3, JOIN_V):
            resp = conn.join(protocol_type="foo", version=version)
            assert resp.error_code == INCONSISTENT_GROUP_PROTOCOL, (version, resp)
            assert resp.generation_id == -1
            resp = conn.join(protocols=[], version=version)
            assert resp.error_code == INCONSISTENT_GROUP_PROTOCOL, (version, resp)
        # Refused joins leave nothing behind in ZooKeeper.
        assert cluster.zk.exists(Z.group_path(group)) is None
        assert conn.describe().group_state == "Dead"
    finally:
        conn.close()


def test_session_timeout_outside_the_broker_limits(cluster: ClusterHandle) -> None:
    group = _name("session")
    conn = connect(cluster, group)
    try:
        for timeout_ms in (-1, 0, 5_999, 1_800_001, 2**31 - 1):
            resp = conn.join(session_timeout_ms=timeout_ms)
            assert resp.error_code == INVALID_SESSION_TIMEOUT, (timeout_ms, resp)
        # The limits themselves are accepted: the join goes on to ask for a member id.
        for timeout_ms in (6_000, 1_800_000):
            assert conn.join(session_timeout_ms=timeout_ms).error_code == MEMBER_ID_REQUIRED
    finally:
        conn.close()


def test_member_id_required_round_trip(cluster: ClusterHandle) -> None:
    for version in (4, 5, 6, 7):
        group = _name(f"member-id-v{version}")
        conn = connect(cluster, group)
        try:
            first = conn.join("", version=version)
            assert first.error_code == MEMBER_ID_REQUIRED, first
            assert first.member_id and first.generation_id == -1
            # An id the coordinator never handed out is not taken.
            assert conn.join("made-up-id", version=version).error_code == UNKNOWN_MEMBER_ID
            joined = conn.join(first.member_id, version=version)
            assert joined.error_code == NONE, joined
            assert joined.member_id == first.member_id == joined.leader
            assert joined.generation_id >= 1
            assert conn.leave(first.member_id) == (NONE, [NONE])
        finally:
            conn.close()
    # Before v4 a new member gets its id and its generation in one round trip.
    conn = connect(cluster, _name("member-id-v3"))
    try:
        joined = conn.join("", version=3)
        assert joined.error_code == NONE and joined.member_id and joined.generation_id >= 1
        assert conn.leave(joined.member_id) == (NONE, [NONE])
    finally:
        conn.close()


def test_a_v0_member_has_its_session_timeout_to_sync(cluster: ClusterHandle) -> None:
    """JoinGroup v0 carries no rebalance timeout: Kafka gives the member its session timeout to
    send SyncGroup. (Taking the absent field's -1 instead dropped it at the next sweep.)"""
    topic, conn = empty_group(cluster, "join-v0", 1)
    try:
        joined = conn.join("", topics=(topic,), version=0)
        assert joined.error_code == NONE and joined.member_id == joined.leader, joined
        time.sleep(1.0)  # several of the coordinator's sweeps, well within the session timeout
        plan = {joined.member_id: assignment([(topic, 0)])}
        synced = conn.sync(joined.generation_id, joined.member_id, plan)
        assert synced.error_code == NONE, synced
        assert decode_assignment(bytes(synced.assignment)) == {(topic, 0)}
    finally:
        conn.close()


# -- group ids and coordinators ------------------------------------------------------------------

INVALID_GROUP_IDS = ["", "a/b", "/", ".", "..", "tab\there"]


def test_invalid_group_ids_are_refused_by_every_group_api(cluster: ClusterHandle) -> None:
    address = cluster.broker_address(cluster.broker_ids()[0])
    topic = _name("gbad-ids")
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    for group in INVALID_GROUP_IDS:
        conn = GroupConn(address, group)
        try:
            assert conn.join("").error_code == INVALID_GROUP_ID, group
            assert conn.join("m").error_code == INVALID_GROUP_ID, group
            assert conn.sync(1, "m").error_code == INVALID_GROUP_ID, group
            assert conn.heartbeat(1, "m") == INVALID_GROUP_ID, group
            assert conn.leave("m")[0] == INVALID_GROUP_ID, group
            assert conn.commit(-1, "", {(topic, 0): 1}) == {(topic, 0): INVALID_GROUP_ID}, group
            assert conn.fetch([(topic, 0)])[0] == INVALID_GROUP_ID, group
            assert conn.describe().error_code == INVALID_GROUP_ID, group
            assert conn.delete() == INVALID_GROUP_ID, group
        finally:
            conn.close()
    assert cluster.zk.exists(Z.group_path("a")) is None


def test_brokers_other_than_the_coordinator_answer_not_coordinator(
    cluster: ClusterHandle,
) -> None:
    topic, group, (member,) = new_group(cluster, "claimed", 1)
    coordinator = coordinator_id(cluster, group)
    unclaimed = _name("unclaimed")
    others = [b for b in cluster.broker_ids() if b != coordinator]
    assert others
    try:
        for broker in others:
            conn = GroupConn(cluster.broker_address(broker), group)
            try:
                gen, mid = member.generation, member.member_id
                assert conn.join("").error_code == NOT_COORDINATOR
                assert conn.join(mid).error_code == NOT_COORDINATOR
                assert conn.sync(gen, mid).error_code == NOT_COORDINATOR
                assert conn.heartbeat(gen, mid) == NOT_COORDINATOR
                assert conn.commit(gen, mid, {(topic, 0): 1}) == {(topic, 0): NOT_COORDINATOR}
                assert conn.fetch([(topic, 0)])[0] == NOT_COORDINATOR
                assert conn.describe().error_code == NOT_COORDINATOR
                assert conn.delete() == NOT_COORDINATOR
                assert conn.leave(mid)[0] == NOT_COORDINATOR
            finally:
                conn.close()
        # A group nobody has claimed yet is refused by all but its designated coordinator.
        designated = coordinator_id(cluster, unclaimed)
        for broker in cluster.broker_ids():
            if broker == designated:
                continue
            conn = GroupConn(cluster.broker_address(broker), unclaimed)
            try:
                assert conn.join("").error_code == NOT_COORDINATOR
                assert conn.commit(-1, "", {(topic, 0): 1}) == {(topic, 0): NOT_COORDINATOR}
                assert conn.fetch([(topic, 0)])[0] == NOT_COORDINATOR
            finally:
                conn.close()
        assert cluster.zk.exists(Z.group_path(unclaimed)) is None
        # The member at the real coordinator noticed nothing.
        assert member.conn.heartbeat(member.generation, member.member_id) == NONE
        assert member.conn.commit(member.generation, member.member_id, {(topic, 0): 2}) == {
            (topic, 0): NONE
        }
    finally:
        member.conn.close()


# -- DeleteGroups, DescribeGroups, OffsetFetch of unknown groups ---------------------------------


def test_delete_groups_refuses_non_empty_and_unknown_groups(cluster: ClusterHandle) -> None:
    topic, group, (member,) = new_group(cluster, "delete", 1)
    unknown = connect(cluster, _name("no-such-group"))
    try:
        assert unknown.delete() == GROUP_ID_NOT_FOUND
        assert member.conn.delete() == NON_EMPTY_GROUP
        assert member.conn.heartbeat(member.generation, member.member_id) == NONE
        assert member.conn.commit(member.generation, member.member_id, {(topic, 0): 3}) == {
            (topic, 0): NONE
        }
        assert member.conn.leave(member.member_id) == (NONE, [NONE])
        assert member.conn.delete() == NONE
        assert cluster.zk.exists(Z.group_path(group)) is None
        assert member.conn.fetch([(topic, 0)]) == (NONE, {(topic, 0): (NO_OFFSET, "", NONE)})
        assert member.conn.describe().group_state == "Dead"
        assert member.conn.delete() == GROUP_ID_NOT_FOUND
    finally:
        unknown.close()
        member.conn.close()


def test_unknown_groups_describe_as_dead_and_have_no_offsets(cluster: ClusterHandle) -> None:
    topic, conn = empty_group(cluster, "nothing", 2)
    group = conn.group
    try:
        described = conn.describe()
        assert (described.error_code, described.group_id, described.group_state) == (
            NONE,
            group,
            "Dead",
        )
        assert list(described.members) == []
        top, found = conn.fetch([(topic, 0), (topic, 1)])
        assert top == NONE
        assert found == {(topic, p): (NO_OFFSET, "", NONE) for p in range(2)}
        assert cluster.zk.exists(Z.group_path(group)) is None
    finally:
        conn.close()


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5])
def test_describe_groups_at_every_version(cluster: ClusterHandle, version: int) -> None:
    _, _, (member,) = new_group(cluster, "describe", 2)
    unknown = connect(cluster, _name("describe-unknown"))
    try:
        live = member.conn.describe_at(version)
        assert (live.error_code, live.group_state, live.protocol_type, live.protocol_data) == (
            NONE,
            "Stable",
            "consumer",
            "range",
        )
        assert [(m.member_id, m.client_id) for m in live.members] == [
            (member.member_id, "pafka-tests")
        ]
        assert decode_assignment(bytes(live.members[0].member_assignment)) == member.partitions
        dead = unknown.describe_at(version)
        assert (dead.error_code, dead.group_state, list(dead.members)) == (NONE, "Dead", [])
    finally:
        member.conn.close()
        unknown.close()


# -- OffsetCommit validation ---------------------------------------------------------------------


def test_commit_to_an_unknown_topic_or_partition(cluster: ClusterHandle) -> None:
    topic, conn = empty_group(cluster, "unknown-topic", 1)
    missing = _name("no-such-topic")
    try:
        result = conn.commit(-1, "", {(topic, 0): 5, (topic, 99): 1, (missing, 0): 1})
        assert result == {
            (topic, 0): NONE,
            (topic, 99): UNKNOWN_TOPIC_OR_PARTITION,
            (missing, 0): UNKNOWN_TOPIC_OR_PARTITION,
        }
        _, found = conn.fetch([(topic, 0), (topic, 99), (missing, 0)])
        assert {tp: v[0] for tp, v in found.items()} == {
            (topic, 0): 5,
            (topic, 99): NO_OFFSET,
            (missing, 0): NO_OFFSET,
        }
    finally:
        conn.close()


def test_offset_metadata_over_the_limit(cluster: ClusterHandle) -> None:
    topic, conn = empty_group(cluster, "metadata", 2)
    try:
        assert conn.commit(-1, "", {(topic, 0): 1}, "x" * 4097) == {
            (topic, 0): OFFSET_METADATA_TOO_LARGE
        }
        assert conn.commit(-1, "", {(topic, 1): 2}, "y" * 4096) == {(topic, 1): NONE}
        _, found = conn.fetch([(topic, 0), (topic, 1)])
        assert found == {(topic, 0): (NO_OFFSET, "", NONE), (topic, 1): (2, "y" * 4096, NONE)}
    finally:
        conn.close()


# -- fuzzed group payloads -----------------------------------------------------------------------

# Well-formed consumer-protocol structures with arbitrary contents, besides arbitrary bytes.
_topic_names = st.text(max_size=12)
_partition_ids = st.lists(st.integers(min_value=-(2**31), max_value=2**31 - 1), max_size=4)
_LEGAL_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")


def _names_only_legal_topics(data: bytes) -> bool:
    """False when ``data`` decodes (as the broker decodes it) to an assignment naming a topic
    Kafka would not allow; those have their own test, below."""
    try:
        decoded = pafka_decode_assignment(data)
    except Exception:
        return True
    return all(_LEGAL_TOPIC.fullmatch(t) and t not in (".", "..") for t, _ in decoded.partitions)


_subscriptions = st.one_of(
    st.binary(max_size=256),
    st.builds(
        lambda topics, user_data: bytes(
            ConsumerProtocolSubscription(version=0, topics=topics, user_data=user_data).encode()
        ),
        st.lists(_topic_names, max_size=4),
        st.none() | st.binary(max_size=16),
    ),
)
_assignments = st.one_of(
    st.binary(max_size=256),
    st.builds(
        lambda parts, user_data: bytes(
            ConsumerProtocolAssignment(
                version=0, assigned_partitions=parts, user_data=user_data
            ).encode()
        ),
        st.lists(st.tuples(_topic_names, _partition_ids), max_size=4),
        st.none() | st.binary(max_size=16),
    ),
)


@pytest.fixture(scope="module")
def fuzz_topic(cluster: ClusterHandle) -> str:
    topic = _name("gbad-fuzz")
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    return topic


def _still_serving(conn: GroupConn, topic: str) -> None:
    """The broker answers normal requests after the fuzzed one."""
    assert conn.metadata().brokers
    top, found = conn.fetch([(topic, 0)])
    assert (top, found[(topic, 0)][2]) == (NONE, NONE)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(metadata=_subscriptions)
def test_fuzzed_subscriptions_never_crash_the_coordinator(
    cluster: ClusterHandle, fuzz_topic: str, metadata: bytes
) -> None:
    topic = fuzz_topic
    conn = connect(cluster, "fuzz-subscription")
    try:
        resp = conn.join("", protocols=[("range", metadata)], version=3)
        assert resp.error_code in (NONE, INCONSISTENT_GROUP_PROTOCOL), resp
        if resp.error_code == NONE:
            assert conn.leave(resp.member_id) == (NONE, [NONE])
        _still_serving(conn, topic)
    finally:
        conn.close()


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=_assignments)
def test_fuzzed_assignments_never_crash_the_coordinator(
    cluster: ClusterHandle, fuzz_topic: str, data: bytes
) -> None:
    assume(_names_only_legal_topics(data))
    topic = fuzz_topic
    conn = connect(cluster, "fuzz-assignment")
    try:
        joined = conn.join("", topics=(topic,), version=3)
        assert joined.error_code == NONE, joined
        member = joined.member_id
        synced = conn.sync(joined.generation_id, member, {member: data})
        assert synced.error_code in (NONE, INCONSISTENT_GROUP_PROTOCOL), synced
        assert conn.leave(member) == (NONE, [NONE])
        _still_serving(conn, topic)
    finally:
        conn.close()


@pytest.mark.parametrize("topic", [".", "..", "\x00", "\x1b"])
def test_assignment_naming_a_topic_that_cannot_be_a_znode(
    cluster: ClusterHandle, topic: str
) -> None:
    conn = connect(cluster, _name("illegal-assignment"))
    try:
        joined = conn.join("", version=3)
        assert joined.error_code == NONE, joined
        member = joined.member_id
        data = assignment([(topic, 0)])
        synced = conn.sync(joined.generation_id, member, {member: data})
        assert (synced.error_code, bytes(synced.assignment)) == (NONE, data)
        assert conn.leave(member) == (NONE, [NONE])
    finally:
        conn.close()
