"""Holding the cleaner's I/O to ``log.cleaner.io.max.bytes.per.second``.

Bytes read and written are counted; once per check interval the rate since the last check is
compared to the limit and, when above it, the caller sleeps for as long as those bytes should
have taken. The clock and the sleep are injected, so the arithmetic is tested without time.
"""

from __future__ import annotations

from collections.abc import Callable

CHECK_INTERVAL_S = 0.3


class Throttle:
    def __init__(
        self,
        max_bytes_per_second: float,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
        check_interval_s: float = CHECK_INTERVAL_S,
    ) -> None:
        self.max_bytes_per_second = max_bytes_per_second
        self._clock = clock
        self._sleep = sleep
        self._check_interval_s = check_interval_s
        self._window_start = clock()
        self._window_bytes = 0
        self.slept_s = 0.0

    @property
    def unlimited(self) -> bool:
        return self.max_bytes_per_second <= 0 or self.max_bytes_per_second == float("inf")

    def account(self, nbytes: int) -> None:
        """Note ``nbytes`` of I/O; sleeps when the window's rate exceeds the limit."""
        if self.unlimited:
            return
        self._window_bytes += nbytes
        elapsed = self._clock() - self._window_start
        if elapsed < self._check_interval_s:
            return
        should_take = self._window_bytes / self.max_bytes_per_second
        if should_take > elapsed:
            pause = should_take - elapsed
            self._sleep(pause)
            self.slept_s += pause
        self._window_start = self._clock()
        self._window_bytes = 0
