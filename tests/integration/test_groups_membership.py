"""Group membership on real brokers, driven by raw protocol members whose every step is visible:
static membership (KIP-345) and the seeds' rebalance triggers (a subscribed topic gains
partitions; a broker change moves partition leadership)."""

from __future__ import annotations

import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka.protocol.consumer import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse

from pafka.admin import topics as admin
from pafka.groups.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from pafka.zk.znodes import ConsumerGroupZNodes, GroupCoordinatorZNode, PartitionOwnerZNode
from tests.integration.conftest import TEST_BROKER_ENV, ClusterHandle, own_cluster
from tests.integration.wire import request_once, roundtrip

REBALANCE_IN_PROGRESS = 27
FENCED_INSTANCE_ID = 82
JOIN_VERSION = 5
SYNC_VERSION = 3
HEARTBEAT_VERSION = 3


class RawMember:
    """One group member speaking the protocol by hand over its own connection."""

    def __init__(self, cluster: ClusterHandle, group: str, topics: list[str], instance: str):
        self.cluster = cluster
        self.group = group
        self.metadata = encode_subscription(Subscription(tuple(topics)))
        self.instance = instance
        self.member_id = ""
        self.generation = -1
        self.leader = ""
        self.members: list[str] = []
        self._cid = 0
        self.sock = socket.create_connection(self._coordinator(), timeout=30)

    def _coordinator(self) -> tuple[str, int]:
        request = FindCoordinatorRequest[1](key=self.group, key_type=0)
        host, port = self.cluster.bootstrap.split(",")[0].split(":")
        response: Any = request_once((host, int(port)), request, FindCoordinatorResponse, 1)
        assert response.error_code == 0, response
        return response.host, response.port

    def _call(self, request: Any, response_cls: Any, version: int) -> Any:
        self._cid += 1
        return roundtrip(self.sock, request, response_cls, version, self._cid)

    def join(self) -> Any:
        cls = JoinGroupRequest[JOIN_VERSION]
        request = cls(
            group_id=self.group,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=20_000,
            member_id=self.member_id,
            group_instance_id=self.instance,
            protocol_type="consumer",
            protocols=[cls.JoinGroupRequestProtocol(name="range", metadata=self.metadata)],
        )
        response = self._call(request, JoinGroupResponse, JOIN_VERSION)
        assert response.error_code == 0, response
        self.member_id, self.generation = response.member_id, response.generation_id
        self.leader = response.leader
        self.members = [m.member_id for m in response.members]
        return response

    def sync(self, assignments: dict[str, set[tuple[str, int]]] | None = None) -> set[Any]:
        cls = SyncGroupRequest[SYNC_VERSION]
        entries = [
            cls.SyncGroupRequestAssignment(
                member_id=m, assignment=encode_assignment(Assignment(frozenset(tps)))
            )
            for m, tps in (assignments or {}).items()
        ]
        request = cls(
            group_id=self.group,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.instance,
            assignments=entries,
        )
        response = self._call(request, SyncGroupResponse, SYNC_VERSION)
        assert response.error_code == 0, response
        return set(decode_assignment(bytes(response.assignment)).partitions)

    def heartbeat(self, member_id: str | None = None) -> int:
        request = HeartbeatRequest[HEARTBEAT_VERSION](
            group_id=self.group,
            generation_id=self.generation,
            member_id=member_id or self.member_id,
            group_instance_id=self.instance,
        )
        return int(self._call(request, HeartbeatResponse, HEARTBEAT_VERSION).error_code)

    def close(self) -> None:
        self.sock.close()


def _wait(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(0.1)


def _owners(cluster: ClusterHandle, group: str, topic: str) -> dict[int, str]:
    root = ConsumerGroupZNodes.owners_topic_path(group, topic)
    found = {}
    for child in cluster.zk.get_children(root) if cluster.zk.exists(root) else []:
        path = f"{root}/{child}"
        found[int(child)] = PartitionOwnerZNode.decode(path, cluster.zk.get(path)[0]).member_id
    return found


@pytest.fixture(scope="module")
def isolated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    """A cluster of this module's own: restarting one of its brokers must not leave the shared
    cluster catching up under other modules' tests."""
    with own_cluster(
        tmp_path_factory, "membership", brokers=3, controllers=1, broker_env=TEST_BROKER_ENV
    ) as handle:
        yield handle


@pytest.fixture
def names() -> Iterator[tuple[str, str]]:
    suffix = uuid.uuid4().hex[:8]
    yield f"members-{suffix}", f"g-{suffix}"


def test_restarted_static_member_takes_its_place_without_a_rebalance(
    cluster: ClusterHandle, names: tuple[str, str]
) -> None:
    topic, group = names
    cluster.create_topic(topic, partitions=4, replication_factor=1)
    first = RawMember(cluster, group, [topic], "first")
    first.join()
    first.sync({first.member_id: {(topic, p) for p in range(4)}})
    # A second static member joins: the first learns of the rebalance and rejoins too.
    second = RawMember(cluster, group, [topic], "second")
    joined = threading.Thread(target=second.join)
    joined.start()
    _wait(lambda: first.heartbeat() == REBALANCE_IN_PROGRESS, 15, "the rebalance")
    first.join()
    joined.join(timeout=30)
    assert first.leader == first.member_id and second.generation == first.generation
    plan = {first.member_id: {(topic, 0), (topic, 1)}, second.member_id: {(topic, 2), (topic, 3)}}
    syncing = threading.Thread(target=second.sync)
    syncing.start()
    assert first.sync(plan) == plan[first.member_id]
    syncing.join(timeout=30)
    generation, old_id = first.generation, second.member_id
    assert _owners(cluster, group, topic) == {0: first.member_id, 1: first.member_id} | {
        2: old_id,
        3: old_id,
    }

    # The second member "restarts": same instance id, no member id, same subscription.
    second.close()
    restarted = RawMember(cluster, group, [topic], "second")
    response = restarted.join()
    assert response.generation_id == generation, "a returning static member needs no rebalance"
    assert restarted.member_id != old_id and not response.members
    assert restarted.sync() == plan[old_id]
    assert first.heartbeat() == 0
    assert restarted.heartbeat(old_id) == FENCED_INSTANCE_ID
    assert _owners(cluster, group, topic)[2] == restarted.member_id
    ids = set(cluster.zk.get_children(ConsumerGroupZNodes.ids_path(group)))
    assert ids == {first.member_id, restarted.member_id}
    first.close()
    restarted.close()


def _stable_single_member(cluster: ClusterHandle, topic: str, group: str, partitions: int):
    member = RawMember(cluster, group, [topic], f"only-{uuid.uuid4().hex[:6]}")
    member.join()
    member.sync({member.member_id: {(topic, p) for p in range(partitions)}})
    assert member.heartbeat() == 0
    return member


def test_a_subscribed_topic_gaining_partitions_triggers_a_rebalance(
    cluster: ClusterHandle, names: tuple[str, str]
) -> None:
    topic, group = names
    cluster.create_topic(topic, partitions=2, replication_factor=1)
    member = _stable_single_member(cluster, topic, group, 2)
    admin.add_partitions(cluster.zk, topic, 4)
    _wait(lambda: member.heartbeat() == REBALANCE_IN_PROGRESS, 20, "a rebalance")
    member.join()
    assert member.sync({member.member_id: {(topic, p) for p in range(4)}}) == {
        (topic, p) for p in range(4)
    }
    assert set(_owners(cluster, group, topic)) == {0, 1, 2, 3}
    member.close()


def test_a_broker_change_moving_leadership_triggers_a_rebalance(
    isolated: ClusterHandle, names: tuple[str, str]
) -> None:
    cluster = isolated
    topic, group = names
    cluster.create_topic(topic, partitions=3, replication_factor=2)
    member = _stable_single_member(cluster, topic, group, 3)
    data, _ = cluster.zk.get(ConsumerGroupZNodes.coordinator_path(group))
    coordinator = GroupCoordinatorZNode.decode(group, data).broker_id
    leaders = {cluster.partition_state(topic, p).leader for p in range(3)}
    victim = min(leaders - {coordinator})
    cluster.local.kill(f"broker-{victim}", signal.SIGTERM)
    try:
        _wait(lambda: member.heartbeat() == REBALANCE_IN_PROGRESS, 30, "a rebalance")
    finally:
        cluster.local.restart(f"broker-{victim}")
        cluster.wait_for_leaders(topic, 3)
    member.close()
