"""The log cleaner of one broker: picks the dirtiest compacted log, cleans it off the loop.

Every ``log.cleaner.backoff.ms`` (at once again after a clean) the cleaner summarises each
compacted log from memory (:func:`pafka.storage.cleaning.cleanable`), chooses one
(:func:`pafka.storage.cleaning.choose`), and hands a :class:`~pafka.storage.clean_pass.CleanPlan`
to a worker process, so cleaning uses another core and never holds the event loop or its GIL.
The worker (:mod:`pafka.storage.clean_worker`, one process per clean) maps, rewrites and
commits (:mod:`pafka.storage.clean_pass`); back on the loop, which
owns every log's segment list, each committed group is swapped in (renames only), or abandoned
when the log changed meanwhile; the swaps are then synced and their leftovers removed on a
thread. A worker dies with its broker, so a killed broker leaves at most an interrupted clean,
which recovery completes or removes (:mod:`pafka.storage.swap`).

A log whose clean fails on its data (a corrupt batch) is marked uncleanable and skipped until
the broker restarts, as Kafka does; one bad log never stops the others being cleaned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from pafka.errors import KafkaApiError, KafkaStorageError
from pafka.records.batch import BatchHeader
from pafka.storage import cleaning, swap, txn_index
from pafka.storage.active_segment import ActiveSegment
from pafka.storage.clean_pass import (
    CleanedGroup,
    CleaningAborted,
    CleanOutcome,
    CleanPlan,
    PlannedSegment,
    run,
)
from pafka.storage.log import Log
from pafka.storage.segment import Segment

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class CleanerSettings:
    """Kafka's broker settings of the cleaner (``log.cleaner.*``)."""

    enabled: bool = True
    dedupe_buffer_bytes: int = 128 * 1024 * 1024  # log.cleaner.dedupe.buffer.size
    io_max_bytes_per_second: float = float("inf")  # log.cleaner.io.max.bytes.per.second
    io_buffer_bytes: int = 512 * 1024  # log.cleaner.io.buffer.size
    backoff_ms: int = 15_000  # log.cleaner.backoff.ms
    pause_at: str = ""  # testing only: a point where the cleaner stops to be killed


@dataclass
class CleanerStats:
    """What the broker's metrics report (Kafka's LogCleaner and LogCleanerManager gauges)."""

    last_run_ms: int = 0  # wall clock of the last check, 0 before the first
    max_dirty_ratio: float = 0.0
    max_compaction_delay_ms: int = 0
    last_clean_elapsed_s: float = 0.0
    last_recopy_ratio: float = 0.0
    last_buffer_utilization: float = 0.0
    peak_memory_bytes: int = 0  # the largest any clean's worker reached
    cleans: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    uncleanable: set[TopicPartition] = field(default_factory=set)
    cleaned_at_ms: dict[TopicPartition, int] = field(default_factory=dict)
    # Each cleanable compacted log's delay past max.compaction.lag.ms at the last check (the
    # per-partition series an overdue-compaction alert names a partition by).
    compaction_delay_ms: dict[TopicPartition, int] = field(default_factory=dict)


Runner = Callable[[CleanPlan], Awaitable[CleanOutcome]]


async def run_in_worker_process(plan: CleanPlan) -> CleanOutcome:
    """Run a clean in a fresh worker process (the default runner)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pafka.storage.clean_worker",
        str(os.getpid()),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        out, _ = await process.communicate(pickle.dumps(plan))
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        raise
    if process.returncode != 0 or not out:
        raise WorkerFailed(f"the cleaner's worker exited with status {process.returncode}")
    outcome, error = pickle.loads(out)
    if error is not None:
        raise error
    assert isinstance(outcome, CleanOutcome)
    return outcome


async def run_in_thread(plan: CleanPlan) -> CleanOutcome:
    """Run a clean on a thread of this process (tests and tools)."""
    return await asyncio.to_thread(run, plan)


class WorkerFailed(KafkaStorageError):
    """The worker process died or answered nothing."""


class LogCleaner:
    def __init__(
        self,
        logs: Callable[[], dict[TopicPartition, Log]],
        settings: CleanerSettings,
        runner: Runner = run_in_worker_process,
    ) -> None:
        self._logs = logs
        self.settings = settings
        self.stats = CleanerStats()
        self._runner = runner

    async def run_forever(self) -> None:
        while True:
            try:
                cleaned = await self.clean_once(int(time.time() * 1000))
            except (KafkaApiError, OSError):
                log.exception("the log cleaner failed; it retries after its back-off")
                cleaned = None
            if cleaned is None:
                await asyncio.sleep(self.settings.backoff_ms / 1000)

    async def clean_once(self, now_ms: int) -> CleanOutcome | None:
        """Clean the log most in need, if any is due; its outcome, or None."""
        chosen = self._choose(now_ms)
        if chosen is None:
            return None
        key, target, state = chosen
        planned = self._plan(target, state, now_ms)
        plan = planned[0]
        try:
            outcome = await self._runner(plan)
        except WorkerFailed as exc:
            log.error("clean of %s-%d failed: %s", *key, exc)
            return None
        except CleaningAborted as exc:
            log.info("clean of %s-%d abandoned: %s", *key, exc)
            return None
        except (KafkaStorageError, OSError) as exc:
            log.error("clean of %s-%d failed, retried later: %s", *key, exc)
            return None
        except KafkaApiError as exc:
            # Its data cannot be cleaned (corrupt, or a codec this broker lacks): Kafka marks
            # such a partition uncleanable rather than retry it forever.
            log.error("%s-%d cannot be cleaned and is skipped from now on: %s", *key, exc)
            self.stats.uncleanable.add(key)
            return None
        installed = await self._install(key, target, planned[1], outcome)
        self._account(key, outcome, now_ms, installed)
        await asyncio.sleep(self._io_debt_s(outcome))
        return outcome

    def _io_debt_s(self, outcome: CleanOutcome) -> float:
        """How much longer the clean's I/O should have taken at the throttle's rate: each worker
        throttles only within its own clean, so short cleans back to back would outrun it."""
        limit = self.settings.io_max_bytes_per_second
        if limit <= 0 or limit == float("inf"):
            return 0.0
        return max((outcome.bytes_read + outcome.bytes_written) / limit - outcome.elapsed_s, 0.0)

    def _choose(self, now_ms: int) -> tuple[TopicPartition, Log, cleaning.Cleanable] | None:
        candidates = []
        for key, opened in list(self._logs().items()):
            if not opened.config.compacted or key in self.stats.uncleanable:
                continue
            state = cleaning.cleanable(
                _summaries(opened),
                log_start_offset=opened.log_start_offset,
                checkpoint=opened.cleaner_offset,
                # Never at or past an open transaction's first offset (Kafka's cleanableOffsets).
                high_watermark=opened.last_stable_offset,
                now_ms=now_ms,
                config=_cleaning_config(opened),
                delete_horizon_ms=opened.earliest_delete_horizon_ms,
            )
            candidates.append((key, opened, state))
        self.stats.last_run_ms = now_ms
        self.stats.max_dirty_ratio = max((c[2].dirty_ratio for c in candidates), default=0.0)
        self.stats.max_compaction_delay_ms = max(
            (c[2].compaction_delay_ms for c in candidates), default=0
        )
        self.stats.compaction_delay_ms = {c[0]: c[2].compaction_delay_ms for c in candidates}
        index = cleaning.choose([(c[2], _cleaning_config(c[1])) for c in candidates])
        return None if index is None else candidates[index]

    def _plan(
        self, target: Log, state: cleaning.Cleanable, now_ms: int
    ) -> tuple[CleanPlan, dict[int, Segment]]:
        cleaned: list[PlannedSegment] = []
        tail: list[PlannedSegment] = []
        sealed = {}
        for segment in target.segments:
            planned = PlannedSegment(
                segment.base_offset,
                segment.next_offset,
                segment.size,
                _modified_ms(segment),
                segment.offset_index.entries * segment.offset_index.entry_size,
            )
            if segment.base_offset < state.first_uncleanable_offset and not isinstance(
                segment, ActiveSegment
            ):
                cleaned.append(planned)
                sealed[segment.base_offset] = segment
            else:
                tail.append(planned)
        plan = CleanPlan(
            directory=str(target.directory),
            segments=tuple(cleaned),
            tail=tuple(tail),
            first_dirty_offset=state.first_dirty_offset,
            first_uncleanable_offset=state.first_uncleanable_offset,
            now_ms=now_ms,
            config=_cleaning_config(target),
            index_interval_bytes=target.config.index_interval_bytes,
            map_memory_bytes=self.settings.dedupe_buffer_bytes,
            io_max_bytes_per_second=self.settings.io_max_bytes_per_second,
            io_buffer_bytes=self.settings.io_buffer_bytes,
            pause_at=self.settings.pause_at,
            aborted_txns=tuple(
                (t.producer_id, t.first_offset, t.last_offset)
                for t in txn_index.collect_aborted(
                    target.txn_index_paths(target.log_start_offset),
                    target.log_start_offset,
                    state.first_uncleanable_offset,
                )
            ),
        )
        return plan, sealed

    async def _install(
        self,
        key: TopicPartition,
        target: Log,
        sealed: dict[int, Segment],
        outcome: CleanOutcome,
    ) -> bool:
        """Swap in every committed group; True when all went in."""
        directory = target.directory
        live = self._logs().get(key) is target
        done: list[CleanedGroup] = []
        dropped: list[CleanedGroup] = []
        for group in outcome.groups:
            old = [sealed[base] for base in group.replaced]
            if live and target.replace_segments(old, self._swapper(target, group)):
                done.append(group)
            else:
                dropped.append(group)
        await asyncio.to_thread(_settle, directory, done, dropped)
        return not dropped

    def _swapper(self, target: Log, group: CleanedGroup) -> Callable[[], Segment]:
        directory = target.directory

        def swap_files() -> Segment:
            swap.apply(directory, group.manifest, between=self._mid_swap_pause(directory))
            if self.settings.pause_at == "after-swap":
                _pause_here("after-swap", directory)
            return Segment.open_sealed(
                directory, group.base_offset, group.next_offset, target.files
            )

        return swap_files

    def _mid_swap_pause(self, directory: Path) -> Callable[[], None] | None:
        if self.settings.pause_at != "mid-swap":
            return None
        return lambda: _pause_here("mid-swap", directory)

    def _account(
        self, key: TopicPartition, outcome: CleanOutcome, now_ms: int, installed: bool
    ) -> None:
        stats = self.stats
        stats.cleans += 1
        stats.bytes_read += outcome.bytes_read
        stats.bytes_written += outcome.bytes_written
        stats.last_clean_elapsed_s = outcome.elapsed_s
        stats.last_recopy_ratio = (
            outcome.bytes_written / outcome.bytes_read if outcome.bytes_read else 0.0
        )
        stats.last_buffer_utilization = outcome.map_utilization
        stats.peak_memory_bytes = max(stats.peak_memory_bytes, outcome.peak_memory_bytes)
        stats.cleaned_at_ms[key] = now_ms
        target = self._logs().get(key)
        if installed and target is not None:
            target.set_cleaner_offset(outcome.end_offset)
            target.earliest_delete_horizon_ms = outcome.earliest_delete_horizon_ms
        log.info(
            "cleaned %s-%d up to offset %d: %d of %d records kept, %d -> %d bytes in %.2f s",
            *key, outcome.end_offset, outcome.records_kept, outcome.records_read,
            outcome.bytes_read, outcome.bytes_written, outcome.elapsed_s,
        )  # fmt: skip


def _settle(directory: Path, done: list[CleanedGroup], dropped: list[CleanedGroup]) -> None:
    try:
        for group in done:
            swap.finish(directory, group.manifest)
        for group in dropped:
            swap.abandon(directory, group.base_offset)
    except FileNotFoundError:
        if directory.exists():
            raise
        # The partition was deleted meanwhile, with the clean's leftovers.


def _pause_here(point: str, directory: Path) -> None:
    (directory.parent / f"cleaner-paused-at-{point}").write_text(directory.name)
    while True:
        time.sleep(3600)


def _summaries(target: Log) -> list[cleaning.SegmentSummary]:
    """The log's segments as the choice needs them, from memory; the first timestamp (one read)
    only of the first dirty segment, and only when max.compaction.lag.ms is set."""
    first_dirty = cleaning.first_dirty_offset(
        target.cleaner_offset, target.log_start_offset, target.log_end_offset
    )
    lag_set = target.config.max_compaction_lag_ms < cleaning.LONG_MAX
    summaries: list[cleaning.SegmentSummary] = []
    for segment in target.segments:
        first_timestamp = -1
        if (
            lag_set
            and segment.next_offset > first_dirty
            and not summaries_reached(summaries, first_dirty)
            and segment.size
        ):
            first_timestamp = _first_timestamp(segment.header_at(0))
        summaries.append(
            cleaning.SegmentSummary(
                segment.base_offset,
                segment.next_offset,
                segment.size,
                segment.max_timestamp,
                first_timestamp,
                0,
                segment.offset_index.entries * segment.offset_index.entry_size,
            )
        )
    return summaries


def _first_timestamp(header: BatchHeader) -> int:
    """A batch's first record's timestamp as far as its header tells: the base timestamp,
    unless it holds the log-append time or a delete horizon (then the max timestamp)."""
    if header.log_append_time or header.delete_horizon_ms is not None:
        return header.max_timestamp
    return header.base_timestamp


def summaries_reached(summaries: list[cleaning.SegmentSummary], first_dirty: int) -> bool:
    """Whether the first dirty segment is among ``summaries`` already."""
    return any(s.next_offset > first_dirty for s in summaries)


def _modified_ms(segment: Segment) -> int:
    try:
        return os.stat(segment.log_path).st_mtime_ns // 1_000_000
    except FileNotFoundError:
        return 0


def _cleaning_config(target: Log) -> cleaning.CleaningConfig:
    c = target.config
    return cleaning.CleaningConfig(
        min_cleanable_dirty_ratio=c.min_cleanable_dirty_ratio,
        min_compaction_lag_ms=c.min_compaction_lag_ms,
        max_compaction_lag_ms=c.max_compaction_lag_ms,
        delete_retention_ms=c.delete_retention_ms,
        segment_bytes=c.segment_bytes,
        segment_index_bytes=c.segment_index_bytes,
    )
