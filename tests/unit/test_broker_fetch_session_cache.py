"""The fetch session cache: sessions told of partition changes through real notifiers, waiting
on one event, bounded with Kafka's eviction preference, and dead sessions dropped."""

from __future__ import annotations

import asyncio
import random

from services.broker.fetch_session_cache import FetchSessionCache
from services.broker.fetch_sessions import EVICTION_MS, CachedPartition
from services.broker.notify import Notifier

T0 = 1_000_000


def _cache(slots: int = 10) -> tuple[FetchSessionCache, list[int]]:
    evicted: list[int] = []
    cache = FetchSessionCache(slots, on_evict=lambda: evicted.append(1), rng=random.Random(7))
    return cache, evicted


def test_a_watched_partition_change_marks_it_dirty_only_in_sessions_holding_it() -> None:
    cache, _ = _cache()
    a = cache.create(True, 1, T0)
    b = cache.create(True, 1, T0)
    assert a is not None and b is not None and a.id != b.id and 0 not in (a.id, b.id)
    notifier = Notifier(("t", 0))
    for session in (a, b):
        session.partitions[("t", 0)] = CachedPartition(0, 100, -1)
        session.watch(("t", 0), notifier)
    del b.partitions[("t", 0)]  # b dropped it but still listens: ignored

    notifier.notify()

    assert a.take_dirty() == [("t", 0)] and a.take_dirty() == []
    assert b.take_dirty() == []


def test_a_waiting_fetch_wakes_on_a_change_and_otherwise_at_its_timeout() -> None:
    async def scenario() -> None:
        cache, _ = _cache()
        session = cache.create(False, 1, T0)
        assert session is not None
        notifier = Notifier(("t", 0))
        session.partitions[("t", 0)] = CachedPartition(0, 100, -1)
        session.watch(("t", 0), notifier)

        asyncio.get_running_loop().call_later(0.01, notifier.notify)
        await asyncio.wait_for(session.wait(30), timeout=10)
        assert session.take_dirty() == [("t", 0)]

        await session.wait(0.01)  # nothing changes: returns at the timeout
        assert session.take_dirty() == []
        assert notifier.watcher_count == 1

    asyncio.run(scenario())


def test_forgetting_or_closing_stops_watching() -> None:
    async def scenario() -> None:
        cache, _ = _cache()
        session = cache.create(False, 2, T0)
        assert session is not None
        n0, n1 = Notifier(("t", 0)), Notifier(("t", 1))
        for key, notifier in (((("t", 0)), n0), (("t", 1), n1)):
            session.partitions[key] = CachedPartition(0, 100, -1)
            session.watch(key, notifier)
        session.forget(("t", 0))
        assert (n0.watcher_count, n1.watcher_count) == (0, 1)

        waiting = asyncio.ensure_future(session.wait(30))
        await asyncio.sleep(0)
        cache.remove(session.id)
        await asyncio.wait_for(waiting, timeout=10)  # a closed session's fetch answers at once
        assert session.closed and n1.watcher_count == 0 and cache.get(session.id) is None

    asyncio.run(scenario())


def test_a_replaced_partition_object_is_watched_instead_of_the_old_one() -> None:
    cache, _ = _cache()
    session = cache.create(True, 1, T0)
    assert session is not None
    old, new = Notifier(("t", 0)), Notifier(("t", 0))
    session.partitions[("t", 0)] = CachedPartition(0, 100, -1)
    session.watch(("t", 0), old)
    session.watch(("t", 0), new)
    assert (old.watcher_count, new.watcher_count) == (0, 1)


def test_a_full_cache_lets_a_follower_displace_an_old_consumer_session() -> None:
    cache, evicted = _cache(slots=2)
    consumer = cache.create(False, 5, T0)
    follower = cache.create(True, 5, T0)
    assert consumer is not None and follower is not None
    for session, size in ((consumer, 2000), (follower, 5)):
        session.partitions.update({("t", i): CachedPartition(0, 100, -1) for i in range(size)})
    later = T0 + EVICTION_MS + 1
    cache.touch(consumer, later)
    cache.touch(follower, later)

    # A consumer displaces neither a follower nor a larger consumer session.
    assert cache.create(False, 1000, later) is None
    assert len(evicted) == 0
    newcomer = cache.create(True, 1, later)
    assert newcomer is not None and cache.get(consumer.id) is None and consumer.closed
    assert len(cache) == 2 and evicted == [1]


def test_no_slots_means_no_sessions() -> None:
    cache, _ = _cache(slots=0)
    assert cache.create(True, 1, T0) is None


def test_a_session_unused_past_the_eviction_time_is_dropped_at_the_next_fetch() -> None:
    cache, evicted = _cache()
    dead = cache.create(True, 3, T0)
    alive = cache.create(True, 3, T0)
    assert dead is not None and alive is not None
    dead.partitions[("t", 0)] = CachedPartition(0, 100, -1)
    cache.touch(alive, T0 + EVICTION_MS)
    assert cache.partitions_cached() == 1

    cache.expire_stale(T0 + EVICTION_MS + 1)

    assert cache.get(dead.id) is None and cache.get(alive.id) is alive and evicted == [1]
    assert cache.partitions_cached() == 0
