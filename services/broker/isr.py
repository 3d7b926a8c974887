"""The leader's side of in-sync replica management: shrink laggards, admit caught-up followers.

A leader writes ISR changes itself, as Kafka's ZooKeeper-era leaders do: a conditional update of
the partition's state znode on the zkVersion it was told (a stale writer loses, re-reads and
adopts what is there), then an ``/isr_change_notification`` node so the controller propagates
the new ISR in metadata. The leader epoch does not change.

Changes are written in batches: whatever accumulated while the previous batch was in flight
goes out as pipelined conditional writes (one round trip for the lot, not one per partition)
followed by ONE notification naming every partition of the batch, as Kafka's brokers batch
their ISR change notifications. A broker rejoining thousands of ISRs after a restart thus
costs the controller a handful of notifications, not one per partition.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError

from pafka.errors import PafkaError
from pafka.zk.client import ZkClient
from pafka.zk.znodes import IsrChangeNotificationZNode, PartitionState, TopicPartitionsPayload
from services.broker.partition import Partition

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# A notification's payload stays well under ZooKeeper's 1 MB jute.maxbuffer (~45 bytes each).
MAX_PARTITIONS_PER_NOTIFICATION = 5_000


@dataclass(frozen=True)
class IsrChange:
    """An ISR a leader wants written, with what it believed when it decided (its snapshot)."""

    topic: str
    index: int
    leader: int
    leader_epoch: int
    controller_epoch: int
    zk_version: int
    isr: tuple[int, ...]
    why: str

    @property
    def key(self) -> TopicPartition:
        return (self.topic, self.index)

    def state(self) -> PartitionState:
        return PartitionState(self.leader, self.leader_epoch, self.isr, self.controller_epoch)


@dataclass(frozen=True)
class IsrWritten:
    """What ZooKeeper holds after a change was tried; ``adopt`` False: a new leadership term
    won, and the controller's LeaderAndIsr will say what to do."""

    change: IsrChange
    isr: tuple[int, ...]
    zk_version: int
    adopt: bool


def write_isr_batch(zk: KazooClient, changes: list[IsrChange]) -> list[IsrWritten]:
    """Pipelined conditional writes, a re-read of the ones that lost, one notification."""
    pending = [
        (c, zk.set_async(PartitionState.path(c.topic, c.index), c.state().encode(), c.zk_version))
        for c in changes
    ]
    written: list[IsrWritten] = []
    lost: list[IsrChange] = []
    for change, result in pending:
        try:
            stat = result.get()
        except BadVersionError:
            lost.append(change)
        except NoNodeError:
            continue  # the topic is being deleted
        else:
            written.append(IsrWritten(change, change.isr, stat.version, adopt=True))
    notified = [w.change.key for w in written]
    rereads = [(c, zk.get_async(PartitionState.path(c.topic, c.index))) for c in lost]
    for change, result in rereads:
        try:
            data, stat = result.get()
        except NoNodeError:
            continue
        held = PartitionState.decode(change.topic, change.index, data)
        log.info("%s-%d: ISR write lost to a newer state %s", change.topic, change.index, held)
        same_term = held.leader_epoch == change.leader_epoch
        written.append(IsrWritten(change, held.isr, stat.version, adopt=same_term))
    for start in range(0, len(notified), MAX_PARTITIONS_PER_NOTIFICATION):
        chunk = tuple(notified[start : start + MAX_PARTITIONS_PER_NOTIFICATION])
        zk.create(
            IsrChangeNotificationZNode.path_prefix(),
            TopicPartitionsPayload(chunk).encode(),
            sequence=True,
        )
    return written


IsrChanged = Callable[[tuple[int, ...], tuple[int, ...]], None]


class IsrManager:
    def __init__(self, zk: ZkClient, lag_max_ms: int, on_change: IsrChanged | None = None) -> None:
        self.zk = zk
        self.lag_max_ms = lag_max_ms
        self.on_change = on_change
        # Latest wanted ISR per partition not yet written; replaced by a newer wish.
        self._wanted: dict[TopicPartition, tuple[Partition, IsrChange]] = {}
        self._in_flight: set[TopicPartition] = set()
        # Expansions asked for while their partition's write was in flight. They are decided
        # again when it lands: an idle fetch session would not ask a second time (its fetches
        # name no partition), leaving a caught-up follower out of the ISR until the next write.
        self._deferred: dict[TopicPartition, Partition] = {}
        self._more = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None

    def maybe_expand(self, partition: Partition) -> None:
        wanted = partition.isr_to_expand()
        if wanted is not None:
            self._request(partition, wanted, "expand")

    def _request(self, partition: Partition, isr: tuple[int, ...], why: str) -> None:
        key = (partition.topic, partition.index)
        if key in self._in_flight:
            if why == "expand":
                self._deferred[key] = partition
            return  # decided again once the write in flight has landed
        self._wanted[key] = (
            partition,
            IsrChange(
                partition.topic,
                partition.index,
                partition.leader,
                partition.leader_epoch,
                partition.controller_epoch,
                partition.zk_version,
                isr,
                why,
            ),
        )
        self._more.set()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_batches())

    async def _write_batches(self) -> None:
        while True:
            await self._more.wait()
            self._more.clear()
            batch, self._wanted = self._wanted, {}
            self._in_flight = set(batch)
            try:
                changes = [change for _, change in batch.values()]
                written = await self.zk.run(write_isr_batch, self.zk.kazoo, changes)
            except PafkaError as exc:
                # Decided again by the next fetch or shrink check, on what ZooKeeper then holds.
                log.warning("ISR update of %d partition(s) failed: %s", len(batch), exc)
                written = []
            finally:
                self._in_flight = set()
            for w in written:
                self._apply(batch[w.change.key][0], w)
            deferred, self._deferred = self._deferred, {}
            for partition in deferred.values():
                if partition.is_leader:
                    self.maybe_expand(partition)

    def _apply(self, partition: Partition, w: IsrWritten) -> None:
        if not w.adopt:
            return
        if partition.is_leader and partition.leader_epoch == w.change.leader_epoch:
            log.info("%r: ISR %s %s -> %s", partition, w.change.why, partition.isr, w.isr)
            before = partition.isr
            partition.set_isr(w.isr, w.zk_version)
            if self.on_change is not None:
                self.on_change(before, w.isr)

    async def shrink_loop(self, partitions: Callable[[], Iterable[Partition]]) -> None:
        while True:
            await asyncio.sleep(max(self.lag_max_ms / 2000, 0.05))
            now_ms = int(time.time() * 1000)
            for partition in partitions():
                if partition.is_leader:
                    smaller = partition.isr_to_shrink(now_ms, self.lag_max_ms)
                    if smaller is not None:
                        self._request(partition, smaller, "shrink")

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.cancel()
            await asyncio.gather(self._writer, return_exceptions=True)
