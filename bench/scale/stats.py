"""The arithmetic of the scale benchmark: latency percentiles, how long a partition went with
a write outstanding and nothing acknowledged, CPU shares and how a figure grows with N."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bench.compare.results import percentile

# A figure whose growth exponent between two partition counts exceeds this grows worse than
# linearly (1.0 is linear; the margin absorbs a shared machine's noise).
SUPERLINEAR_EXPONENT = 1.2


@dataclass(frozen=True)
class Send:
    """One produced record: when it was sent and answered (monotonic seconds, shared by every
    process of the machine), and the error name if the answer refused it."""

    partition: tuple[int, int]  # (topic index, partition)
    sent_s: float
    answered_s: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class ProduceSummary:
    count: int
    acked: int
    errors: int
    unacknowledged: int
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    # The longest time some partition had a write outstanding with none of its writes
    # acknowledged meanwhile.
    longest_stall_s: float
    error_names: dict[str, int]


def stall_windows(sends: Iterable[Send], end_s: float) -> dict[tuple[int, int], float]:
    """Per partition, the longest interval during which one of its writes was outstanding and
    none of its writes was acknowledged.

    Writes to one partition are acknowledged in the order they were sent (an idempotent
    producer), so write k waited unanswered from the later of its send and the previous
    acknowledgement until its own acknowledgement (or ``end_s`` if none came). A refused write
    ends the wait like an acknowledgement would (it is counted as an error instead).
    """
    by_partition: dict[tuple[int, int], list[Send]] = {}
    for send in sends:
        by_partition.setdefault(send.partition, []).append(send)
    longest: dict[tuple[int, int], float] = {}
    for partition, records in by_partition.items():
        records.sort(key=lambda s: s.sent_s)
        last_answer = -math.inf
        worst = 0.0
        for record in records:
            answered_at = end_s if record.answered_s is None else record.answered_s
            worst = max(worst, answered_at - max(record.sent_s, last_answer))
            last_answer = max(last_answer, answered_at)
        longest[partition] = worst
    return longest


def summarize_produce(sends: Sequence[Send], end_s: float) -> ProduceSummary:
    latencies_us = sorted(
        round((s.answered_s - s.sent_s) * 1e6)
        for s in sends
        if s.answered_s is not None and s.error is None
    )
    error_names: dict[str, int] = {}
    for send in sends:
        if send.error is not None:
            error_names[send.error] = error_names.get(send.error, 0) + 1
    unacknowledged = sum(1 for s in sends if s.answered_s is None)
    windows = stall_windows(sends, end_s)
    return ProduceSummary(
        count=len(sends),
        acked=len(latencies_us),
        errors=sum(error_names.values()),
        unacknowledged=unacknowledged,
        p50_ms=percentile(latencies_us, 0.50) / 1000 if latencies_us else None,
        p99_ms=percentile(latencies_us, 0.99) / 1000 if latencies_us else None,
        max_ms=latencies_us[-1] / 1000 if latencies_us else None,
        longest_stall_s=max(windows.values(), default=0.0),
        error_names=error_names,
    )


def cpu_percent(ticks_before: int, ticks_after: int, ticks_per_s: int, elapsed_s: float) -> float:
    """Share of one core (100 = a whole core) used between two readings of utime+stime."""
    if elapsed_s <= 0 or ticks_per_s <= 0:
        raise ValueError("elapsed time and tick rate must be positive")
    return 100.0 * (ticks_after - ticks_before) / ticks_per_s / elapsed_s


def growth_exponents(points: Sequence[tuple[int, float | None]]) -> list[float]:
    """For each pair of neighbouring partition counts with a positive figure, the exponent k of
    value ∝ N^k between them (1 = linear)."""
    known = sorted((n, v) for n, v in points if v is not None and v > 0 and n > 0)
    exponents = []
    for (n1, v1), (n2, v2) in itertools.pairwise(known):
        if n2 > n1:
            exponents.append(math.log(v2 / v1) / math.log(n2 / n1))
    return exponents


def superlinear(points: Sequence[tuple[int, float | None]]) -> bool:
    return any(k > SUPERLINEAR_EXPONENT for k in growth_exponents(points))


@dataclass(frozen=True)
class DescriptorBudget:
    fits: bool
    needed: int
    limit: int

    def reason(self, partitions: int, replication_factor: int) -> str:
        verb = "fits" if self.fits else "does not fit"
        return (
            f"{partitions:,} partitions at RF {replication_factor} {verb}: about "
            f"{self.needed:,} descriptors per broker against RLIMIT_NOFILE {self.limit:,}"
        )


def descriptor_budget(
    partitions: int,
    replication_factor: int,
    brokers: int,
    descriptors_per_replica: float,
    limit: int,
    baseline: int = 200,
) -> DescriptorBudget:
    """Whether a broker hosting its share of the replicas stays under its descriptor limit
    (``baseline``: sockets, the interpreter's own files, ZooKeeper)."""
    per_broker = math.ceil(partitions * replication_factor / brokers)
    needed = baseline + math.ceil(per_broker * descriptors_per_replica)
    return DescriptorBudget(needed < limit, needed, limit)
