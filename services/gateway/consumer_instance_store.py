"""Consumer instances in ZooKeeper, so that any gateway replica serves them; and their expiry.

The payload and the changes are :mod:`services.gateway.consumer_instances`. Every change is
applied by :meth:`InstanceStore.update`: read, change, write back conditionally on the znode
version, and on a lost race read and apply again. Two gateways touching one instance thus never
lose an update. Idle instances (``last_used_ms`` older than the gateway's instance timeout) are
removed when next touched and by :class:`Sweeper`, which each gateway runs periodically over a
bounded batch of instances.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial

from pafka.errors import PafkaError, RestError, ZkBadVersionError, ZkNodeExistsError, ZkNoNodeError
from pafka.zk.client import ZkClient
from pafka.zk.znodes import GatewayZNodes
from services.gateway.consumer_instances import InstanceState, now_ms
from services.gateway.errors import (
    CONSUMER_ALREADY_EXISTS,
    ILLEGAL_STATE,
    UNKNOWN_CONSUMER_INSTANCE,
    ZOOKEEPER_ERROR,
)

log = logging.getLogger(__name__)

UPDATE_ATTEMPTS = 20
RETRY_BACKOFF_S = 0.005
SWEEP_BATCH = 200
MIN_SWEEP_INTERVAL_S = 0.5
MAX_SWEEP_INTERVAL_S = 30.0


# -- ZooKeeper ---------------------------------------------------------------------------------


def _unknown(group: str, name: str) -> RestError:
    return RestError(
        UNKNOWN_CONSUMER_INSTANCE, f"consumer instance {name!r} of group {group!r} not found"
    )


class InstanceStore:
    def __init__(self, zk: ZkClient | None) -> None:
        self.zk = zk

    def _zk(self) -> ZkClient:
        if self.zk is None:
            raise RestError(
                ZOOKEEPER_ERROR, "consumer instances need a gateway connected to ZooKeeper"
            )
        return self.zk

    async def create(self, state: InstanceState) -> None:
        zk = self._zk()
        path = GatewayZNodes.consumer_instance_path(state.group, state.name)
        try:
            await zk.run(partial(zk.kazoo.create, path, state.encode(), makepath=True))
        except ZkNodeExistsError:
            raise RestError(
                CONSUMER_ALREADY_EXISTS,
                f"consumer instance {state.name!r} already exists in group {state.group!r}",
            ) from None

    async def load(self, group: str, name: str) -> tuple[InstanceState, int]:
        """The instance and its znode version; 404 when it does not exist (or is unreadable)."""
        got = await self._zk().get(GatewayZNodes.consumer_instance_path(group, name))
        if got is None:
            raise _unknown(group, name)
        try:
            return InstanceState.decode(group, name, got[0]), got[1].version
        except (ValueError, KeyError, TypeError):
            raise _unknown(group, name) from None

    async def save(self, state: InstanceState, version: int) -> int:
        """Write ``state`` if the znode is still at ``version``: the new version, or
        :class:`ZkBadVersionError` when someone else wrote first."""
        zk = self._zk()
        path = GatewayZNodes.consumer_instance_path(state.group, state.name)
        try:
            stat = await zk.run(zk.kazoo.set, path, state.encode(), version)
        except ZkNoNodeError:
            raise _unknown(state.group, state.name) from None
        return int(stat.version)

    async def update(
        self, group: str, name: str, change: Callable[[InstanceState], InstanceState]
    ) -> InstanceState:
        """Apply ``change`` to the stored state until a conditional write of it succeeds."""
        for attempt in range(UPDATE_ATTEMPTS):
            if attempt:  # lost a race: let the winner's burst pass
                await asyncio.sleep(random.uniform(0, RETRY_BACKOFF_S * attempt))
            state, version = await self.load(group, name)
            changed = change(state)
            if changed == state:
                return state
            try:
                await self.save(changed, version)
                return changed
            except ZkBadVersionError:
                continue
        raise RestError(ILLEGAL_STATE, f"consumer instance {name!r} is changing too fast; retry")

    async def delete(self, group: str, name: str, version: int = -1) -> bool:
        """Remove the instance (only at ``version`` unless -1); False if it was not there or
        changed meanwhile. The group's node goes too once it holds no instance."""
        zk = self._zk()
        try:
            await zk.run(
                zk.kazoo.delete, GatewayZNodes.consumer_instance_path(group, name), version
            )
        except (ZkNoNodeError, ZkBadVersionError):
            return False
        # Other instances may remain, or another gateway removed it already.
        with contextlib.suppress(PafkaError):
            await zk.run(zk.kazoo.delete, GatewayZNodes.consumer_group_path(group))
        return True

    async def names_after(self, cursor: tuple[str, str], limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` (group, instance) pairs after ``cursor``, in order."""
        zk = self._zk()
        found: list[tuple[str, str]] = []
        for group in await zk.get_children(GatewayZNodes.consumers_path()):
            if group < cursor[0]:
                continue
            for name in await zk.get_children(GatewayZNodes.consumer_group_path(group)):
                if (group, name) > cursor:
                    found.append((group, name))
                    if len(found) == limit:
                        return found
        return found


# -- expiry ------------------------------------------------------------------------------------


Cleanup = Callable[[InstanceState], Awaitable[None]]


@dataclass
class Sweeper:
    """Removes instances idle past the timeout, a bounded batch per round, resuming where the
    previous round stopped. ``cleanup`` runs first for each (it leaves the group)."""

    store: InstanceStore
    timeout_ms: int
    cleanup: Cleanup
    cursor: tuple[str, str] = ("", "")
    task: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def interval_s(self) -> float:
        return min(max(self.timeout_ms / 4000, MIN_SWEEP_INTERVAL_S), MAX_SWEEP_INTERVAL_S)

    def start(self) -> None:
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._loop(), name="consumer-instance-sweep")

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self.sweep()
            except PafkaError as exc:
                log.info("consumer instance sweep failed: %s", exc)

    async def sweep(self) -> list[tuple[str, str]]:
        """One round; the instances it removed."""
        batch = await self.store.names_after(self.cursor, SWEEP_BATCH)
        self.cursor = batch[-1] if len(batch) == SWEEP_BATCH else ("", "")
        removed = []
        for group, name in batch:
            if await expire(self.store, group, name, self.timeout_ms, self.cleanup):
                removed.append((group, name))
        return removed


async def expire(
    store: InstanceStore, group: str, name: str, timeout_ms: int, cleanup: Cleanup
) -> bool:
    """Remove the instance if it is idle past ``timeout_ms`` and untouched while we do."""
    try:
        state, version = await store.load(group, name)
    except RestError:
        return False
    if not state.expired(now_ms(), timeout_ms):
        return False
    try:
        await cleanup(state)
    except PafkaError as exc:
        log.info("consumer instance %s/%s: cleanup failed: %s", group, name, exc)
    removed = await store.delete(group, name, version)
    if removed:
        log.info("consumer instance %s/%s expired after %d ms idle", group, name, timeout_ms)
    return removed
