"""The transaction coordinator: which transactional ids this broker holds, and their requests.

An id is coordinated by the broker named in ``/transactions/{id}/coordinator`` while that
broker is registered; otherwise by the rendezvous choice among live brokers
(:func:`designated_coordinator`, as for groups), which claims it on first use, or at once when
the dead coordinator left a transaction open or completing, so its markers are written and its
timeout still runs. The decisions are :mod:`pafka.transactions.decisions`; each is taken and
written under the id's lock, and every write checks the claim (``store``), so memory and
ZooKeeper never disagree past one failed write: the id is dropped and reloaded.

Like groups, ids live in ZooKeeper: while this broker's session is suspended every request
(FindCoordinator for an id too) gets COORDINATOR_NOT_AVAILABLE at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from pafka.errors import (
    ConcurrentTransactionsError,
    CoordinationError,
    CoordinatorNotAvailableError,
    InvalidProducerIdMappingError,
    NotCoordinatorError,
    PafkaError,
)
from pafka.groups.placement import designated_coordinator
from pafka.transactions import decisions as decide
from pafka.transactions.metadata import TopicPartition, TxnMetadata
from pafka.transactions.state import TxnState
from pafka.zk.client import ZkClient
from pafka.zk.znodes import BROKER_IDS, BrokerInfo
from services.broker.transactions import store
from services.broker.transactions.config import TransactionConfig
from services.broker.transactions.markers import MarkerSender

log = logging.getLogger(__name__)


def now_ms() -> int:
    return int(time.time() * 1000)


# How long AddPartitionsToTxn and AddOffsetsToTxn wait for the previous transaction's markers
# before answering CONCURRENT_TRANSACTIONS.
CONCURRENT_WAIT_S = 0.05


@dataclass(eq=False)
class HeldId:
    claim: store.Claim
    meta: TxnMetadata | None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    markers: asyncio.Task[None] | None = None


class TransactionCoordinator:
    def __init__(
        self,
        broker_id: int,
        zk: ZkClient,
        config: TransactionConfig,
        next_producer_id: Callable[[], Awaitable[int]],
        markers: MarkerSender,
    ) -> None:
        self.broker_id = broker_id
        self.zk = zk
        self.config = config
        self._next_producer_id = next_producer_id
        self.markers = markers
        self.held: dict[str, HeldId] = {}
        self.live: dict[int, BrokerInfo] = {}
        self.zookeeper_reachable = True
        self.timed_out_aborts = 0
        self._loading: dict[str, asyncio.Future[HeldId | None]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[None]] = set()
        self._brokers_seen = False

    # -- life cycle --------------------------------------------------------------------------

    async def start(self) -> None:
        self.zk.watch_children(BROKER_IDS, self._on_brokers)
        self._tasks.append(asyncio.create_task(self._abort_loop()))
        self._tasks.append(asyncio.create_task(self._expire_loop()))

    async def stop(self) -> None:
        """Give every id up so another broker takes it over without waiting for a timeout."""
        for task in [*self._tasks, *self._background]:
            task.cancel()
        for held in list(self.held.values()):
            with contextlib.suppress(PafkaError):
                await self.zk.run(store.release, self.zk.kazoo, held.claim)
            self._unload(held, "broker shutting down")
        await self.markers.close()

    def on_session_lost(self) -> None:
        for held in list(self.held.values()):
            self._unload(held, "ZooKeeper session lost")

    def set_zookeeper_reachable(self, reachable: bool) -> None:
        self.zookeeper_reachable = reachable

    def _require_zookeeper(self, tid: str) -> None:
        if not self.zookeeper_reachable:
            raise CoordinatorNotAvailableError(
                f"broker {self.broker_id} cannot reach ZooKeeper to coordinate {tid!r}"
            )

    def _unload(self, held: HeldId, why: str) -> None:
        tid = held.claim.transactional_id
        if self.held.get(tid) is held:
            del self.held[tid]
            log.info("no longer coordinating transactional id %r: %s", tid, why)
        if held.markers is not None:
            held.markers.cancel()

    def _spawn(self, coro: Awaitable[None]) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # -- who coordinates what ----------------------------------------------------------------

    async def _on_brokers(self, children: list[str]) -> None:
        found: dict[int, BrokerInfo] = {}
        for broker_id in sorted(int(c) for c in children if c.isdigit()):
            got = await self.zk.get(BrokerInfo.path(broker_id))
            if got is not None:
                found[broker_id] = BrokerInfo.decode(broker_id, got[0])
        lost = set(self.live) - set(found)
        self.live = found
        if lost or not self._brokers_seen:
            self._spawn(self._adopt_orphans())
        self._brokers_seen = True

    async def coordinator_of(self, tid: str) -> int | None:
        if tid in self.held:
            return self.broker_id
        holder = await self.zk.run(store.holder, self.zk.kazoo, tid)
        if holder is not None:
            return holder
        return designated_coordinator(tid, self.live)

    async def find(self, tid: str) -> BrokerInfo:
        self._require_zookeeper(tid)
        broker = await self.coordinator_of(tid)
        info = self.live.get(broker) if broker is not None else None
        if info is None:
            raise CoordinatorNotAvailableError(f"no live broker can coordinate {tid!r}")
        return info

    async def _hold(self, tid: str, *, create: bool) -> HeldId | None:
        """The id if this broker coordinates it, claimed and loaded on first use; None when
        ZooKeeper holds no state for it and ``create`` is false."""
        self._require_zookeeper(tid)
        held = self.held.get(tid)
        if held is not None:
            return held
        loading = self._loading.get(tid)
        if loading is None:
            loading = asyncio.get_running_loop().create_future()
            self._loading[tid] = loading
            try:
                loading.set_result(await self._claim(tid, create))
            except BaseException as exc:
                loading.set_exception(exc)
            finally:
                del self._loading[tid]
        return await asyncio.shield(loading)

    async def _claim(self, tid: str, create: bool) -> HeldId | None:
        coordinator = await self.coordinator_of(tid)
        if coordinator != self.broker_id:
            raise NotCoordinatorError(f"broker {coordinator} coordinates {tid!r}")
        if not create and await self.zk.run(store.load, self.zk.kazoo, tid) is None:
            return None
        claim = await self.zk.run(store.claim, self.zk.kazoo, tid, self.broker_id)
        meta = await self.zk.run(store.load, self.zk.kazoo, tid)
        held = HeldId(claim, meta)
        self.held[tid] = held
        log.info(
            "coordinating transactional id %r (epoch %d, %s)",
            tid,
            claim.epoch,
            meta.state.value if meta else "new",
        )
        if meta is not None and meta.state.completing:
            self._send_markers(held)  # the previous coordinator had not finished them
        return held

    async def _adopt_orphans(self) -> None:
        """Take over ids whose dead coordinator left a transaction open or completing."""
        try:
            listed = await self.zk.run(store.list_ids, self.zk.kazoo)
        except PafkaError as exc:
            log.warning("cannot list transactional ids to adopt: %s", exc)
            return
        for tid, entry in listed.items():
            if tid in self.held or entry.holder not in (None, self.broker_id):
                continue
            if entry.holder is None and designated_coordinator(tid, self.live) != self.broker_id:
                continue
            with contextlib.suppress(PafkaError):
                meta = await self.zk.run(store.load, self.zk.kazoo, tid)
                if meta is not None and meta.state in (
                    TxnState.ONGOING,
                    TxnState.PREPARE_COMMIT,
                    TxnState.PREPARE_ABORT,
                ):
                    await self._hold(tid, create=False)

    # -- writing -----------------------------------------------------------------------------

    async def _write(self, held: HeldId, meta: TxnMetadata) -> None:
        """Store the id's new state; on failure the id is dropped (reloaded on next use) and
        NOT_COORDINATOR raised, so the client finds the coordinator again."""
        try:
            await self.zk.run(store.write, self.zk.kazoo, held.claim, meta)
        except NotCoordinatorError:
            self._unload(held, "another broker claimed it")
            raise
        except CoordinationError as exc:
            self._unload(held, f"ZooKeeper write failed: {exc}")
            raise NotCoordinatorError(f"{meta.transactional_id!r} must be reloaded") from exc
        held.meta = meta

    def _send_markers(self, held: HeldId) -> None:
        if held.markers is None or held.markers.done():
            held.markers = self._spawn(self._complete(held))

    async def _complete(self, held: HeldId) -> None:
        meta = held.meta
        if meta is None or not meta.state.completing:
            return
        tid = meta.transactional_id
        try:
            done = await self.markers.write(
                meta, held.claim.epoch, lambda: self.held.get(tid) is held
            )
            if not done:
                return
            async with held.lock:
                if self.held.get(tid) is held and held.meta is meta:
                    await self._write(held, decide.complete(meta, now_ms()))
                    log.info("transaction of %r %s", tid, held.meta.state.value)
        except PafkaError as exc:
            log.warning("completing the transaction of %r failed: %s", tid, exc)

    # -- requests ----------------------------------------------------------------------------

    async def init_producer_id(
        self, tid: str, timeout_ms: int, expected: decide.ProducerIdAndEpoch | None
    ) -> TxnMetadata:
        decide.check_timeout(timeout_ms, self.config.max_timeout_ms)
        while True:
            held = await self._hold(tid, create=True)
            assert held is not None
            async with held.lock:
                # Dropped while this request waited (it expired, or a ZooKeeper write failed):
                # look it up again rather than refuse, as this broker may still coordinate it.
                if self.held.get(tid) is held:
                    return await self._init_held(held, timeout_ms, expected)

    async def _init_held(
        self, held: HeldId, timeout_ms: int, expected: decide.ProducerIdAndEpoch | None
    ) -> TxnMetadata:
        """InitProducerId on an id held here, under its lock."""
        tid = held.claim.transactional_id
        current = held.meta
        new_id = None
        if decide.needs_new_producer_id(current, expected):
            new_id = await self._next_producer_id()
        if current is None:
            assert new_id is not None
            current, new_id = (
                decide.new_transactional_id(tid, new_id, timeout_ms, now_ms()),
                None,
            )
        outcome = decide.init_producer_id(current, timeout_ms, expected, now_ms(), new_id)
        await self._write(held, outcome.metadata)
        if outcome.fenced:
            log.info(
                "%r: a new producer fences epoch %d, aborting its transaction",
                tid,
                current.producer_epoch,
            )
            self._send_markers(held)
            raise ConcurrentTransactionsError(
                f"the ongoing transaction of {tid!r} is being aborted; retry"
            )
        return outcome.metadata

    async def add_partitions(
        self, tid: str, producer_id: int, epoch: int, partitions: Iterable[TopicPartition]
    ) -> None:
        wanted = list(partitions)
        await self._decide(
            tid,
            producer_id,
            lambda m, now: decide.add_partitions(m, producer_id, epoch, wanted, now),
            after_markers=True,
        )

    async def add_offsets(self, tid: str, producer_id: int, epoch: int, group_id: str) -> None:
        await self._decide(
            tid,
            producer_id,
            lambda m, now: decide.add_offsets(m, producer_id, epoch, group_id, now),
            after_markers=True,
        )

    async def end_txn(self, tid: str, producer_id: int, epoch: int, committed: bool) -> None:
        await self._decide(
            tid, producer_id, lambda m, now: decide.end_txn(m, producer_id, epoch, committed, now)
        )

    async def _decide(
        self,
        tid: str,
        producer_id: int,
        decision: Callable[[TxnMetadata | None, int], TxnMetadata | None],
        *,
        after_markers: bool = False,
    ) -> None:
        """Take a request's decision under the id's lock and write it; a Prepare state is
        written before the answer (from then on the outcome survives this broker) and its
        markers go out after. With ``after_markers``, a request arriving while the previous
        transaction's markers are still being written waits for them a little (they usually
        take a few milliseconds) rather than being answered CONCURRENT_TRANSACTIONS at once,
        which clients retry only after a fixed back-off (20 ms in librdkafka and Kafka's)."""
        held = await self._held_or_unknown(tid, producer_id)
        if after_markers and held.markers is not None and not held.markers.done():
            await asyncio.wait({held.markers}, timeout=CONCURRENT_WAIT_S)
        async with held.lock:
            self._require_current(held)
            new = decision(held.meta, now_ms())
            if new is None:
                return
            await self._write(held, new)
            if new.state.completing:
                self._send_markers(held)

    async def _held_or_unknown(self, tid: str, producer_id: int) -> HeldId:
        held = await self._hold(tid, create=False)
        if held is None:
            raise InvalidProducerIdMappingError(
                f"producer id {producer_id} does not hold {tid!r}: it was never initialised"
            )
        return held

    def _require_current(self, held: HeldId) -> None:
        """A request that waited for the lock while the id was dropped must look again."""
        if self.held.get(held.claim.transactional_id) is not held:
            raise NotCoordinatorError(f"{held.claim.transactional_id!r} moved; look it up again")

    # -- housekeeping ------------------------------------------------------------------------

    async def _abort_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.abort_timed_out_interval_ms / 1000)
            if self.zookeeper_reachable:
                await self.abort_timed_out()

    async def abort_timed_out(self) -> None:
        """Abort every held transaction past its timeout, bumping the epoch so the producer
        that let it hang is fenced (Kafka's ``abortTimedOutTransactions``)."""
        for held in list(self.held.values()):
            meta = held.meta
            if meta is None or not decide.timed_out(meta, now_ms()):
                continue
            async with held.lock:
                meta = held.meta
                if self.held.get(meta.transactional_id if meta else "") is not held:
                    continue
                if meta is None or not decide.timed_out(meta, now_ms()):
                    continue
                try:
                    await self._write(held, decide.fence(meta, now_ms()))
                except PafkaError as exc:
                    log.warning(
                        "cannot abort the timed-out transaction of %r: %s",
                        meta.transactional_id,
                        exc,
                    )
                    continue
                self.timed_out_aborts += 1
                log.info(
                    "aborting the transaction of %r: older than its %d ms timeout",
                    meta.transactional_id,
                    meta.timeout_ms,
                )
                self._send_markers(held)

    async def _expire_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.remove_expired_interval_ms / 1000)
            if self.zookeeper_reachable:
                await self.expire_ids()

    async def expire_ids(self) -> None:
        """Forget ids unused for ``transactional.id.expiration.ms`` with nothing in flight:
        those held here, and those no live broker holds that this broker would be given."""
        try:
            listed = await self.zk.run(store.list_ids, self.zk.kazoo)
        except PafkaError as exc:
            log.warning("cannot list transactional ids to expire: %s", exc)
            return
        for tid, entry in listed.items():
            mine = entry.holder == self.broker_id or (
                entry.holder is None and designated_coordinator(tid, self.live) == self.broker_id
            )
            if not mine and tid not in self.held:
                continue
            try:
                meta = await self.zk.run(store.load, self.zk.kazoo, tid)
                if meta is None or not decide.expired(meta, now_ms(), self.config.id_expiration_ms):
                    continue
                held = await self._hold(tid, create=False)
                if held is None:
                    continue
                async with held.lock:
                    if held.meta is None or not decide.expired(
                        held.meta, now_ms(), self.config.id_expiration_ms
                    ):
                        continue
                    decide.dead(held.meta)  # the table allows it: nothing is in flight
                    await self.zk.run(store.remove, self.zk.kazoo, held.claim)
                    self._unload(held, "expired (transactional.id.expiration.ms)")
            except PafkaError as exc:
                log.warning("cannot expire transactional id %r: %s", tid, exc)

    def counts_by_state(self) -> dict[str, int]:
        counts = {s.value: 0 for s in TxnState}
        for held in self.held.values():
            if held.meta is not None:
                counts[held.meta.state.value] += 1
        return counts

    def markers_in_flight(self) -> int:
        return sum(1 for h in self.held.values() if h.markers is not None and not h.markers.done())
