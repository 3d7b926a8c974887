"""Wake long-polling fetches when a partition's log, high watermark or role changes.

Two kinds of listener: a sessionless fetch (or an acks=all produce) waits on the partition's
one-shot future; a fetch session (``fetch_session_cache``) watches the partition and is told
its key, so that it reads only the partitions that changed and waits on one event of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable
from typing import Protocol


class Watcher(Protocol):
    def changed(self, key: Hashable) -> None: ...


class Notifier:
    """A one-shot future per generation (``notify`` completes it and starts a new one), plus
    the watchers told of every change."""

    __slots__ = ("_future", "_watchers", "key")

    def __init__(self, key: Hashable = None) -> None:
        self.key = key
        self._future: asyncio.Future[None] | None = None
        self._watchers: set[Watcher] = set()

    def future(self) -> asyncio.Future[None]:
        if self._future is None or self._future.done():
            self._future = asyncio.get_running_loop().create_future()
        return self._future

    def watch(self, watcher: Watcher) -> None:
        self._watchers.add(watcher)

    def unwatch(self, watcher: Watcher) -> None:
        self._watchers.discard(watcher)

    @property
    def watcher_count(self) -> int:
        return len(self._watchers)

    def notify(self) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_result(None)
        for watcher in self._watchers:
            watcher.changed(self.key)


async def wait_any(notifiers: Iterable[Notifier], timeout_s: float) -> bool:
    """Wait until one notifier fires or the timeout passes; True when woken by data."""
    futures = {n.future() for n in notifiers}
    if not futures or timeout_s <= 0:
        return False
    done, _ = await asyncio.wait(futures, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    return bool(done)
