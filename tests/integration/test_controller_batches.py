"""The controller's batched ZooKeeper work against a real ZooKeeper, the controller running in
this process: thousands of partitions and ISR notifications written by hand, brokers that are
ZooKeeper sessions of the test (their control requests go nowhere)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from pafka.control.messages import LeaderAndIsr, StopReplica, UpdateMetadata
from pafka.local.zookeeper import ZooKeeperServer
from pafka.zk.client import ZkClient, ensure_roots
from pafka.zk.znodes import (
    ISR_CHANGE_NOTIFICATION,
    ControllerEpochZNode,
    DeleteTopicZNode,
    PartitionState,
    TopicConfigZNode,
    TopicZNode,
)
from services.controller.channel import Message
from services.controller.context import ControllerContext
from services.controller.controller import Controller
from services.controller.fencing import Epoch
from services.controller.partitions import PartitionManager
from services.controller.settings import ControllerSettings
from tests.integration.controller_znodes import (
    create_notifications,
    create_topics,
    register_brokers,
)


class World:
    """A ZooKeeper chroot of one test, with one session per broker."""

    def __init__(self, zookeeper: ZooKeeperServer) -> None:
        root = KazooClient(hosts=zookeeper.connect_string)
        root.start(timeout=15)
        chroot = f"/test-{uuid.uuid4().hex[:8]}"
        root.ensure_path(chroot)
        root.stop()
        self.connect = zookeeper.connect_string + chroot
        self.zk = self.session()
        ensure_roots(self.zk)
        # Epoch 1 at version 0: what the in-process managers are fenced by.
        self.zk.create(ControllerEpochZNode.path(), ControllerEpochZNode.encode(1))
        self.brokers = {b: self.session() for b in (1, 2, 3)}
        for b, session in self.brokers.items():
            register_brokers(session, [b])

    def session(self) -> KazooClient:
        client = KazooClient(hosts=self.connect)
        client.start(timeout=15)
        return client

    def kill(self, broker_id: int) -> None:
        """The broker's session ends; its registration goes with it."""
        session = self.brokers.pop(broker_id)
        session.stop()
        session.close()

    def state(self, tp: tuple[str, int]) -> tuple[PartitionState, int]:
        data, stat = self.zk.get(PartitionState.path(*tp))
        return PartitionState.decode(tp[0], tp[1], data), stat.version

    def zxid(self) -> int:
        """The id of a new write (a marker created, then deleted: one more write)."""
        path = self.zk.create("/marker-", b"", sequence=True)
        zxid = int(self.zk.exists(path).czxid)
        self.zk.delete(path)
        return zxid

    def close(self) -> None:
        for session in [self.zk, *self.brokers.values()]:
            session.stop()
            session.close()


@pytest.fixture
def world(zookeeper: ZooKeeperServer) -> Iterator[World]:
    w = World(zookeeper)
    yield w
    w.close()


Sent = list[tuple[int, Message]]


async def manager_of(world: World, sent: Sent) -> tuple[ZkClient, PartitionManager]:
    client = ZkClient(world.connect, session_timeout_ms=6000, name="test-controller")
    await client.start()
    manager = PartitionManager(
        client, 1, Epoch(1, 0), ControllerContext(epoch=1), lambda b, m: sent.append((b, m))
    )
    await manager.load()
    return client, manager


def snapshot(ctx: ControllerContext) -> dict[str, Any]:
    return {
        "brokers": ctx.brokers,
        "broker_epochs": ctx.broker_epochs,
        "topic_ids": ctx.topic_ids,
        "partitions": {
            tp: (e.replicas, e.state, e.zk_version, e.phase) for tp, e in ctx.partitions.items()
        },
        "replica_states": ctx.replica_states,
    }


def test_failover_loads_the_context_the_writes_left_and_one_request_per_broker(
    world: World,
) -> None:
    created = create_topics(world.zk, 12, 250, [1, 2, 3])

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], Sent]:
        sent: Sent = []
        client, manager = await manager_of(world, sent)
        sent.clear()
        world.kill(3)
        await manager.on_brokers({1, 2})
        after_failure = list(sent)
        fresh_client, fresh = await manager_of(world, [])
        await asyncio.gather(client.close(), fresh_client.close())
        return snapshot(manager.ctx), snapshot(fresh.ctx), after_failure

    kept, loaded, sent = asyncio.run(scenario())
    assert kept == loaded
    assert len(kept["partitions"]) == len(created) == 3000
    led_by_3 = [tp for tp in created if tp[1] % 3 == 2]
    for tp in led_by_3:
        state, _ = world.state(tp)
        assert state.leader in (1, 2) and 3 not in state.isr
    # 3,000 partitions lost a replica: one LeaderAndIsr to each surviving replica's broker and
    # one UpdateMetadata to each live broker, not one per partition.
    kinds = sorted((b, type(m).__name__) for b, m in sent)
    assert kinds == [(b, kind) for b in (1, 2) for kind in ("LeaderAndIsr", "UpdateMetadata")]
    for _, message in sent:
        assert isinstance(message, LeaderAndIsr | UpdateMetadata)
        assert len(message.partitions) == 3000


def test_isr_notifications_are_read_once_and_deleted_in_multis(world: World) -> None:
    created = create_topics(world.zk, 3, 1000, [1, 2, 3])
    # A leader shrank the ISR of every tenth partition before notifying.
    shrunk = created[::10]
    for tp in shrunk:
        state, version = world.state(tp)
        smaller = PartitionState(state.leader, state.leader_epoch, state.isr[:2], 1)
        world.zk.set(PartitionState.path(*tp), smaller.encode(), version=version)
    # Each partition named by exactly one notification; unknown partitions are ignored.
    others = [[tp] for tp in created if tp not in set(shrunk)]
    batches = [[tp, ("unknown-topic", 0)] for tp in shrunk] + others
    create_notifications(world.zk, batches)
    assert len(batches) == 3000

    async def scenario() -> tuple[list[bool], Sent, PartitionManager, int]:
        sent: Sent = []
        client, manager = await manager_of(world, sent)
        before = world.zxid()
        passes = [await manager.on_isr_notifications(1000) for _ in range(3)]
        writes = world.zxid() - before - 2  # less the first marker deletion
        passes.append(await manager.on_isr_notifications(1000))
        await client.close()
        return passes, sent, manager, writes

    passes, sent, manager, writes = asyncio.run(scenario())
    assert passes == [True, True, False, False]
    # Three passes of 1,000 deletions, each one transaction (one zxid), nothing else written.
    assert writes == 3
    assert world.zk.get_children(ISR_CHANGE_NOTIFICATION) == []
    for tp in shrunk:
        assert manager.ctx.partitions[tp].state == world.state(tp)[0]
        assert manager.ctx.partitions[tp].zk_version == world.state(tp)[1]
    told = [tp for _, m in sent if isinstance(m, UpdateMetadata) for tp in _names(m)]
    assert len(told) == len(set(told)) * 3  # each partition once per broker
    assert set(told) == set(created)


def _names(message: UpdateMetadata) -> list[tuple[str, int]]:
    return [(p.topic, p.partition) for p in message.partitions]


def test_a_broker_failure_is_handled_before_pending_isr_notifications(world: World) -> None:
    created = create_topics(world.zk, 3, 100, [1, 2, 3])
    led_by_3 = [tp for tp in created if tp[1] % 3 == 2]
    settings = ControllerSettings(
        controller_id=1, zookeeper=world.connect, isr_notifications_per_pass=100
    )

    async def scenario() -> list[int]:
        controller = Controller(settings)
        pending_when_told: list[int] = []
        send = controller.send

        def recording_send(broker_id: int, message: Message) -> None:
            # Runs inside the controller's event task: no ISR pass can run meanwhile.
            context = controller.context
            if isinstance(message, LeaderAndIsr) and context and 3 not in context.brokers:
                pending_when_told.append(len(world.zk.get_children(ISR_CHANGE_NOTIFICATION)))
            send(broker_id, message)

        controller.send = recording_send  # type: ignore[method-assign]
        await controller.start()
        try:
            # Loaded, and the watch events of the start (from before activation) drained.
            while controller.status()["partitions"] != len(created) or controller.pending_events:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.2)
            # With the event loop held, thousands of notifications pile up and broker 3 dies:
            # both watches fire before the controller can run either event.
            create_notifications(world.zk, [[tp] for tp in created] * 10)
            world.kill(3)
            time.sleep(2.0)
            while any(world.state(tp)[0].leader == 3 for tp in led_by_3):
                await asyncio.sleep(0.05)
            while world.zk.get_children(ISR_CHANGE_NOTIFICATION):
                await asyncio.sleep(0.05)
        finally:
            await controller.stop()
        return pending_when_told

    pending_when_told = asyncio.run(scenario())
    # The new leaders went out before any notification was handled, though the ISR watch
    # fired first (a FIFO queue would have run one pass of 100 before them).
    assert pending_when_told and pending_when_told[0] == 3000


def test_a_state_changed_under_the_controller_holds_back_only_itself(world: World) -> None:
    created = create_topics(world.zk, 2, 1000, [1, 2, 3])
    led_by_3 = [tp for tp in created if tp[1] % 3 == 2]
    busy = led_by_3[100]

    async def scenario() -> PartitionManager:
        client, manager = await manager_of(world, [])
        # The leader shrank this ISR after the controller read it.
        state, version = world.state(busy)
        shrunk = PartitionState(state.leader, state.leader_epoch, (3, 1), 1)
        world.zk.set(PartitionState.path(*busy), shrunk.encode(), version=version)
        world.kill(3)
        await manager.on_brokers({1, 2})
        await client.close()
        return manager

    manager = asyncio.run(scenario())
    for tp in led_by_3:
        state, version = world.state(tp)
        assert state.leader in (1, 2) and 3 not in state.isr
        assert manager.ctx.partitions[tp].state == state
        assert manager.ctx.partitions[tp].zk_version == version
    # Decided again on what the leader wrote: only broker 1 was left in sync.
    assert world.state(busy)[0].isr == (1,)


def test_topics_deleted_together_are_one_request_per_broker_and_leave_nothing(
    world: World,
) -> None:
    created = create_topics(world.zk, 150, 4, [1, 2, 3], prefix="gone")
    kept = create_topics(world.zk, 2, 4, [1, 2, 3], prefix="kept")
    doomed = sorted({topic for topic, _ in created})
    world.zk.create(TopicConfigZNode.path(doomed[0]), b'{"version":1,"config":{}}')
    for topic in doomed:
        world.zk.create(DeleteTopicZNode.path(topic), makepath=True)

    async def scenario() -> tuple[ControllerContext, ControllerContext, Sent]:
        sent: Sent = []
        client, manager = await manager_of(world, sent)
        sent.clear()
        await manager.on_delete_requests(doomed)
        fresh_client, fresh = await manager_of(world, [])
        await asyncio.gather(client.close(), fresh_client.close())
        return manager.ctx, fresh.ctx, sent

    ctx, loaded, sent = asyncio.run(scenario())
    for topic in doomed:
        for path in (
            TopicZNode.path(topic),
            TopicConfigZNode.path(topic),
            DeleteTopicZNode.path(topic),
        ):
            assert world.zk.exists(path) is None, path
    assert sorted(ctx.partitions) == sorted(loaded.partitions) == sorted(kept)
    assert not ctx.deleting and not any(t.startswith("gone") for t, _, _ in ctx.replica_states)
    # 150 topics on three brokers: one StopReplica and one UpdateMetadata to each broker.
    kinds = sorted((b, type(m).__name__) for b, m in sent)
    assert kinds == [(b, kind) for b in (1, 2, 3) for kind in ("StopReplica", "UpdateMetadata")]
    for _, message in sent:
        if isinstance(message, StopReplica):
            assert message.delete and sorted(message.partitions) == sorted(created)
        else:
            assert isinstance(message, UpdateMetadata)
            assert sorted(message.deleted_topics) == doomed
