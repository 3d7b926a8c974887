"""Wake long-polling fetches when a partition's log, high watermark or role changes.

Two kinds of listener: a sessionless fetch (or an acks=all produce) waits in
:func:`wait_any` on a future of its own, which each notifier it waits on completes; a fetch
session (``fetch_session_cache``) watches the partition and is told its key, so that it reads
only the partitions that changed and waits on one event of its own.

A waiter's own future is completed by the append itself, so the fetch runs at the event loop's
next turn; waiting through ``asyncio.wait`` on a future shared by every waiter cost it one turn
more, and each turn on a busy broker is latency every consumer sees.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable
from typing import Protocol


class Watcher(Protocol):
    def changed(self, key: Hashable) -> None: ...


class Notifier:
    """The futures of the waiters waiting now (``notify`` completes them all), plus the
    watchers told of every change."""

    __slots__ = ("_waiters", "_watchers", "key")

    def __init__(self, key: Hashable = None) -> None:
        self.key = key
        self._waiters: set[asyncio.Future[bool]] = set()
        self._watchers: set[Watcher] = set()

    def watch(self, watcher: Watcher) -> None:
        self._watchers.add(watcher)

    def unwatch(self, watcher: Watcher) -> None:
        self._watchers.discard(watcher)

    @property
    def watcher_count(self) -> int:
        return len(self._watchers)

    @property
    def waiter_count(self) -> int:
        return len(self._waiters)

    def notify(self) -> None:
        if self._waiters:
            waiters, self._waiters = self._waiters, set()
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(True)
        for watcher in self._watchers:
            watcher.changed(self.key)


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)


async def wait_any(notifiers: Iterable[Notifier], timeout_s: float) -> bool:
    """Wait until one notifier fires or the timeout passes; True when woken by data."""
    waiting_on = list(notifiers)
    if not waiting_on or timeout_s <= 0:
        return False
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[bool] = loop.create_future()
    for notifier in waiting_on:
        notifier._waiters.add(waiter)
    expiry = loop.call_later(timeout_s, _expire, waiter)
    try:
        return await waiter
    finally:
        expiry.cancel()
        for notifier in waiting_on:
            notifier._waiters.discard(waiter)
