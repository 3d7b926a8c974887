"""The group coordinator: which groups this broker holds, and taking them over and giving them up.

A group is coordinated by the broker named in ``/consumers/{group}/coordinator`` while that broker
is registered; otherwise by the broker :func:`designated_coordinator` picks from the live ones,
which claims it on the first request (or at once, when the group still has members whose
coordinator died). Claiming loads the group from ZooKeeper; members found there must rejoin
within their session timeout, so their partitions are never handed on while they may still
be consuming them. The rebalance protocol itself is in :mod:`.rebalance`, offsets in
:mod:`.offsets`.

Groups live in ZooKeeper, so a broker cut off from it (session suspended) can neither read nor
write them: until it is back every group request gets COORDINATOR_NOT_AVAILABLE at once (clients
retry, finding the coordinator again) instead of waiting on ZooKeeper, and FindCoordinator asked
here names nobody. Groups stay held: the session may survive the cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pafka.errors import (
    CoordinationError,
    CoordinatorNotAvailableError,
    CorruptZNodeError,
    GroupIdNotFoundError,
    KafkaApiError,
    NonEmptyGroupError,
    NotCoordinatorError,
    PafkaError,
)
from pafka.groups.membership import GroupMetadata, Member
from pafka.groups.placement import designated_coordinator
from pafka.groups.state import GroupState
from pafka.groups.zk_coordinated import ZkConsumers
from pafka.zk.client import ZkClient
from pafka.zk.znodes import BROKER_IDS, BrokerInfo
from pafka.zk.znodes import now_ms as wall_ms
from services.broker.groups import shared_registry, store
from services.broker.groups.config import GroupConfig
from services.broker.groups.runtime import GroupRuntime, now_ms
from services.broker.groups.store import GroupSnapshot, GroupWrite
from services.broker.metadata_cache import MetadataCache

log = logging.getLogger(__name__)

T = TypeVar("T")


class GroupCoordinator:
    def __init__(
        self, broker_id: int, zk: ZkClient, metadata: MetadataCache, config: GroupConfig
    ) -> None:
        self.broker_id = broker_id
        self.zk = zk
        self.metadata = metadata
        self.config = config
        self.groups: dict[str, GroupRuntime] = {}
        self.live: dict[int, BrokerInfo] = {}
        self._loading: dict[str, asyncio.Future[GroupRuntime | None]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[None]] = set()
        self._live_brokers_seen: frozenset[int] = frozenset()
        # Brokers in the last UpdateMetadata, to tell a broker change from other updates.
        self._metadata_brokers: frozenset[int] = frozenset()
        # Installed by GroupProtocol (rebalance.py), which owns the protocol: the coordinator
        # only decides when a group must rebalance and when sessions are checked.
        self.prepare_rebalance: Callable[[GroupRuntime, str], None] = lambda rt, why: None
        self.sweep_group: Callable[[GroupRuntime], Awaitable[None]] | None = None
        self.zookeeper_reachable = True

    # -- life cycle --------------------------------------------------------------------------

    async def start(self) -> None:
        self.zk.watch_children(BROKER_IDS, self._on_brokers)
        self._tasks.append(asyncio.create_task(self._sweep_loop()))

    async def stop(self) -> None:
        """Give every group up so other brokers take them over without waiting for a timeout."""
        for task in [*self._tasks, *self._background]:
            task.cancel()
        for rt in list(self.groups.values()):
            with contextlib.suppress(PafkaError):
                await self.zk.run(store.release, self.zk.kazoo, rt.claim)
            self.unload(rt, "broker shutting down")

    def on_session_lost(self) -> None:
        """Our registration is gone, so others may claim our groups: stop acting at once."""
        for rt in list(self.groups.values()):
            self.unload(rt, "ZooKeeper session lost")

    def set_zookeeper_reachable(self, reachable: bool) -> None:
        """The ZooKeeper connection came or went. Going, requests parked on a rebalance are
        answered now: the rebalance cannot complete without writing ZooKeeper."""
        if reachable == self.zookeeper_reachable:
            return
        self.zookeeper_reachable = reachable
        if reachable:
            log.info("ZooKeeper is back: coordinating %d group(s) again", len(self.groups))
            return
        log.warning(
            "cut off from ZooKeeper: group requests get COORDINATOR_NOT_AVAILABLE until it is back"
        )
        for rt in self.groups.values():
            rt.fail_all(self._unreachable(rt.group_id))

    def require_zookeeper(self, group: str) -> None:
        """Refuse a group request at once while ZooKeeper, where groups live, is unreachable."""
        if not self.zookeeper_reachable:
            raise self._unreachable(group)

    def _unreachable(self, group: str) -> CoordinatorNotAvailableError:
        return CoordinatorNotAvailableError(
            f"broker {self.broker_id} cannot reach ZooKeeper to coordinate group {group!r}"
        )

    def unload(self, rt: GroupRuntime, why: str) -> None:
        if self.groups.get(rt.group_id) is rt:
            del self.groups[rt.group_id]
        log.info("no longer coordinating group %r: %s", rt.group_id, why)
        rt.meta.state = GroupState.DEAD
        if rt.rebalance_task is not None:
            rt.rebalance_task.cancel()
        rt.fail_all(NotCoordinatorError(f"broker {self.broker_id} lost group {rt.group_id!r}"))

    def spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- who coordinates what ----------------------------------------------------------------

    async def _on_brokers(self, children: list[str]) -> None:
        ids = sorted(int(c) for c in children if c.isdigit())
        found: dict[int, BrokerInfo] = {}
        for broker_id in ids:
            got = await self.zk.get(BrokerInfo.path(broker_id))
            if got is not None:
                found[broker_id] = BrokerInfo.decode(broker_id, got[0])
        lost = set(self.live) - set(found)
        self.live = found
        if lost or not self._live_brokers_seen:
            self.spawn(self._adopt_orphans())
        self._live_brokers_seen = frozenset(found)

    async def coordinator_of(self, group: str) -> int | None:
        if group in self.groups:
            return self.broker_id
        holder = await self.zk.run(store.holder, self.zk.kazoo, group)
        if holder is not None:
            return holder
        return designated_coordinator(group, self.live)

    async def find(self, group: str) -> BrokerInfo:
        self.require_zookeeper(group)
        broker = await self.coordinator_of(group)
        info = self.live.get(broker) if broker is not None else None
        if info is None:
            raise CoordinatorNotAvailableError(f"no live broker can coordinate group {group!r}")
        return info

    async def group(self, group: str, *, create: bool) -> GroupRuntime | None:
        """The group if this broker coordinates it, claimed and loaded on first use.

        Raises NotCoordinatorError when another broker does; None when the group does not exist
        and ``create`` is false; CoordinatorNotAvailableError while ZooKeeper is unreachable.
        """
        self.require_zookeeper(group)
        rt = self.groups.get(group)
        if rt is not None:
            return rt
        loading = self._loading.get(group)
        if loading is None:
            loading = asyncio.get_running_loop().create_future()
            self._loading[group] = loading
            try:
                loading.set_result(await self._claim(group, create))
            except CorruptZNodeError as exc:
                # Once per request that met it; the group stays unusable until the node is
                # fixed, every other group is unaffected.
                log.warning("group %r cannot be used: %s", group, exc)
                loading.set_exception(exc)
            except BaseException as exc:
                loading.set_exception(exc)
            finally:
                del self._loading[group]
        return await asyncio.shield(loading)

    async def _claim(self, group: str, create: bool) -> GroupRuntime | None:
        coordinator = await self.coordinator_of(group)
        if coordinator != self.broker_id:
            raise NotCoordinatorError(f"broker {coordinator} coordinates group {group!r}")
        if not create and not await self.zk.run(store.group_exists, self.zk.kazoo, group):
            return None
        claim = await self.zk.run(store.claim, self.zk.kazoo, group, self.broker_id)
        snapshot = await self.zk.run(store.load, self.zk.kazoo, group)
        last_contact_ms = self._last_contact_ms(claim)
        rt = self._runtime(group, claim, snapshot, last_contact_ms)
        self.groups[group] = rt
        log.info(
            "coordinating group %r (epoch %d, generation %d, %d member(s) to rejoin, "
            "last contact %d ms ago)",
            group,
            claim.epoch,
            rt.meta.generation,
            len(rt.meta.members),
            now_ms() - last_contact_ms,
        )
        if snapshot.json_offsets:
            async with rt.lock:
                # Migrated on first load, so ZooKeeper-era readers see bare offsets from now on.
                write = rt.write()
                for tp in sorted(snapshot.json_offsets):
                    write.put_offset(tp, rt.offsets[tp], True, tp in rt.commit_nodes)
                await self.apply(rt, write)
        if rt.meta.members or rt.meta.stale_owners():
            async with rt.lock:
                write = rt.write()
                rt.release(rt.meta.stale_owners(), write)
                await self.apply(rt, write)
                if rt.meta.members:
                    self.prepare_rebalance(rt, "coordinator moved")
        return rt

    def _last_contact_ms(self, claim: store.Claim) -> int:
        """When members of a group taken over could last have heard from a coordinator (on the
        monotonic clock): a member's session runs from its last contact, not from our claim.

        A released claim says when it was released; a dead holder stopped answering about one
        ZooKeeper session timeout before its registration vanished; a claim that was ours (a
        restart) gives no such bound, so the members get a full session from now.
        """
        previous, now = claim.previous, now_ms()
        if previous is None or previous.broker_id == self.broker_id:
            return now
        if previous.broker_id == store.UNCLAIMED:
            return now - max(wall_ms() - previous.timestamp_ms, 0)
        return now - self.zk.session_timeout_ms

    def _runtime(
        self, group: str, claim: store.Claim, snapshot: GroupSnapshot, last_contact_ms: int
    ) -> GroupRuntime:
        node = snapshot.group
        meta = GroupMetadata(
            group_id=group,
            protocol_type=node.protocol_type,
            generation=node.generation,
            protocol=node.protocol,
            leader=node.leader,
            owners=dict(snapshot.owners),
        )
        for member_id, m in snapshot.members.items():
            # Members found in ZooKeeper must rejoin before their session runs out.
            meta.members[member_id] = Member(
                member_id=member_id,
                client_id=m.client_id,
                client_host=m.client_host,
                session_timeout_ms=m.session_timeout_ms,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                instance_id=m.group_instance_id,
                subscription=frozenset(m.subscription),
                last_heard_ms=last_contact_ms,
            )
        rt = GroupRuntime(meta=meta, claim=claim, offsets=dict(snapshot.offsets))
        rt.registered = set(snapshot.members)
        rt.commit_nodes = set(snapshot.commit_nodes)
        return rt

    async def _adopt_orphans(self) -> None:
        """Take over groups with members whose coordinator is gone, so their sessions run out
        and their partitions move on even if no client asks this broker first."""
        try:
            groups = await self.zk.run(store.list_groups, self.zk.kazoo)
        except PafkaError as exc:
            log.warning("cannot list groups to adopt: %s", exc)
            return
        for group, listed in groups.items():
            holder = listed.holder
            if listed.error or group in self.groups or holder not in (None, self.broker_id):
                continue
            if holder is None and designated_coordinator(group, self.live) != self.broker_id:
                continue
            if not await self.zk.get_children(store.Z.ids_path(group)):
                continue
            with contextlib.suppress(PafkaError):
                await self.group(group, create=False)

    async def zk_consumers(self, group: str) -> ZkConsumers:
        """The group's ZooKeeper-coordinated consumers now (read afresh: they are ephemeral)."""
        self.require_zookeeper(group)
        try:
            return await self.zk.run(shared_registry.zk_consumers, self.zk.kazoo, group)
        except CorruptZNodeError as exc:
            log.warning("group %r cannot be used: %s", group, exc)
            raise

    # -- writing -----------------------------------------------------------------------------

    async def apply(self, rt: GroupRuntime, write: GroupWrite) -> None:
        """Apply a group's znode changes; on failure the group is dropped and the error raised
        as NOT_COORDINATOR, so clients find the coordinator again and it reloads the group."""
        if not write:
            return
        try:
            await self.zk.run(write.commit, self.zk.kazoo, rt.parents)
        except NotCoordinatorError:
            self.unload(rt, "another broker claimed it")
            raise
        except CoordinationError as exc:
            self.unload(rt, f"ZooKeeper write failed: {exc}")
            raise NotCoordinatorError(f"group {rt.group_id!r} must be reloaded: {exc}") from exc
        rt.applied(write)

    # -- housekeeping ------------------------------------------------------------------------

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.sweep_interval_ms / 1000)
            if self.sweep_group is None or not self.zookeeper_reachable:
                continue  # expiring members would need ZooKeeper writes
            for rt in list(self.groups.values()):
                with contextlib.suppress(KafkaApiError):
                    await self.sweep_group(rt)

    def on_metadata(self) -> None:
        """After an UpdateMetadata: rebalance groups whose subscribed topics grew, or whose
        partitions' leaders moved because brokers came or went (the seeds' triggers); a
        deleted topic is the members' to notice (``GroupMetadata.partitions_grew``)."""
        brokers = frozenset(self.metadata.brokers)
        broker_change = brokers != self._metadata_brokers
        self._metadata_brokers = brokers
        for rt in list(self.groups.values()):
            if rt.meta.state not in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                continue
            counts = self.partition_counts(rt.meta.subscribed_topics())
            # Compared with the generation's start: a controlled shutdown moves leaders in one
            # update and removes the broker in the next.
            if rt.meta.partitions_grew(counts):
                self.prepare_rebalance(rt, "subscribed topics gained partitions")
            elif (
                broker_change
                and self.config.rebalance_on_broker_change
                and self.leaders(counts) != rt.leaders
            ):
                self.prepare_rebalance(rt, "a broker change moved partition leadership")

    def partition_counts(self, topics: set[str]) -> dict[str, int]:
        return {
            t: len(self.metadata.topics[t]) for t in sorted(topics) if t in self.metadata.topics
        }

    def leaders(self, counts: dict[str, int]) -> dict[tuple[str, int], int]:
        return {
            (t, p): info.leader
            for t in counts
            for p, info in self.metadata.topics.get(t, {}).items()
        }

    # -- admin -------------------------------------------------------------------------------

    async def list_groups(self) -> list[GroupRuntime]:
        """Groups this broker coordinates, including ones it is designated for but not holding
        yet (they are loaded, as Kafka loads every group of its partitions)."""
        if not self.zookeeper_reachable:
            raise CoordinatorNotAvailableError(f"broker {self.broker_id} cannot reach ZooKeeper")
        groups = await self.zk.run(store.list_groups, self.zk.kazoo)
        found = []
        for group, listed in sorted(groups.items()):
            holder = listed.holder
            if listed.error is not None:
                log.warning("ListGroups leaves group %r out: %s", group, listed.error)
                continue
            mine = holder == self.broker_id or (
                holder is None and designated_coordinator(group, self.live) == self.broker_id
            )
            if group in self.groups or mine:
                with contextlib.suppress(PafkaError):
                    rt = await self.group(group, create=False)
                    if rt is not None:
                        found.append(rt)
        return found

    async def delete(self, group: str) -> None:
        try:
            rt = await self.group(group, create=False)
        except CorruptZNodeError:
            # A group that cannot be loaded can still be deleted, as ZooKeeper-era tools
            # delete one: unread, unless a consumer is registered (logged already).
            await self.zk.run(store.delete_unreadable_group, self.zk.kazoo, group)
            log.info("deleted group %r, which could not be read", group)
            return
        if rt is None:
            raise GroupIdNotFoundError(f"group {group!r} does not exist")
        async with rt.lock:
            if rt.meta.members:
                raise NonEmptyGroupError(f"group {group!r} has {len(rt.meta.members)} member(s)")
            consumers = await self.zk_consumers(group)
            if consumers:
                raise NonEmptyGroupError(
                    f"group {group!r} has {len(consumers.members)} ZooKeeper-coordinated "
                    "consumer(s) registered"
                )
            try:
                await self.zk.run(store.delete_group, self.zk.kazoo, rt.claim)
            finally:
                self.unload(rt, "deleted")
