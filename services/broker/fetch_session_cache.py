"""The leader's fetch sessions (KIP-227): a bounded cache of sessions that know what changed.

A session watches the ``Notifier`` of each of its partitions; a partition that changes (append,
high watermark, role, truncation, StopReplica) is marked dirty in every session watching it and
wakes the fetch waiting on that session. A fetch over a session reads only the dirty partitions
and waits on one future, so a caught-up follower whose partitions are idle costs one request per
wait period, nothing per partition.

The cache holds at most ``max_slots`` sessions (Kafka's
``max.incremental.fetch.session.cache.slots``); a full cache evicts as Kafka does
(``fetch_sessions.eviction_choice``). A session unused for ``EVICTION_MS`` (its client gone or
replaced) is also dropped at the next fetch over any session, so a dead follower's session does
not keep watching partitions until the cache fills.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Hashable

from services.broker.fetch_sessions import (
    EVICTION_MS,
    INVALID_SESSION_ID,
    CachedPartition,
    PartitionKey,
    SessionStanding,
    eviction_choice,
    next_epoch,
    stale,
)
from services.broker.notify import Notifier

MAX_SESSION_ID = 0x7FFFFFFF


class FetchSession:
    """One client's session: its partitions, which of them may have news, the epoch expected."""

    __slots__ = (
        "_waiter",
        "closed",
        "created_ms",
        "dirty",
        "epoch",
        "id",
        "last_used_ms",
        "partitions",
        "privileged",
        "watched",
    )

    def __init__(self, session_id: int, privileged: bool, now_ms: int) -> None:
        self.id = session_id
        self.privileged = privileged
        self.epoch = next_epoch(0)
        self.partitions: dict[PartitionKey, CachedPartition] = {}
        # An ordered set: partitions to read at the next fetch, oldest news first.
        self.dirty: dict[PartitionKey, None] = {}
        self.watched: dict[PartitionKey, Notifier] = {}
        self.created_ms = now_ms
        self.last_used_ms = now_ms
        self.closed = False
        self._waiter: asyncio.Future[None] | None = None

    def __repr__(self) -> str:
        return f"FetchSession({self.id}, epoch={self.epoch}, partitions={len(self.partitions)})"

    def standing(self) -> SessionStanding:
        return SessionStanding(
            self.id, self.privileged, len(self.partitions), self.created_ms, self.last_used_ms
        )

    def changed(self, key: Hashable) -> None:
        """A watched partition changed (``notify.Watcher``)."""
        if key in self.partitions:
            self.dirty[key] = None
            self._wake()

    def mark_dirty(self, key: PartitionKey) -> None:
        self.dirty[key] = None

    def take_dirty(self) -> list[PartitionKey]:
        """The partitions to read now; any change from here on marks them again."""
        keys = list(self.dirty)
        self.dirty.clear()
        return keys

    def watch(self, key: PartitionKey, notifier: Notifier | None) -> None:
        """Follow ``notifier`` for ``key`` (the partition object hosted now; None if none)."""
        held = self.watched.get(key)
        if held is notifier:
            return
        if held is not None:
            held.unwatch(self)
            del self.watched[key]
        if notifier is not None:
            notifier.watch(self)
            self.watched[key] = notifier

    def forget(self, key: PartitionKey) -> None:
        self.watch(key, None)
        self.dirty.pop(key, None)

    async def wait(self, timeout_s: float) -> None:
        """Until a watched partition changes, the session closes, or the timeout passes."""
        if self.dirty or self.closed or timeout_s <= 0:
            return
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        timer = loop.call_later(timeout_s, self._wake)
        try:
            await waiter
        finally:
            timer.cancel()
            if self._waiter is waiter:
                self._waiter = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def close(self) -> None:
        for notifier in self.watched.values():
            notifier.unwatch(self)
        self.watched.clear()
        self.closed = True
        self._wake()


class FetchSessionCache:
    def __init__(
        self,
        max_slots: int,
        *,
        eviction_ms: int = EVICTION_MS,
        on_evict: Callable[[], None] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.max_slots = max_slots
        self.eviction_ms = eviction_ms
        self.on_evict = on_evict
        # Least recently used first: a touched session moves to the end.
        self._sessions: dict[int, FetchSession] = {}
        self._rng = rng or random.Random()

    def __len__(self) -> int:
        return len(self._sessions)

    def partitions_cached(self) -> int:
        return sum(len(s.partitions) for s in self._sessions.values())

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def create(self, privileged: bool, size: int, now_ms: int) -> FetchSession | None:
        """A new session, or None when the cache has no slot it may take (the client then
        fetches without a session, as Kafka answers session id 0)."""
        if len(self._sessions) >= self.max_slots:
            victim = eviction_choice(
                (s.standing() for s in self._sessions.values()),
                privileged,
                size,
                now_ms,
                self.eviction_ms,
            )
            if victim is None:
                return None
            self._evict(victim)
        session = FetchSession(self._new_id(), privileged, now_ms)
        self._sessions[session.id] = session
        return session

    def _new_id(self) -> int:
        while True:
            session_id = self._rng.randint(1, MAX_SESSION_ID)
            if session_id != INVALID_SESSION_ID and session_id not in self._sessions:
                return session_id

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """The session was used now: it becomes the most recently used."""
        session.last_used_ms = now_ms
        if self._sessions.get(session.id) is session:
            self._sessions[session.id] = self._sessions.pop(session.id)

    def expire_stale(self, now_ms: int) -> None:
        """Drop sessions unused for ``eviction_ms``: their clients are gone or started anew."""
        while self._sessions:
            oldest = next(iter(self._sessions.values()))
            if not stale(oldest.standing(), now_ms, self.eviction_ms):
                return
            self._evict(oldest.id)

    def _evict(self, session_id: int) -> None:
        self.remove(session_id)
        if self.on_evict is not None:
            self.on_evict()

    def remove(self, session_id: int) -> None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.close()

    def close(self) -> None:
        for session_id in list(self._sessions):
            self.remove(session_id)
