"""The controller: election, one prioritised event queue, and the reactions to cluster changes.

Every ZooKeeper watch only enqueues an event; one task processes events one at a time, so the
controller's decisions never interleave. Events are taken by priority and fold into one
another (``event_queue``): a broker failure never waits behind ISR notifications. Only the
active controller processes events; a standby keeps its watches and drops them, and on
activation reloads everything from ZooKeeper. A controller stands only on ZooKeeper: cut off
from it (session suspended) it stops acting at once and, once reconnected, resumes only if it
still holds its term (``pafka.cluster.controller_footing``).
Decisions come from ``pafka.cluster`` (pure); this module reads state, calls them, writes the
result fenced by the controller epoch, and tells brokers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from kazoo.client import KazooClient

from pafka.cluster.controller_footing import Action, Role, Session, after_verify, on_session
from pafka.cluster.controller_footing import still_holds as term_still_held
from pafka.cluster.elect_leaders import ElectionType
from pafka.control.secret import bearer_headers
from pafka.errors import ControllerFencedError, NotControllerError, PafkaError
from pafka.zk.client import SessionEvent, ZkClient
from pafka.zk.znodes import (
    BROKER_IDS,
    BROKER_TOPICS,
    DELETE_TOPICS,
    ISR_CHANGE_NOTIFICATION,
    ControllerEpochZNode,
    ControllerZNode,
    PreferredReplicaElectionZNode,
    ReassignmentZNode,
    TopicConfigZNode,
    TopicPartitionsPayload,
    TopicZNode,
)
from services.controller.admin_api import Outcome, list_reassignments, run_elections
from services.controller.channel import BrokerChannel, Message
from services.controller.cluster_view import ClusterView
from services.controller.context import ControllerContext, TopicPartition
from services.controller.event_queue import Event, EventQueue
from services.controller.fencing import Epoch, try_elect
from services.controller.lag_history import LagHistory
from services.controller.metrics import ControllerMetrics
from services.controller.partitions import PartitionManager
from services.controller.reassignment import Reassignments
from services.controller.settings import ControllerSettings

log = logging.getLogger(__name__)

SLOW_EVENT_S = 0.5
# A paused controller whose term check failed although connected tries again after this.
VERIFY_RETRY_S = 1.0


@dataclass
class Controller:
    settings: ControllerSettings
    metrics: ControllerMetrics = field(default_factory=ControllerMetrics)

    def __post_init__(self) -> None:
        self.zk = ZkClient(
            self.settings.zookeeper,
            session_timeout_ms=self.settings.zk_session_timeout_ms,
            name=f"controller-{self.settings.controller_id}",
            security=self.settings.zk_security,
        )
        self.epoch: Epoch | None = None
        self.role = Role.STANDBY
        self.context: ControllerContext | None = None
        self.partitions: PartitionManager | None = None
        self.reassignments: Reassignments | None = None
        self.channels: dict[int, BrokerChannel] = {}
        self.generation = 0
        self.connected = False
        self._events = EventQueue()
        self._pending = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        # Every request to brokers' control APIs carries the shared secret, if one is set.
        self._http = httpx.AsyncClient(
            timeout=self.settings.request_timeout_ms / 1000,
            headers=bearer_headers(self.settings.control_secret),
        )
        self._watched_topics: set[str] = set()
        self.cluster_view = ClusterView(
            self.zk,
            interval_ms=self.settings.cluster_view_interval_ms,
            request_timeout_ms=self.settings.request_timeout_ms,
            security=self.settings.kafka_security,
            history=LagHistory(
                window_ms=self.settings.lag_history_window_ms,
                interval_ms=self.settings.lag_history_interval_ms,
            ),
        )
        self.metrics.registry.register(self.cluster_view.collector)

    @property
    def active(self) -> bool:
        return self.role is Role.ACTIVE

    @property
    def pending_events(self) -> int:
        """Events waiting for the event task (folded: at most one per kind and key)."""
        return len(self._events)

    # -- life cycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        self.zk.add_session_listener(self._on_session)
        await self.zk.start(timeout_s=30)
        self.connected = True
        self._tasks.append(asyncio.create_task(self._process_events()))
        self._tasks.append(asyncio.create_task(self._periodic_rebalance()))
        self._tasks.append(asyncio.create_task(self.cluster_view.run()))
        self.zk.watch_data(ControllerZNode.path(), self._on_controller_node)
        self.zk.watch_children(BROKER_IDS, lambda c: self._enqueue("brokers", c))
        self.zk.watch_children(BROKER_TOPICS, self._on_topics)
        self.zk.watch_children(DELETE_TOPICS, lambda c: self._enqueue("delete", c))
        # The children listed are not kept: the event reads what is pending when it runs.
        self.zk.watch_children(ISR_CHANGE_NOTIFICATION, lambda _: self._enqueue("isr"))
        self.zk.watch_data(PreferredReplicaElectionZNode.path(), self._on_preferred_request)
        self.zk.watch_data(ReassignmentZNode.path(), lambda d: self._enqueue("reassign", d))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._drop_channels()
        await self.cluster_view.close()
        await self._http.aclose()
        await self.zk.close()

    async def _enqueue(self, kind: str, payload: Any = None) -> None:
        self._events.put(Event(kind, payload, self.generation))
        self._pending.set()

    async def _on_topics(self, children: list[str]) -> None:
        for topic in children:
            if topic not in self._watched_topics:
                self._watched_topics.add(topic)
                self.zk.watch_data(TopicZNode.path(topic), self._topic_watcher(topic))
                self.zk.watch_data(TopicConfigZNode.path(topic), self._config_watcher(topic))
        await self._enqueue("topics", children)

    def _topic_watcher(self, topic: str) -> Callable[[bytes | None], Awaitable[None]]:
        async def changed(data: bytes | None) -> None:
            await self._enqueue("topic_data", (topic, data))

        return changed

    def _config_watcher(self, topic: str) -> Callable[[bytes | None], Awaitable[None]]:
        async def changed(data: bytes | None) -> None:
            if data is not None:
                await self._enqueue("topic_config", (topic, data))

        return changed

    async def _on_preferred_request(self, data: bytes | None) -> None:
        if data is not None:
            path = PreferredReplicaElectionZNode.path()
            request = TopicPartitionsPayload.decode(data, path)
            await self._enqueue("preferred", list(request.partitions))

    async def _on_controller_node(self, data: bytes | None) -> None:
        if data is None:
            await self._enqueue("elect")

    async def _on_session(self, event: SessionEvent) -> None:
        self.connected = event is SessionEvent.CONNECTED
        step = on_session(self.role, Session(event.value))
        if step.action is Action.PAUSE:
            await self._pause()
        elif step.action is Action.RESIGN:
            await self.resign("ZooKeeper session expired")
        elif step.action in (Action.ELECT, Action.VERIFY):
            # Through the event task: a check or an election never interleaves with an event.
            await self._enqueue("elect")

    # -- election --------------------------------------------------------------------------------

    async def _elect(self) -> None:
        if self.role is Role.PAUSED:
            await self._verify()
            return
        if self.role is Role.ACTIVE:
            return
        me = ControllerZNode(
            self.settings.controller_id, self.settings.advertised_host, self.settings.url
        )
        epoch = await self.zk.run(try_elect, self.zk.kazoo, me)
        if epoch is None:
            self.metrics.active.set(0)
            return
        self.epoch = epoch
        if not self.connected:
            # Elected, then cut off before acting: verified when the connection is back.
            self.role = Role.PAUSED
            return
        log.info("controller %d is active with epoch %d", self.settings.controller_id, epoch.epoch)
        self.role = Role.ACTIVE
        await self._begin_term(epoch)

    async def _begin_term(self, epoch: Epoch) -> None:
        """Act as the active controller from a full load: after an election, or on resuming a
        term whose watches may have been missed while cut off."""
        self.generation += 1
        self.metrics.active.set(1)
        self.metrics.epoch.set(epoch.epoch)
        try:
            await self._activate(epoch)
        except ControllerFencedError as exc:
            await self.resign(str(exc))

    async def _pause(self) -> None:
        """Cut off from ZooKeeper: stop acting at once, keep the epoch for the check."""
        log.warning(
            "controller %d lost its ZooKeeper connection: inactive until it is back",
            self.settings.controller_id,
        )
        self.role = Role.PAUSED
        await self._stand_down()

    async def _verify(self) -> None:
        """Back in touch with the same session: resume if the term is still ours."""
        epoch = self.epoch
        assert epoch is not None  # paused controllers keep their epoch
        try:
            owner, epoch_version = await self.zk.run(read_term, self.zk.kazoo)
        except PafkaError as exc:
            log.warning("controller term not checked yet: %s", exc)
            if self.connected:
                asyncio.get_running_loop().call_later(
                    VERIFY_RETRY_S, lambda: asyncio.ensure_future(self._enqueue("elect"))
                )
            return
        if not self.connected:
            return  # cut off again: the next CONNECTED checks again
        holds = term_still_held(
            controller_owner_session=owner,
            my_session=self.zk.session_id,
            epoch_zk_version=epoch_version,
            my_epoch_zk_version=epoch.zk_version,
        )
        step = after_verify(self.role, holds)
        if step.action is Action.RESUME:
            log.info(
                "controller %d still holds epoch %d: resuming with a full reload",
                self.settings.controller_id,
                epoch.epoch,
            )
            self.role = Role.ACTIVE
            await self._begin_term(epoch)
        elif step.action is Action.RESIGN:
            await self.resign("another controller took over while this one was cut off")

    async def _activate(self, epoch: Epoch) -> None:
        # A pause or resignation while this waits on ZooKeeper moves the generation: the rest
        # of the activation is then abandoned (a resumption starts a new one).
        generation = self.generation
        context = ControllerContext(epoch=epoch.epoch)
        self.context = context
        partitions = PartitionManager(
            self.zk,
            self.settings.controller_id,
            epoch,
            context,
            self.send,
            on_election=self.metrics.count_election,
        )
        self.partitions = partitions
        await partitions.load()
        if self.generation != generation:
            return
        for broker in context.brokers.values():
            self._channel(broker.id, broker.control_url)
        await partitions.on_startup()
        reassignments = Reassignments(partitions)
        self.reassignments = reassignments
        pending_reassignment = await self.zk.get(ReassignmentZNode.path())
        if self.generation != generation:
            return
        if pending_reassignment is not None:
            await reassignments.on_request(pending_reassignment[0])
        if self.generation != generation:
            return
        self.metrics.bind(context)
        self.cluster_view.bind(context)
        pending = await self.zk.get(PreferredReplicaElectionZNode.path())
        if pending is not None:
            await self._on_preferred_request(pending[0])

    async def resign(self, why: str) -> None:
        if self.role is Role.STANDBY:
            return
        log.warning("controller %d resigns: %s", self.settings.controller_id, why)
        self.role = Role.STANDBY
        self.epoch = None
        await self._stand_down()

    async def _stand_down(self) -> None:
        """Stop acting: no context, no channels, no cluster view; events queued so far are
        stale (the generation moves)."""
        self.context = None
        self.partitions = None
        self.reassignments = None
        self.generation += 1
        self.metrics.active.set(0)
        self.metrics.unbind()
        self.cluster_view.unbind()
        await self._drop_channels()

    async def _drop_channels(self) -> None:
        channels, self.channels = self.channels, {}
        await asyncio.gather(*(c.close() for c in channels.values()), return_exceptions=True)

    def _channel(self, broker_id: int, url: str) -> BrokerChannel:
        channel = self.channels.get(broker_id)
        if channel is None or channel.url != url.rstrip("/"):
            channel = BrokerChannel(
                broker_id,
                url,
                self._http,
                lambda: self.resign("a broker has seen a newer controller epoch"),
                network=self.settings.network,
            )
            self.channels[broker_id] = channel
        return channel

    def send(self, broker_id: int, message: Message) -> None:
        context = self.context
        if context is None or broker_id not in context.brokers:
            return
        self._channel(broker_id, context.brokers[broker_id].control_url).send(message)

    # -- the event loop --------------------------------------------------------------------------

    async def _process_events(self) -> None:
        while True:
            event = self._events.pop()
            if event is None:
                self._pending.clear()
                await self._pending.wait()
                continue
            started = time.monotonic()
            try:
                await self._process(event)
            except ControllerFencedError as exc:
                await self.resign(str(exc))
            except PafkaError as exc:
                log.error("event %s failed: %s", event.kind, exc)
            except Exception:
                log.exception("event %s failed", event.kind)
            took_s = time.monotonic() - started
            if took_s > SLOW_EVENT_S:
                # Everything queued behind it waited this long: worth seeing in the log.
                log.info("event %s took %.2f s (%d pending)", event.kind, took_s, len(self._events))

    async def _process(self, event: Event) -> None:
        if event.kind == "elect":
            await self._elect()
            return
        manager = self.partitions
        if manager is None or event.generation != self.generation:
            # Events seen before this activation are covered by the full load it did.
            if event.kind == "shutdown":
                _answer(event.payload[1], NotControllerError("the controller changed; retry"))
            elif event.kind in ("elect_leaders", "alter_reassignments"):
                waiter = event.payload[-1]
                if not waiter.done():
                    waiter.set_exception(NotControllerError("the controller changed; retry"))
            return
        if event.kind == "brokers":
            closed = await manager.on_brokers(set(int(b) for b in event.payload))
            for broker_id in closed:
                channel = self.channels.pop(broker_id, None)
                if channel is not None:
                    await channel.close()
        elif event.kind == "topics":
            await manager.on_topics(set(event.payload))
        elif event.kind == "topic_data":
            topic, data = event.payload
            if data is not None:
                await manager.on_topic_data(topic, data)
        elif event.kind == "topic_config":
            topic, data = event.payload
            await manager.on_topic_config(topic, data)
        elif event.kind == "delete":
            await manager.on_delete_requests(list(event.payload))
        elif event.kind == "isr":
            per_pass = self.settings.isr_notifications_per_pass
            if await manager.on_isr_notifications(per_pass):
                # More are pending: another pass, after anything more urgent.
                await self._enqueue("isr")
            if self.reassignments is not None:
                await self.reassignments.check()
        elif event.kind == "reassign" and self.reassignments is not None:
            await self.reassignments.on_request(event.payload)
        elif event.kind == "shutdown":
            broker_id, waiters = event.payload
            _answer(waiters, await manager.on_controlled_shutdown(broker_id))
        elif event.kind == "elect_leaders":
            kind, requested, waiter = event.payload
            await _settle(waiter, run_elections(manager, kind, requested))
        elif event.kind == "alter_reassignments" and self.reassignments is not None:
            targets, waiter = event.payload
            await _settle(waiter, self.reassignments.alter(targets))
        elif event.kind == "preferred":
            await manager.rebalance_preferred(
                self.settings.preferred_imbalance_ratio, event.payload
            )

    async def _periodic_rebalance(self) -> None:
        while True:
            await asyncio.sleep(self.settings.preferred_rebalance_interval_ms / 1000)
            if self.active:
                await self._enqueue("preferred", None)

    async def controlled_shutdown(self, broker_id: int, timeout_s: float) -> list[tuple[str, int]]:
        """Run a broker's controlled shutdown through the event queue; the partitions it still
        leads afterwards. Raises NotControllerError when this controller is not active."""
        if not self.active:
            raise NotControllerError("this controller is not active")
        done: asyncio.Future[list[tuple[str, int]]] = asyncio.get_running_loop().create_future()
        await self._enqueue("shutdown", (broker_id, (done,)))
        async with asyncio.timeout(timeout_s):
            return await done

    # -- admin requests forwarded by brokers ------------------------------------------------------

    async def _request(self, kind: str, payload: tuple[Any, ...], timeout_s: float) -> Outcome:
        if not self.active:
            raise NotControllerError("this controller is not active")
        done: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        await self._enqueue(kind, (*payload, done))
        async with asyncio.timeout(timeout_s):
            return await done

    async def elect_leaders(
        self, kind: ElectionType, partitions: list[TopicPartition] | None, timeout_s: float
    ) -> Outcome:
        return await self._request("elect_leaders", (kind, partitions), timeout_s)

    async def alter_reassignments(
        self, targets: dict[TopicPartition, tuple[int, ...] | None], timeout_s: float
    ) -> Outcome:
        return await self._request("alter_reassignments", (targets,), timeout_s)

    def list_reassignments(self, wanted: list[TopicPartition] | None) -> list[dict[str, Any]]:
        if not self.active or self.reassignments is None:
            raise NotControllerError("this controller is not active")
        return list_reassignments(self.reassignments, wanted)

    # -- status ----------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        context = self.context
        return {
            "controller_id": self.settings.controller_id,
            "active": self.active,
            "role": self.role.value,
            "epoch": self.epoch.epoch if self.epoch else None,
            "zookeeper_connected": self.connected,
            "live_brokers": sorted(context.brokers) if context else None,
            "topics": len(context.topic_ids) if context else None,
            "partitions": len(context.partitions) if context else None,
            "offline_partitions": context.offline_count() if context else None,
        }


def read_term(zk: KazooClient) -> tuple[int | None, int | None]:
    """The session owning ``/controller`` and the version of ``/controller_epoch`` (None where
    a node is missing). Blocking: run it in a worker thread."""
    holder = zk.exists(ControllerZNode.path())
    epoch = zk.exists(ControllerEpochZNode.path())
    return (
        holder.ephemeralOwner if holder is not None else None,
        epoch.version if epoch is not None else None,
    )


def _answer(
    waiters: tuple[asyncio.Future[list[tuple[str, int]]], ...],
    outcome: list[tuple[str, int]] | BaseException,
) -> None:
    for waiter in waiters:
        if waiter.done():
            continue  # its caller timed out
        if isinstance(outcome, BaseException):
            waiter.set_exception(outcome)
        else:
            waiter.set_result(outcome)


async def _settle(waiter: asyncio.Future[Outcome], work: Awaitable[Outcome]) -> None:
    """Run an operator's request and hand its outcome to the waiter (an error too, so the
    request fails at once instead of waiting out its timeout)."""
    try:
        outcome = await work
    except Exception as exc:
        if not waiter.done():
            waiter.set_exception(exc)
        raise
    if not waiter.done():
        waiter.set_result(outcome)
