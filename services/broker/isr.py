"""The leader's side of in-sync replica management: shrink laggards, admit caught-up followers.

A leader writes ISR changes itself, as Kafka's ZooKeeper-era leaders do: a conditional update of
the partition's state znode on the zkVersion it was told (a stale writer loses, re-reads and
adopts what is there), then a sequential ``/isr_change_notification`` node so the controller
propagates the new ISR in metadata. The leader epoch does not change.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError

from pafka.errors import PafkaError
from pafka.zk.client import ZkClient
from pafka.zk.znodes import IsrChangeNotificationZNode, PartitionState, TopicPartitionsPayload
from services.broker.partition import Partition

log = logging.getLogger(__name__)


def write_isr(
    zk: KazooClient, partition: Partition, isr: tuple[int, ...]
) -> tuple[tuple[int, ...], int]:
    """Write the new ISR; returns what ZooKeeper now holds (isr, zk version)."""
    path = PartitionState.path(partition.topic, partition.index)
    state = PartitionState(
        partition.leader, partition.leader_epoch, isr, partition.controller_epoch
    )
    try:
        stat = zk.set(path, state.encode(), version=partition.zk_version)
    except BadVersionError:
        data, current = zk.get(path)
        held = PartitionState.decode(partition.topic, partition.index, data)
        log.info("%r: ISR write lost to a newer state %s", partition, held)
        if held.leader_epoch != partition.leader_epoch:
            # A new leadership term; the controller's LeaderAndIsr will say what to do.
            return partition.isr, partition.zk_version
        return held.isr, current.version
    payload = TopicPartitionsPayload(((partition.topic, partition.index),)).encode()
    zk.create(IsrChangeNotificationZNode.path_prefix(), payload, sequence=True)
    return isr, stat.version


IsrChanged = Callable[[tuple[int, ...], tuple[int, ...]], None]


class IsrManager:
    def __init__(self, zk: ZkClient, lag_max_ms: int, on_change: IsrChanged | None = None) -> None:
        self.zk = zk
        self.lag_max_ms = lag_max_ms
        self.on_change = on_change
        self._updating: set[tuple[str, int]] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def maybe_expand(self, partition: Partition) -> None:
        wanted = partition.isr_to_expand()
        if wanted is not None:
            self._spawn(partition, wanted, "expand")

    def _spawn(self, partition: Partition, isr: tuple[int, ...], why: str) -> None:
        key = (partition.topic, partition.index)
        if key in self._updating:
            return
        self._updating.add(key)
        task = asyncio.create_task(self._update(partition, isr, why))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _update(self, partition: Partition, isr: tuple[int, ...], why: str) -> None:
        key = (partition.topic, partition.index)
        epoch = partition.leader_epoch
        try:
            held, version = await self.zk.run(write_isr, self.zk.kazoo, partition, isr)
            if partition.is_leader and partition.leader_epoch == epoch:
                log.info("%r: ISR %s %s -> %s", partition, why, partition.isr, held)
                before = partition.isr
                partition.set_isr(held, version)
                if self.on_change is not None:
                    self.on_change(before, held)
        except PafkaError as exc:
            log.warning("%r: ISR update failed: %s", partition, exc)
        finally:
            self._updating.discard(key)

    async def shrink_loop(self, partitions: Callable[[], Iterable[Partition]]) -> None:
        while True:
            await asyncio.sleep(max(self.lag_max_ms / 2000, 0.05))
            now_ms = int(time.time() * 1000)
            for partition in partitions():
                if partition.is_leader:
                    smaller = partition.isr_to_shrink(now_ms, self.lag_max_ms)
                    if smaller is not None:
                        self._spawn(partition, smaller, "shrink")

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
