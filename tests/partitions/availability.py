"""Availability figures from time series: pure arithmetic, no I/O, no clock reads.

Times are seconds on one monotonic clock (``time.monotonic()`` is shared by every process on
the machine, namespaces included), so the client's acknowledgement times, the harness's cut
and heal times and its polls of the controllers line up without conversion.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence


def longest_gap(times: Iterable[float], start: float, end: float) -> float:
    """The longest stretch of [start, end] holding none of ``times`` (events outside the
    window are ignored; no event at all makes the whole window one gap)."""
    if end < start:
        raise ValueError(f"window ends before it starts: {start} > {end}")
    inside = sorted(t for t in times if start <= t <= end)
    edges = [start, *inside, end]
    return max(b - a for a, b in itertools.pairwise(edges))


def longest_overlap(samples: Mapping[str, Sequence[tuple[float, bool]]], minimum: int = 2) -> float:
    """The longest stretch during which at least ``minimum`` of the sampled parties reported
    active at once.

    Each party's state holds from one sample until its next (before its first sample it is
    inactive); the series ends at the last sample of any party. A failed poll is left out by
    the caller, so the last answer stands until the next one: an overlap is never hidden by a
    poll that went unanswered."""
    timeline = sorted((t, name, active) for name, series in samples.items() for t, active in series)
    if not timeline:
        return 0.0
    state: dict[str, bool] = {}
    longest = 0.0
    since: float | None = None
    for t, name, active in timeline:
        state[name] = active
        overlapping = sum(state.values()) >= minimum
        if overlapping and since is None:
            since = t
        elif not overlapping and since is not None:
            longest = max(longest, t - since)
            since = None
    if since is not None:
        longest = max(longest, timeline[-1][0] - since)
    return longest


def first_at_or_after(times: Iterable[float], moment: float) -> float | None:
    later = [t for t in times if t >= moment]
    return min(later) if later else None


def recovery(
    heal: float, full_isr: float | None, acks: Mapping[int, Sequence[float]], partitions: int
) -> float | None:
    """Seconds from the heal until every partition is back to its full ISR and has taken an
    acks=all write since; None when that never happened in the series.

    ``full_isr`` is when the last partition's ISR became full again (the heal itself if none
    ever shrank); a write acknowledged before it does not show that the partition accepts
    writes with its full ISR, so the clock runs to each partition's first ack after it."""
    if full_isr is None:
        return None
    ready = max(heal, full_isr)
    firsts = [first_at_or_after(acks.get(p, ()), ready) for p in range(partitions)]
    if any(f is None for f in firsts):
        return None
    return max([ready, *(f for f in firsts if f is not None)]) - heal
