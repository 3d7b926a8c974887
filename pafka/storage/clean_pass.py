"""One clean of one log, as the cleaner's worker process runs it: map, rewrite, commit.

Given a :class:`CleanPlan` (plain values, taken on the broker's event loop), the pass

1. opens its own descriptors on every planned segment and records what each file is (inode and
   size), refusing to go on if a segment shrank since the plan;
2. notes each producer's last batch in the whole log (that batch is kept, emptied if need be,
   so the producer's sequence numbers survive: idempotence still works after a clean);
3. maps the latest offset of every key in the dirty section, stopping where the offset map is
   full (the clean then reaches only that far);
4. rewrites each group of segments up to there (:func:`pafka.storage.cleaning.group_segments`)
   into one new segment under ``.cleaned`` names, keeping what
   :func:`pafka.storage.cleaning.keep_record` keeps, with offset and time indexes built as the
   log builds them;
5. for each group that changed, syncs the new files and commits the swap's manifest
   (:mod:`pafka.storage.swap`). A group where nothing went is left as it was.

The swaps themselves happen on the event loop, which owns the log's segment list. A clean never
reaches an open transaction, so every transactional batch it reads is decided: the batches of
aborted transactions (known from the txn indexes) go and are never mapped (an aborted record
must never hide a committed older value), as in Kafka's cleaner; committed transactions' records
are compacted like any others. Markers (control batches) stay.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pafka.errors import CorruptMessageError, KafkaStorageError
from pafka.records.batch import BatchHeader, check_batch, read_header
from pafka.records.filtering import empty_batch, rebuild, record_spans, records_body
from pafka.storage import cleaning, layout, swap
from pafka.storage.active_segment import ActiveSegment
from pafka.storage.files import FileCache
from pafka.storage.offset_map import OffsetMap, key_digest
from pafka.storage.segment_scan import scan_batches, scan_headers
from pafka.storage.throttle import Throttle

WRITE_BUFFER_BYTES = 1024 * 1024


class CleaningAborted(KafkaStorageError):
    """The log changed under the clean (truncated, or a segment removed); try again later."""


@dataclass(frozen=True)
class PlannedSegment:
    base_offset: int
    next_offset: int
    size: int
    last_modified_ms: int
    index_size: int = 0


@dataclass(frozen=True)
class CleanPlan:
    directory: str
    segments: tuple[PlannedSegment, ...]  # from the log start to the first uncleanable offset
    tail: tuple[PlannedSegment, ...]  # the rest of the log, read for producers' last batches
    first_dirty_offset: int
    first_uncleanable_offset: int
    now_ms: int
    config: cleaning.CleaningConfig
    index_interval_bytes: int
    map_memory_bytes: int
    io_max_bytes_per_second: float
    io_buffer_bytes: int
    pause_at: str = ""  # testing: stop at this point (see pause_hook)
    # (producer id, first offset, marker offset) of the aborted transactions, from the txn
    # indexes: their batches go.
    aborted_txns: tuple[tuple[int, int, int], ...] = ()


SegmentFileIds = tuple[swap.FileId | None, swap.FileId | None, swap.FileId | None]


@dataclass(frozen=True)
class CleanedGroup:
    base_offset: int
    replaced: tuple[int, ...]  # base offsets of the segments it replaces
    next_offset: int  # where the group ends: the next segment's base
    manifest: swap.SwapManifest


@dataclass
class CleanOutcome:
    end_offset: int  # the new first dirty offset
    groups: list[CleanedGroup] = field(default_factory=list)
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    map_utilization: float = 0.0
    elapsed_s: float = 0.0
    throttled_s: float = 0.0
    peak_memory_bytes: int = 0  # of the worker process, when it ran in one
    # The earliest delete horizon left in the cleaned section: a clean is due then.
    earliest_delete_horizon_ms: int | None = None


def run(plan: CleanPlan) -> CleanOutcome:
    """Clean the planned log; see the module docstring."""
    with _Pass(plan) as clean:
        try:
            return clean.run()
        except CorruptMessageError:
            # Bytes that stopped parsing because the log was truncated under the clean are a
            # reason to try again later, not corruption.
            if clean.changed_since_plan():
                raise CleaningAborted("a segment was truncated during the clean") from None
            raise


class _Pass:
    def __init__(self, plan: CleanPlan) -> None:
        self.plan = plan
        self.directory = Path(plan.directory)
        self.throttle = Throttle(plan.io_max_bytes_per_second, time.monotonic, time.sleep)
        self.fds: dict[int, int] = {}
        self.ids: dict[int, SegmentFileIds] = {}
        self.offsets = OffsetMap(plan.map_memory_bytes)
        self.last_batches: dict[int, int] = {}
        self.aborted = cleaning.aborted_ranges(plan.aborted_txns)
        self.outcome = CleanOutcome(end_offset=plan.first_dirty_offset)

    def __enter__(self) -> _Pass:
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self.fds.values():
            os.close(fd)

    def run(self) -> CleanOutcome:
        started = time.monotonic()
        plan = self.plan
        for segment in plan.segments + plan.tail:
            self.ids[segment.base_offset] = self._open(segment)
        self.last_batches = self._producers_last_batches()
        end = self._build_map()
        outcome = self.outcome
        outcome.end_offset = end
        outcome.map_utilization = self.offsets.utilization
        by_base = {s.base_offset: s for s in plan.segments if s.base_offset < end}
        for group in cleaning.group_segments(_summaries(list(by_base.values())), plan.config):
            cleaned = self._clean_group([by_base[s.base_offset] for s in group])
            if cleaned is not None:
                outcome.groups.append(cleaned)
                maybe_pause(plan, "after-manifest")
        outcome.elapsed_s = time.monotonic() - started
        outcome.throttled_s = self.throttle.slept_s
        return outcome

    def changed_since_plan(self) -> bool:
        every = {s.base_offset: s for s in self.plan.segments + self.plan.tail}
        for base, fd in self.fds.items():
            st = os.fstat(fd)
            if st.st_nlink == 0 or st.st_size < every[base].size:
                return True
        return False

    def _open(self, segment: PlannedSegment) -> SegmentFileIds:
        paths = layout.segment_files(self.directory, segment.base_offset)
        try:
            fd = os.open(paths[0], os.O_RDONLY)
        except FileNotFoundError as exc:
            raise CleaningAborted(f"segment {segment.base_offset} went away: {exc}") from exc
        self.fds[segment.base_offset] = fd
        st = os.fstat(fd)
        if st.st_size < segment.size:
            raise CleaningAborted(f"segment {segment.base_offset} shrank since the plan")
        return ((st.st_ino, st.st_size), swap.file_id(paths[1]), swap.file_id(paths[2]))

    def _batches(self, segment: PlannedSegment) -> Iterator[tuple[BatchHeader, memoryview]]:
        return scan_batches(
            self.fds[segment.base_offset], segment.size, self.plan.io_buffer_bytes, self.throttle
        )

    def _producers_last_batches(self) -> dict[int, int]:
        """Producer id -> base offset of its last data batch in the log (from the headers
        alone): it holds the producer's last sequence (Kafka's lastDataOffset); transaction
        markers are kept anyway."""
        last: dict[int, int] = {}
        for segment in self.plan.segments + self.plan.tail:
            for header in scan_headers(self.fds[segment.base_offset], segment.size):
                if header.producer_id >= 0 and not header.is_control:
                    last[header.producer_id] = header.base_offset
        return last

    def _build_map(self) -> int:
        """Fill the map from the dirty section; returns the offset it reached."""
        first_dirty = self.plan.first_dirty_offset
        offsets = self.offsets
        for segment in self.plan.segments:
            if segment.next_offset <= first_dirty:
                continue
            for header, batch in self._batches(segment):
                if header.last_offset < first_dirty or not self._mapped(header):
                    continue
                if offsets and len(offsets) + header.records_count > offsets.capacity:
                    return max(header.base_offset, first_dirty)
                check_batch(batch, 0, header)
                for span in record_spans(header, records_body(batch, header)):
                    if span.key is not None and span.offset >= first_dirty:
                        offsets.put(key_digest(span.key), span.offset)
        return self.plan.first_uncleanable_offset

    def _clean_group(self, members: list[PlannedSegment]) -> CleanedGroup | None:
        plan, outcome = self.plan, self.outcome
        base = members[0].base_offset
        paths = layout.cleaned_files(self.directory, base)
        for path in paths:  # leftovers of an earlier attempt
            path.unlink(missing_ok=True)
        writer = ActiveSegment(
            self.directory, base, plan.index_interval_bytes, FileCache(4), paths=paths
        )
        changed = False
        pending = bytearray()
        try:
            for member in members:
                for header, batch in self._batches(member):
                    outcome.bytes_read += header.size
                    kept = self._clean_batch(header, batch)
                    changed |= kept is not batch
                    if kept is not None:
                        pending += kept
                    if len(pending) >= WRITE_BUFFER_BYTES:
                        self._write(writer, pending)
                        pending = bytearray()
            self._write(writer, pending)
            if not changed:
                writer.close()
                swap.abandon(self.directory, base)
                return None
            writer.finish_time_index()
            writer.write_indexes()
            writer.flush()
        finally:
            writer.close()
        # As Kafka: the new segment was last modified when its newest part was (time
        # retention of an empty segment and ListOffsets v0 read it).
        modified_ms = max(m.last_modified_ms for m in members)
        os.utime(paths[0], ns=(modified_ms * 1_000_000, modified_ms * 1_000_000))
        cleaned = tuple(swap.file_id(p) for p in paths)
        if any(c is None for c in cleaned):
            raise KafkaStorageError(f"the cleaned files of segment {base} vanished")
        manifest = swap.SwapManifest(
            base_offset=base,
            cleaned=cleaned,  # type: ignore[arg-type]
            replaced={m.base_offset: self.ids[m.base_offset] for m in members},
        )
        maybe_pause(plan, "before-manifest")
        swap.commit(self.directory, manifest)
        return CleanedGroup(
            base, tuple(m.base_offset for m in members), members[-1].next_offset, manifest
        )

    def _clean_batch(self, header: BatchHeader, batch: memoryview) -> memoryview | bytes | None:
        """The batch as it goes into the cleaned segment: itself, rebuilt, emptied or None."""
        outcome, plan = self.outcome, self.plan
        outcome.records_read += header.records_count
        if self._aborted(header):
            return self._emptied(header, batch, has_records=True)
        if header.is_control:
            outcome.records_kept += header.records_count
            return batch
        check_batch(batch, 0, header)
        body = records_body(batch, header)
        spans = record_spans(header, body)
        expired = cleaning.tombstones_expired(header.delete_horizon_ms, plan.now_ms)
        kept = [
            span
            for span in spans
            if cleaning.keep_record(
                span.key is not None,
                span.offset,
                -1 if span.key is None else self.offsets.get(key_digest(span.key)),
                span.is_tombstone and expired,
            )
        ]
        outcome.records_kept += len(kept)
        horizon = cleaning.delete_horizon(
            header.delete_horizon_ms,
            any(span.is_tombstone for span in kept),
            plan.now_ms,
            plan.config.delete_retention_ms,
        )
        if horizon is not None and (
            outcome.earliest_delete_horizon_ms is None
            or horizon < outcome.earliest_delete_horizon_ms
        ):
            outcome.earliest_delete_horizon_ms = horizon
        if kept and len(kept) == len(spans) and horizon == header.delete_horizon_ms:
            return batch
        if kept:
            return rebuild(batch, header, body, kept, delete_horizon_ms=horizon)
        return self._emptied(header, batch, has_records=bool(spans))

    def _aborted(self, header: BatchHeader) -> bool:
        return (
            header.is_transactional
            and not header.is_control
            and cleaning.in_aborted_txn(self.aborted, header.producer_id, header.base_offset)
        )

    def _mapped(self, header: BatchHeader) -> bool:
        """Whether the batch's records enter the offset map: data of no transaction or of a
        committed one."""
        return not header.is_control and not self._aborted(header)

    def _emptied(
        self, header: BatchHeader, batch: memoryview, *, has_records: bool
    ) -> memoryview | bytes | None:
        """A batch none of whose records stay."""
        if header.producer_id >= 0 and self.last_batches[header.producer_id] == header.base_offset:
            # The producer's last: its sequence numbers stay (an empty batch as it is).
            return empty_batch(header) if has_records else batch
        return None  # an empty batch too, once its producer has written again

    def _write(self, writer: ActiveSegment, data: bytearray) -> None:
        if not data:
            return
        headers = []
        position = 0
        while position < len(data):
            header = read_header(data, position)
            headers.append((position, header))
            position += header.size
        writer.append(bytes(data), headers, self.plan.now_ms)
        self.throttle.account(len(data))
        self.outcome.bytes_written += len(data)


def _summaries(segments: list[PlannedSegment]) -> list[cleaning.SegmentSummary]:
    return [
        cleaning.SegmentSummary(
            s.base_offset, s.next_offset, s.size, -1, -1, s.last_modified_ms, s.index_size
        )
        for s in segments
    ]


def maybe_pause(plan: CleanPlan, point: str) -> None:
    """Testing only: at the point ``pause_at`` names, announce it with a marker file in the
    data directory and wait to be killed (the crash tests kill -9 the broker there)."""
    if plan.pause_at != point:
        return
    directory = Path(plan.directory)
    (directory.parent / f"cleaner-paused-at-{point}").write_text(directory.name)
    while True:
        time.sleep(3600)
