"""What every client loop shares: the send schedule, chunked progress, the consume tally.

Pacing follows a sleep-until schedule: record ``i`` of a worker is due ``i / rate`` seconds after
the worker starts, and each wake-up sends everything already due in one batch. Sleeping a fixed
gap per record instead would drift by every record's own send time, so the achieved rate would
fall below the asked one exactly when the system is slow.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections.abc import AsyncIterator, Iterable, Iterator

from bench.compare.driver import ConsumeStats, Progress, Workload, latencies_us
from pafka.errors import ConfigError, PafkaError

# How many records a worker reports at once, and how often at most: a progress bar needs no
# finer grain. Each report wakes the worker's queue thread and the runner; a hundred a second
# per worker were thousands of context switches a second on the cores the servers share.
PROGRESS_CHUNK_RECORDS = 1000
PROGRESS_INTERVAL_S = 0.1
# A paced worker wakes at most this often and sends everything due by then in one batch: waking
# for every record instead (one every ~2 us at 450k records/s), or going straight back for the
# few records due while the last batch went out, cost the Python clients more CPU in wake-ups
# and tiny batches than in records, on the cores the servers share.
PACING_TICK_S = 0.001
# Latencies of records sent in a consumer's first second are left out (see ConsumeTally).
WARMUP_S = 1.0
# With a duration, consumers read on this long after the producers' deadline.
DRAIN_S = 5.0


def send_deadline(workload: Workload) -> float:
    """The ``time.monotonic()`` at which a producer starting now stops: never without a
    duration."""
    if workload.duration_s is None:
        return math.inf
    return time.monotonic() + workload.duration_s


def read_deadline(workload: Workload) -> float:
    """The ``time.monotonic()`` at which a consumer starting now stops waiting for records."""
    return send_deadline(workload) + DRAIN_S


def worker_rate_per_s(rate_per_s: float | None, workers: int) -> float | None:
    """One worker's share of a paced total rate; None stays unpaced."""
    if workers < 1:
        raise ConfigError(f"workers must be at least 1, got {workers}")
    if rate_per_s is None:
        return None
    if not rate_per_s > 0 or math.isinf(rate_per_s):
        raise ConfigError(f"rate_per_s must be a positive finite number, got {rate_per_s}")
    return rate_per_s / workers


def plan_batch(
    rate_per_s: float | None, sent: int, count: int, elapsed_s: float, max_batch: int
) -> tuple[int, float]:
    """How many records to send now, or (0, seconds to wait) until the next one is due.

    Unpaced (``rate_per_s`` None) sends full batches back to back.
    """
    if max_batch < 1:
        raise ConfigError(f"max_batch must be at least 1, got {max_batch}")
    remaining = count - sent
    if remaining <= 0:
        return 0, 0.0
    if rate_per_s is None:
        return min(max_batch, remaining), 0.0
    # Record i is due at i / rate, so by elapsed_s the records 0..floor(elapsed_s * rate) are due;
    # the epsilon keeps a wake-up at exactly i / rate from rounding down to i - 1.
    due = min(count, math.floor(elapsed_s * rate_per_s + 1e-9) + 1)
    if due > sent:
        return min(max_batch, due - sent), 0.0
    return 0, max(0.0, sent / rate_per_s - elapsed_s)


class _Schedule:
    """Which batch is due next: everything due at each wake-up, at most one wake-up per
    PACING_TICK_S when paced (a backlog goes out in ``max_batch`` pieces without waiting)."""

    def __init__(self, count: int, rate_per_s: float | None, max_batch: int) -> None:
        self.count, self.rate_per_s, self.max_batch = count, rate_per_s, max_batch
        self.start = self.next_wake = time.monotonic()
        self.sent = 0

    @property
    def done(self) -> bool:
        return self.sent >= self.count

    def next(self) -> tuple[int, float]:
        """(records to send now, 0.0) or (0, seconds to wait first)."""
        now = time.monotonic()
        if self.rate_per_s is not None and now < self.next_wake:
            return 0, self.next_wake - now
        n, wait_s = plan_batch(
            self.rate_per_s, self.sent, self.count, now - self.start, self.max_batch
        )
        if n == 0:
            return 0, max(wait_s, PACING_TICK_S)
        self.sent += n
        if n < self.max_batch:
            self.next_wake = now + PACING_TICK_S
        return n, 0.0


def paced_batches(count: int, rate_per_s: float | None, max_batch: int) -> Iterator[int]:
    """Batch sizes to send, sleeping (blocking) until each batch is due."""
    schedule = _Schedule(count, rate_per_s, max_batch)
    while not schedule.done:
        n, wait_s = schedule.next()
        if n:
            yield n
        else:
            time.sleep(wait_s)


async def apaced_batches(
    count: int, rate_per_s: float | None, max_batch: int
) -> AsyncIterator[int]:
    """:func:`paced_batches` for asyncio clients: waits without blocking the loop."""
    schedule = _Schedule(count, rate_per_s, max_batch)
    while not schedule.done:
        n, wait_s = schedule.next()
        if n:
            yield n
        else:
            await asyncio.sleep(wait_s)


class ChunkedProgress:
    """Forwards counts to ``progress`` in chunks of at least ``chunk_records``, at most once
    per ``interval_s``."""

    def __init__(
        self,
        progress: Progress,
        chunk_records: int = PROGRESS_CHUNK_RECORDS,
        interval_s: float = PROGRESS_INTERVAL_S,
    ) -> None:
        self._progress = progress
        self._chunk_records = chunk_records
        self._interval_s = interval_s
        self._pending = 0
        self._next_at = 0.0

    def add(self, records: int) -> None:
        self._pending += records
        if self._pending >= self._chunk_records and (now := time.monotonic()) >= self._next_at:
            self._next_at = now + self._interval_s
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._progress(self._pending)
            self._pending = 0


class ConsumeTally:
    """Records, bytes and end-to-end latencies of a consumer, with an idle limit.

    Its ``seconds`` run from the earliest send time among the records read (their stamps) to
    the last arrival: the window in which this consumer's records flowed, leaving out the time a
    ready consumer waits for producer processes to start. A consumer that read nothing reports
    the time since it was ready.

    Latencies leave out records sent in the first ``warmup_s`` after the first record this
    consumer read, as the OpenMessaging Benchmark discards its warm-up phase: the first records
    of a run wait for clients to connect and look up partition leaders, which is client start-up,
    not the system's steady state. A run shorter than the warm-up keeps every latency.
    """

    def __init__(
        self, progress: Progress, idle_timeout_s: float, warmup_s: float = WARMUP_S
    ) -> None:
        self.records = 0
        self.bytes = 0
        self.latencies_us: list[int] = []
        self._warmup_latencies_us: list[int] = []
        self._warmup_ns = int(warmup_s * 1e9)
        self._progress = ChunkedProgress(progress)
        self._idle_timeout_s = idle_timeout_s
        self._started = time.monotonic()
        self._last_record = self._started
        self._first_sent_ns: int | None = None
        self._last_arrival_ns = 0

    def add(self, payloads: Iterable[bytes]) -> None:
        # One clock reading per batch: every record of a batch arrived at the same moment.
        now_ns = time.time_ns()
        items = payloads if isinstance(payloads, list | tuple) else list(payloads)
        if not items:
            return
        batch = latencies_us(items, now_ns)
        self.records += len(batch)
        self.bytes += sum(map(len, items))
        oldest_ns = now_ns - max(batch) * 1000
        if self._first_sent_ns is None or oldest_ns < self._first_sent_ns:
            self._first_sent_ns = oldest_ns
        # Records sent before the warm-up ended are those waiting longer than this.
        warm_after_us = (now_ns - self._first_sent_ns - self._warmup_ns) // 1000
        if warm_after_us < 0:
            self._warmup_latencies_us += batch
        elif max(batch) <= warm_after_us:
            self.latencies_us += batch
        else:
            self.latencies_us += (lat for lat in batch if lat <= warm_after_us)
            self._warmup_latencies_us += (lat for lat in batch if lat > warm_after_us)
        self._last_arrival_ns = now_ns
        self._last_record = time.monotonic()
        self._progress.add(len(batch))

    def idle_for_too_long(self) -> bool:
        return time.monotonic() - self._last_record > self._idle_timeout_s

    def raise_if_idle(self, consumer: str, count: int) -> None:
        """Give up loudly when nothing arrived for the idle timeout while records are due."""
        if self.idle_for_too_long():
            raise PafkaError(
                f"{consumer}: no record for {self._idle_timeout_s:.0f}s, "
                f"{self.records} of {count} read"
            )

    def stats(self) -> ConsumeStats:
        self._progress.flush()
        if self._first_sent_ns is None:
            seconds = time.monotonic() - self._started
        else:
            # At least a microsecond: a record cannot arrive before it was sent.
            seconds = max(self._last_arrival_ns - self._first_sent_ns, 1000) / 1e9
        return ConsumeStats(
            records=self.records,
            bytes=self.bytes,
            seconds=seconds,
            latencies_us=self.latencies_us or self._warmup_latencies_us,
        )


def partition_cycle(worker: int, partitions: int, run_records: int = 1) -> Iterator[int]:
    """Round-robin partition order for one producer, ``run_records`` records to a partition at
    a time (see :func:`bench.compare.workloads.run_records`), each worker starting one further
    along so that workers sending the same number of records fill the partitions evenly."""
    if partitions < 1:
        raise ConfigError(f"partitions must be at least 1, got {partitions}")
    if run_records < 1:
        raise ConfigError(f"run_records must be at least 1, got {run_records}")
    start = worker % partitions
    turns = [*range(start, partitions), *range(start)]
    return itertools.cycle([p for p in turns for _ in range(run_records)])
