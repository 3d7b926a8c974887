"""Static membership (KIP-345) with a real client: a static member that closes and comes back
under the same ``group.instance.id`` gets its old assignment, and the other members keep
theirs without a revocation, whether the returning member led the group or not."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.integration.conftest import ClusterHandle

PARTITIONS = 4
SESSION_TIMEOUT_MS = 30_000


class StaticMember:
    """A confluent-kafka consumer polled in a thread, recording every assignment change."""

    def __init__(self, cluster: ClusterHandle, group: str, topic: str, instance: str) -> None:
        self.events: list[tuple[str, frozenset[int]]] = []
        self.assigned: frozenset[int] = frozenset()
        self._lock = threading.Lock()
        self.consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "group.id": group,
                "group.instance.id": instance,
                "session.timeout.ms": SESSION_TIMEOUT_MS,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _on_assign(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        with self._lock:
            self.assigned = frozenset(p.partition for p in partitions)
            self.events.append(("assign", self.assigned))

    def _on_revoke(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        with self._lock:
            self.events.append(("revoke", frozenset(p.partition for p in partitions)))
            self.assigned = frozenset()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.1)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.consumer.close()


def _wait(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.mark.parametrize("returning", ["leader", "follower"])
def test_static_member_rejoining_keeps_everyones_assignment(
    cluster: ClusterHandle, returning: str
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"static-{suffix}", f"static-g-{suffix}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=1)
    cluster.wait_for_leaders(topic, PARTITIONS)
    # The first member to join leads the group.
    first = StaticMember(cluster, group, topic, "first")
    _wait(lambda: len(first.assigned) == PARTITIONS, 30, "the first member's assignment")
    second = StaticMember(cluster, group, topic, "second")
    members = [first, second]
    try:
        _wait(
            lambda: (
                len(first.assigned) + len(second.assigned) == PARTITIONS
                and first.assigned.isdisjoint(second.assigned)
                and all(m.assigned for m in members)
            ),
            45,
            "both members' assignments",
        )
        time.sleep(1)  # let the group settle: no late revocations before the restart
        leaving, staying = (first, second) if returning == "leader" else (second, first)
        kept = staying.assigned
        theirs = leaving.assigned
        before = len(staying.events)
        leaving.close()
        members.remove(leaving)
        instance = "first" if leaving is first else "second"
        back = StaticMember(cluster, group, topic, instance)
        members.append(back)
        _wait(lambda: bool(back.assigned), 30, "the returning member's assignment")
        time.sleep(2)  # a rebalance, if one were started, would revoke within this
        assert back.assigned == theirs
        assert staying.events[before:] == [], "the staying member was disturbed"
        assert staying.assigned == kept
    finally:
        for m in members:
            m.close()
