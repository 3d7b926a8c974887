"""Each consumer group's total lag over the last while, kept by the active controller (pure).

The cluster view already computes every group's committed offsets and the partitions' log ends
on each refresh; :func:`total_lags` sums them per group and :class:`LagHistory` keeps one point
per group every ``interval_ms`` for ``window_ms``, in a ring of fixed length per group, so the
console can draw a group's lag from before its page opened. A group missing from a refresh keeps
its points until they leave the window. The history lives in the active controller's memory
only: a controller that takes over starts an empty one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from services.controller.cluster_view_sources import GroupOffsets
from services.controller.context import TopicPartition


@dataclass(frozen=True)
class LagPoint:
    time_ms: int
    total_lag: int


def total_lags(
    groups: Iterable[GroupOffsets], log_ends: Mapping[TopicPartition, int]
) -> dict[str, int]:
    """Each group's lag summed over the partitions it committed; a group with a partition whose
    log end is unknown this round is left out (a partial sum would read as a fall in lag), as
    is one that committed nothing."""
    totals: dict[str, int] = {}
    for group in groups:
        ends = [log_ends.get(tp) for tp in group.committed]
        if not ends or None in ends:
            continue
        totals[group.name] = sum(
            max(end - offset, 0)
            for end, offset in zip(ends, group.committed.values(), strict=True)
            if end is not None
        )
    return totals


class LagHistory:
    """Bounded points per group: at most ``window_ms // interval_ms + 1`` each, at least
    ``interval_ms`` apart, none older than ``window_ms``."""

    def __init__(self, *, window_ms: int, interval_ms: int) -> None:
        if interval_ms <= 0 or window_ms < interval_ms:
            raise ValueError(f"window {window_ms} ms must be at least interval {interval_ms} ms")
        self.window_ms = window_ms
        self.interval_ms = interval_ms
        self._capacity = window_ms // interval_ms + 1
        self._points: dict[str, deque[LagPoint]] = {}
        self._last_ms: int | None = None

    def due(self, now_ms: int) -> bool:
        """Whether a reading taken at ``now_ms`` is to be recorded. A tenth of the interval
        early counts as due, so readings taken on the same cadence are none of them skipped."""
        slack = self.interval_ms // 10
        return self._last_ms is None or now_ms - self._last_ms >= self.interval_ms - slack

    def record(self, now_ms: int, totals: Mapping[str, int]) -> bool:
        """Keep ``totals`` as read at ``now_ms`` if due; True if kept."""
        if not self.due(now_ms):
            return False
        self._last_ms = now_ms
        for group, lag in totals.items():
            ring = self._points.get(group)
            if ring is None:
                ring = self._points[group] = deque(maxlen=self._capacity)
            ring.append(LagPoint(now_ms, lag))
        self._expire(now_ms)
        return True

    def _expire(self, now_ms: int) -> None:
        oldest = now_ms - self.window_ms
        for group in list(self._points):
            ring = self._points[group]
            while ring and ring[0].time_ms < oldest:
                ring.popleft()
            if not ring:
                del self._points[group]

    def points(self, group: str) -> list[LagPoint]:
        """The group's points, oldest first; none for a group never recorded."""
        return list(self._points.get(group, ()))

    def clear(self) -> None:
        """Forget everything (this controller is no longer active)."""
        self._points.clear()
        self._last_ms = None
