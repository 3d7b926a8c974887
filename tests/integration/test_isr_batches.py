"""A leader's ISR changes go to ZooKeeper in batches: conditional writes, one notification."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from pafka.zk.client import ensure_roots
from pafka.zk.znodes import (
    ISR_CHANGE_NOTIFICATION,
    IsrChangeNotificationZNode,
    PartitionState,
    TopicPartitionsPayload,
)
from services.broker.isr import MAX_PARTITIONS_PER_NOTIFICATION, IsrChange, write_isr_batch


@pytest.fixture
def zk(zk_connect: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zk_connect)
    client.start(timeout=10)
    ensure_roots(client)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def _create_states(zk: KazooClient, topic: str, count: int) -> None:
    for p in range(count):
        state = PartitionState(leader=1, leader_epoch=3, isr=(1, 2, 3), controller_epoch=1)
        zk.create(PartitionState.path(topic, p), state.encode(), makepath=True)


def _change(topic: str, p: int, isr: tuple[int, ...], version: int = 0) -> IsrChange:
    return IsrChange(topic, p, 1, 3, 1, version, isr, "shrink")


def _notified(zk: KazooClient) -> list[tuple[str, int]]:
    found = []
    for child in sorted(zk.get_children(ISR_CHANGE_NOTIFICATION)):
        path = IsrChangeNotificationZNode.path(child)
        found.extend(TopicPartitionsPayload.decode(zk.get(path)[0], path).partitions)
    return found


def test_a_batch_writes_every_isr_and_one_notification_names_them_all(zk: KazooClient) -> None:
    _create_states(zk, "t", 50)
    written = write_isr_batch(zk, [_change("t", p, (1, 2)) for p in range(50)])
    assert len(written) == 50 and all(w.adopt and w.zk_version == 1 for w in written)
    for p in range(50):
        data, stat = zk.get(PartitionState.path("t", p))
        assert PartitionState.decode("t", p, data).isr == (1, 2) and stat.version == 1
    assert len(zk.get_children(ISR_CHANGE_NOTIFICATION)) == 1
    assert sorted(_notified(zk)) == [("t", p) for p in range(50)]


def test_a_stale_version_adopts_what_zookeeper_holds_and_is_not_notified(zk: KazooClient) -> None:
    _create_states(zk, "t", 2)
    newer = PartitionState(leader=1, leader_epoch=3, isr=(1, 3), controller_epoch=1)
    zk.set(PartitionState.path("t", 1), newer.encode())
    batch = [_change("t", 0, (1,)), _change("t", 1, (1,))]
    written = {w.change.index: w for w in write_isr_batch(zk, batch)}
    assert (written[0].isr, written[0].zk_version, written[0].adopt) == ((1,), 1, True)
    assert (written[1].isr, written[1].zk_version, written[1].adopt) == ((1, 3), 1, True)
    assert _notified(zk) == [("t", 0)]


def test_a_new_leadership_term_in_zookeeper_is_not_adopted(zk: KazooClient) -> None:
    _create_states(zk, "t", 1)
    moved = PartitionState(leader=2, leader_epoch=4, isr=(2, 3), controller_epoch=1)
    zk.set(PartitionState.path("t", 0), moved.encode())
    (written,) = write_isr_batch(zk, [_change("t", 0, (1,))])
    assert not written.adopt
    assert zk.get_children(ISR_CHANGE_NOTIFICATION) == []


def test_a_partition_whose_state_vanished_is_skipped(zk: KazooClient) -> None:
    _create_states(zk, "t", 1)
    written = write_isr_batch(zk, [_change("t", 0, (1,)), _change("deleted", 0, (1,))])
    assert [w.change.topic for w in written] == ["t"]


def test_a_very_large_batch_is_split_over_several_notifications(zk: KazooClient) -> None:
    count = MAX_PARTITIONS_PER_NOTIFICATION + 10
    state = PartitionState(leader=1, leader_epoch=3, isr=(1, 2, 3), controller_epoch=1)
    pending = [
        zk.create_async(PartitionState.path("big", p), state.encode(), makepath=True)
        for p in range(count)
    ]
    for result in pending:
        result.get()
    write_isr_batch(zk, [_change("big", p, (1, 2)) for p in range(count)])
    assert len(zk.get_children(ISR_CHANGE_NOTIFICATION)) == 2
    assert sorted(_notified(zk)) == [("big", p) for p in range(count)]
