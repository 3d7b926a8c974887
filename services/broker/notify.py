"""Wake long-polling fetches when a partition's log or high watermark moves."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable


class Notifier:
    """A one-shot future per generation: ``notify`` completes it and starts a new one."""

    __slots__ = ("_future",)

    def __init__(self) -> None:
        self._future: asyncio.Future[None] | None = None

    def future(self) -> asyncio.Future[None]:
        if self._future is None or self._future.done():
            self._future = asyncio.get_running_loop().create_future()
        return self._future

    def notify(self) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_result(None)


async def wait_any(notifiers: Iterable[Notifier], timeout_s: float) -> bool:
    """Wait until one notifier fires or the timeout passes; True when woken by data."""
    futures = {n.future() for n in notifiers}
    if not futures or timeout_s <= 0:
        return False
    done, _ = await asyncio.wait(futures, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    return bool(done)
