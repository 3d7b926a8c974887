"""The log of one partition replica: sealed segments, then one active segment.

Invariants:

* offsets are increasing across segments; ``log_start_offset <= high_watermark <=
  log_end_offset`` and ``recovery_point <= log_end_offset``;
* only batches that passed validation (whole, v2, CRC intact, within max.message.bytes) are
  written, so anything read back is what a producer sent, with its offset and epoch assigned;
* everything below the recovery point was fsynced; after an unclean shutdown everything above
  it is re-validated, and the first bad batch ends the log (:mod:`pafka.storage.recovery`);
* record data is read from the files for each request, never kept in Python objects.

Every public method maps ``OSError`` to :class:`KafkaStorageError`. The log is used from one
thread (the broker's event loop) except :meth:`Log.flush` and :meth:`Log.checkpoint`, which may
run on a worker thread: they fsync duplicated descriptors and read the state under a lock.
"""

from __future__ import annotations

import bisect
import itertools
import os
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import Concatenate, NamedTuple, ParamSpec, TypeVar

from pafka.errors import InvalidRecordError, KafkaStorageError, OffsetOutOfRangeError
from pafka.records.batch import BatchHeader, assign_offsets, iter_batches, validate
from pafka.storage import layout, producer_snapshot, recovery, retention, txn_index
from pafka.storage.active_segment import ActiveSegment
from pafka.storage.checkpoints import (
    PartitionOffsets,
    read_cleaner_offset,
    write_cleaner_offset,
    write_epochs,
    write_partition_offsets,
)
from pafka.storage.config import LogConfig
from pafka.storage.epochs import LeaderEpochCache
from pafka.storage.files import FileCache
from pafka.storage.producer_snapshot import SnapshotEntry
from pafka.storage.region import FileRegion
from pafka.storage.segment import Segment
from pafka.storage.writeback import Writeback

MAX_RELATIVE_OFFSET = 2**31 - 1
SHARED_FILES = FileCache()  # for logs opened without a LogManager

P = ParamSpec("P")
R = TypeVar("R")


def storage_errors(method: Callable[Concatenate[Log, P], R]) -> Callable[Concatenate[Log, P], R]:
    """Map OSError to KafkaStorageError: the storage boundary."""

    @wraps(method)
    def wrapper(self: Log, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except OSError as exc:
            raise KafkaStorageError(f"{self.directory.name}: {exc}") from exc

    return wrapper


@dataclass(frozen=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    bytes_written: int = 0
    records: int = 0


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class Log:
    def __init__(
        self, directory: Path, config: LogConfig, segments: list[Segment], files: FileCache
    ) -> None:
        self.directory = directory
        self.config = config
        self.segments = segments
        self.files = files
        self.log_start_offset = segments[0].base_offset
        self.recovery_point = 0
        self.epochs = LeaderEpochCache()
        self._high_watermark = 0
        self._bases = [s.base_offset for s in segments]
        self._unflushed: list[int] = []  # descriptors of sealed segments' files to fsync
        # Written to (appended, truncated) since the last flush: an idle log's flush is free.
        # What was on disk at open is durable already (recovery synced what it checked).
        self._dirty = False
        self._epochs_dirty = False
        self._unflushed_messages = 0
        self._lock = threading.Lock()
        self._checkpointed: PartitionOffsets | None = None
        # Compacted logs: where the cleaner's next dirty section starts, and when tombstones
        # it kept may go (KIP-534; known from the last clean, forgotten on restart as in Kafka).
        self.cleaner_offset = read_cleaner_offset(directory / layout.CLEANER_OFFSET_CHECKPOINT)
        self.earliest_delete_horizon_ms: int | None = None
        # The partition's producer state, written as a snapshot at each roll and at a clean
        # close (Kafka's takeSnapshot), so opening the log replays only what follows it.
        self.snapshot_source: Callable[[], Iterable[SnapshotEntry]] | None = None
        # The partition's last stable offset (open transactions); the cleaner stops there.
        self.stable_offset_source: Callable[[], int] | None = None
        # The broker's incremental writeback (a LogManager's logs).
        self.writeback: Writeback | None = None

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        *,
        clean_shutdown_known: bool | None = None,
        files: FileCache | None = None,
    ) -> Log:
        """Open (creating if needed) and recover the log in ``directory``.

        Clean shutdown is detected by the marker :meth:`close` writes, unless the caller knows.
        """
        # Not ``files or ...``: an empty cache is falsy (it has a length).
        files = SHARED_FILES if files is None else files
        try:
            state = recovery.recover(directory, config, files, clean_shutdown_known)
        except OSError as exc:
            raise KafkaStorageError(f"cannot open log {directory}: {exc}") from exc
        self = cls(directory, config, state.segments, files)
        self.log_start_offset = state.log_start_offset
        self.recovery_point = state.recovery_point
        self.epochs = state.epochs
        self._high_watermark = min(
            max(state.high_watermark, self.log_start_offset), self.log_end_offset
        )
        return self

    # -- positions -------------------------------------------------------------------------------

    @property
    def active(self) -> ActiveSegment:
        active = self.segments[-1]
        assert isinstance(active, ActiveSegment)
        return active

    @property
    def log_end_offset(self) -> int:
        return self.active.next_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        self._high_watermark = max(min(offset, self.log_end_offset), self.log_start_offset)

    @property
    def last_stable_offset(self) -> int:
        """The high watermark, held back to the first open transaction's start: the log
        cleaner never cleans at or past it (Kafka's firstUnstableOffset bound)."""
        source = self.stable_offset_source
        return self._high_watermark if source is None else min(source(), self._high_watermark)

    @property
    def leader_epoch_cache(self) -> LeaderEpochCache:
        return self.epochs

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # -- appending -------------------------------------------------------------------------------

    @storage_errors
    def append(
        self, records: bytes | memoryview, *, leader_epoch: int, now_ms: int, control: bool = False
    ) -> AppendInfo:
        """Validate producer batches (or, with ``control``, the leader's own transaction
        markers), assign offsets from the log end and write them."""
        headers = validate(records, self.config.max_message_bytes, from_client=not control)
        first = self.log_end_offset
        count = sum(h.last_offset_delta + 1 for h in headers)
        data = assign_offsets(records, first, leader_epoch=leader_epoch)
        self._write(data, count, now_ms)
        if self.epochs.assign(leader_epoch, first):
            self.epochs_changed()
        max_ts = max(h.max_timestamp for h in headers)
        records_n = sum(h.records_count for h in headers)
        return AppendInfo(first, first + count - 1, max_ts, len(data), records_n)

    @storage_errors
    def append_as_follower(self, records: bytes, now_ms: int = 0) -> AppendInfo | None:
        """Append a leader's batches keeping their offsets and epochs (replication)."""
        if not records:
            return None
        headers = validate(records, 2**31 - 1, from_client=False)
        if headers[0].base_offset < self.log_end_offset:
            raise InvalidRecordError(
                f"follower append at {headers[0].base_offset}, log ends at {self.log_end_offset}"
            )
        for before, after in itertools.pairwise(headers):
            if after.base_offset < before.next_offset:
                raise InvalidRecordError("follower batches overlap or go backwards")
        first = headers[0].base_offset
        self._write(records, headers[-1].next_offset - self.log_end_offset, now_ms)
        changed = False
        for h in headers:
            changed |= self.epochs.assign(h.partition_leader_epoch, h.base_offset)
        if changed:
            self.epochs_changed()
        records_n = sum(h.records_count for h in headers)
        max_ts = max(h.max_timestamp for h in headers)
        return AppendInfo(first, headers[-1].last_offset, max_ts, len(records), records_n)

    def _write(self, data: bytes, offsets: int, now_ms: int) -> None:
        if self._should_roll(len(data), offsets, now_ms):
            self.roll(now_ms)
        active = self.active
        batches = list(iter_batches(data))
        with self._lock:
            active.append(data, batches, now_ms)
            self._dirty = True
        if self.writeback is not None:
            active.written_back_to = self.writeback.advance(
                active.log.fd(), active.written_back_to, active.size
            )
        self._unflushed_messages += sum(h.records_count for _, h in batches)
        if self._unflushed_messages >= self.config.flush_messages:
            self.flush()

    def _should_roll(self, incoming_bytes: int, incoming_offsets: int, now_ms: int) -> bool:
        active = self.active
        if active.size == 0:
            return False
        entries_limit = self.config.segment_index_bytes // active.time_index.entry_size
        roll_ms = self.config.segment_ms
        if self.config.compacted:
            # The active segment is never cleaned: it rolls in time for max.compaction.lag.ms.
            roll_ms = min(roll_ms, self.config.max_compaction_lag_ms)
        return (
            active.size + incoming_bytes > self.config.segment_bytes
            or now_ms - active.created_ms >= roll_ms
            or self.log_end_offset + incoming_offsets - active.base_offset > MAX_RELATIVE_OFFSET
            or max(active.offset_index.entries, active.time_index.entries) >= entries_limit - 1
        )

    @storage_errors
    def roll(self, now_ms: int = 0) -> None:
        """Seal the active segment and start a new one at the log end (no-op when empty)."""
        old = self.active
        start = self.log_end_offset
        if old.size == 0:
            return
        with self._lock:  # one step: a flush on a worker thread must find an active segment
            self._unflushed += old.sync_handles()
            self.segments[-1] = old.seal(self.files)
            new = ActiveSegment(self.directory, start, self.config.index_interval_bytes, self.files)
            new.created_ms = now_ms
            self.segments.append(new)
            self._bases.append(start)
        self._take_snapshot(start)

    def _take_snapshot(self, offset: int) -> None:
        if self.snapshot_source is not None:
            producer_snapshot.write(self.directory, offset, self.snapshot_source())

    # -- reading ---------------------------------------------------------------------------------

    @storage_errors
    def read(
        self, offset: int, max_bytes: int, *, max_offset: int | None = None
    ) -> bytes | memoryview:
        """Whole batches from the one holding ``offset``: at least one if any, else up to
        ``max_bytes``; none whose base offset is at or past ``max_offset``."""
        for segment, start in self._segments_to_read(offset, max_offset):
            data = segment.read(start, max_bytes, max_offset)
            if data:
                return data
        return b""

    @storage_errors
    def read_for_send(
        self, offset: int, max_bytes: int, *, max_offset: int | None, min_region_bytes: int
    ) -> bytes | FileRegion:
        """The bytes :meth:`read` returns, as a region of the segment file when they are
        ``min_region_bytes`` or more: for a response written to a socket with ``sendfile``."""
        for segment, start in self._segments_to_read(offset, max_offset):
            data = segment.read_for_send(start, max_bytes, max_offset, min_region_bytes)
            if data:
                return data
        return b""

    def _segments_to_read(
        self, offset: int, max_offset: int | None
    ) -> Iterator[tuple[Segment, int]]:
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside {self.log_start_offset}..{self.log_end_offset}"
            )
        i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        for segment in self.segments[i:]:
            if max_offset is not None and segment.base_offset >= max_offset:
                break
            yield segment, max(offset, segment.base_offset)

    def iter_headers_from(self, offset: int) -> Iterator[BatchHeader]:
        """Headers of the batches ending at or after ``offset`` (reads the files)."""
        i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        for header in self.iter_headers(i):
            if header.last_offset >= offset:
                yield header

    def iter_headers(self, start_segment: int = 0) -> Iterator[BatchHeader]:
        """Headers of the batches from segment index ``start_segment`` on (reads the files)."""
        for segment in self.segments[start_segment:]:
            for _, header in segment.iter_headers():
                yield header

    # -- transactions ----------------------------------------------------------------------------

    def txn_index_paths(self, offset: int) -> list[Path]:
        """The transaction indexes of the segment holding ``offset`` and those after it."""
        i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        return [layout.txn_index_file(self.directory, b) for b in self._bases[i:]]

    def read_upper_bound(self, offset: int) -> int:
        """Past what a read at ``offset`` can return: the base of the segment after the one it
        reads from, else the log end (the bound of Kafka's search for aborted transactions)."""
        i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        while i + 1 < len(self.segments) and self.segments[i].next_offset <= offset:
            i += 1
        return self._bases[i + 1] if i + 1 < len(self._bases) else self.log_end_offset

    @storage_errors
    def index_aborted_txn(self, entry: txn_index.AbortedTxn) -> None:
        """Record an aborted transaction in the index of the segment holding its marker."""
        i = max(bisect.bisect_right(self._bases, entry.last_offset) - 1, 0)
        txn_index.append(layout.txn_index_file(self.directory, self._bases[i]), entry)

    @storage_errors
    def truncate_txn_indexes(self, offset: int) -> None:
        """Forget the aborted transactions whose marker is at or above ``offset`` (their
        state is being rebuilt from the log from there)."""
        for base in self._bases[max(bisect.bisect_right(self._bases, offset) - 1, 0) :]:
            txn_index.truncate(layout.txn_index_file(self.directory, base), offset)

    @storage_errors
    def offset_for_timestamp(self, timestamp_ms: int) -> TimestampOffset | None:
        """(timestamp, offset) of the first record whose timestamp >= ``timestamp_ms``."""
        for segment in self.segments:
            found = segment.find_timestamp(timestamp_ms, self.log_start_offset)
            if found is not None:
                return TimestampOffset(*found)
        return None

    def max_timestamp_offset(self) -> TimestampOffset | None:
        """(largest timestamp, base offset of the batch holding it), from segment metadata."""
        best: TimestampOffset | None = None
        for segment in self.segments:
            if segment.max_timestamp >= 0 and (best is None or segment.max_timestamp > best[0]):
                best = TimestampOffset(segment.max_timestamp, segment.max_timestamp_offset)
        return best

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self.epochs.end_offset_for(epoch, self.log_end_offset)

    # -- shrinking -------------------------------------------------------------------------------

    @storage_errors
    def truncate_to(self, offset: int) -> None:
        """Drop everything at or above ``offset`` (a follower diverged from its leader)."""
        if offset >= self.log_end_offset:
            return
        offset = max(offset, self.log_start_offset)
        with self._lock:
            while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
                self.segments.pop().delete()
                self._bases.pop()
            last = self.segments[-1]
            if not isinstance(last, ActiveSegment):
                last.close()
                last = ActiveSegment(
                    self.directory, last.base_offset, self.config.index_interval_bytes, self.files
                )
                last.load(check_crc=False, rebuild_indexes=False)
                self.segments[-1] = last
            if last.base_offset >= offset:
                last.delete()
                last = ActiveSegment(
                    self.directory, offset, self.config.index_interval_bytes, self.files
                )
                self.segments[-1] = last
                self._bases[-1] = offset
            else:
                last.truncate_to(offset)
                txn_index.truncate(layout.txn_index_file(self.directory, last.base_offset), offset)
        self.epochs.truncate_from_end(offset)
        self.epochs_changed()
        producer_snapshot.delete_outside(self.directory, self.log_start_offset, self.log_end_offset)
        self._high_watermark = min(self._high_watermark, self.log_end_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self._dirty = True
        self._truncate_cleaner_offset()

    @storage_errors
    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every record and restart the log, empty, at ``offset``: a follower whose log
        ends below its leader's log start has nothing the leader can continue from."""
        with self._lock:
            doomed, self.segments = self.segments, []
            for segment in doomed:
                segment.delete()
            self.segments = [
                ActiveSegment(self.directory, offset, self.config.index_interval_bytes, self.files)
            ]
            producer_snapshot.delete_outside(self.directory, offset, offset - 1)
            self._bases = [offset]
            self.log_start_offset = offset
            self._high_watermark = offset
            self.recovery_point = offset
        self.epochs = LeaderEpochCache()
        self.epochs_changed()
        self._dirty = True
        self._truncate_cleaner_offset()

    @storage_errors
    def apply_retention(self, now_ms: int) -> int:
        """Delete whole sealed segments past retention.ms or retention.bytes; never data at or
        above the high watermark, never the active segment. Returns how many were deleted."""
        count = retention.segments_to_delete(
            [
                retention.SegmentInfo(s.size, _largest_timestamp(s), s.next_offset)
                for s in self.segments
            ],
            self.config,
            now_ms,
            self._high_watermark,
            self.log_start_offset,
        )
        self._delete_oldest(count)
        return count

    @storage_errors
    def delete_records_before(self, offset: int) -> int:
        """Advance the log start offset to ``offset`` (DeleteRecords); drops whole segments
        below it. Returns the new log start offset."""
        offset = min(offset, self._high_watermark)
        if offset <= self.log_start_offset:
            return self.log_start_offset
        doomed = 0
        while doomed + 1 < len(self.segments) and self.segments[doomed + 1].base_offset <= offset:
            doomed += 1
        self._delete_oldest(doomed)
        self.log_start_offset = offset
        self.epochs.truncate_from_start(offset)
        self.epochs_changed()
        return offset

    def _delete_oldest(self, count: int) -> None:
        if not count:
            return
        with self._lock:
            doomed = self.segments[:count]
            del self.segments[:count]
            del self._bases[:count]
            self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        for segment in doomed:
            segment.delete()
        producer_snapshot.delete_outside(self.directory, self.log_start_offset, self.log_end_offset)
        self.epochs.truncate_from_start(self.log_start_offset)
        self.epochs_changed()

    def replace_segments(self, old: list[Segment], swap_files: Callable[[], Segment]) -> bool:
        """Put the segment ``swap_files`` makes in place of ``old``, consecutive sealed segments
        of this log (a clean's swap). False, with nothing done, when they are no longer there
        as they were (truncated, deleted, rolled over)."""
        if not old:
            return False
        try:
            first = next(i for i, s in enumerate(self.segments) if s is old[0])
        except StopIteration:
            return False
        last = first + len(old)
        if self.segments[first:last] != old or last >= len(self.segments):
            return False
        # The new segment takes the first old one's name: its transaction index gets the
        # others' entries first (a crash before the swap leaves duplicates, which readers
        # of aborted transactions tolerate, never a loss).
        merged = layout.txn_index_file(self.directory, old[0].base_offset)
        for segment in old[1:]:
            for entry in txn_index.read(layout.txn_index_file(self.directory, segment.base_offset)):
                txn_index.append(merged, entry)
        with self._lock:
            for segment in old:
                segment.close()  # forget cached descriptors: the names change hands
            self.segments[first:last] = [swap_files()]
            self._bases[first:last] = [old[0].base_offset]
        for segment in old[1:]:
            layout.txn_index_file(self.directory, segment.base_offset).unlink(missing_ok=True)
        return True

    def _truncate_cleaner_offset(self) -> None:
        """After a truncation: offsets written from the log end on are new records, never
        cleaned, so the cleaner's checkpoint comes down to it (Kafka's
        maybeTruncateCheckpoint); left above, a tombstone written there would count as cleaned
        and could go while the value it deletes stays."""
        if self.cleaner_offset > self.log_end_offset:
            self.set_cleaner_offset(self.log_end_offset)

    @storage_errors
    def set_cleaner_offset(self, offset: int) -> None:
        """Record where the next clean's dirty section starts."""
        if offset != self.cleaner_offset:
            write_cleaner_offset(self.directory / layout.CLEANER_OFFSET_CHECKPOINT, offset)
            self.cleaner_offset = offset

    # -- durability ------------------------------------------------------------------------------

    def epochs_changed(self) -> None:
        """The leader-epoch cache changed: written (and synced) by the next checkpoint, off the
        request path, as later Kafka versions do. A crash before it loses nothing: recovery
        cuts the cache to the log and rebuilds it from the batches past the recovery point."""
        self._epochs_dirty = True

    @storage_errors
    def flush(self) -> None:
        """fsync everything appended so far and advance the recovery point to it."""
        with self._lock:
            if not self._dirty and not self._unflushed:
                return
            end = self.log_end_offset
            pending, self._unflushed = self._unflushed, []
            pending += self.active.sync_handles()
            self._dirty = False
        for fd in pending:
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._unflushed_messages = 0
        self.recovery_point = max(self.recovery_point, end)

    @storage_errors
    def checkpoint(self) -> None:
        """Flush, then record log start, recovery point and high watermark if they changed."""
        self.flush()
        if self._epochs_dirty:
            self._epochs_dirty = False
            entries = list(self.epochs.entries)
            write_epochs(self.directory / layout.LEADER_EPOCH_CHECKPOINT, entries)
        offsets = PartitionOffsets(self.log_start_offset, self.recovery_point, self._high_watermark)
        if offsets != self._checkpointed:
            write_partition_offsets(self.directory / layout.PARTITION_OFFSETS_CHECKPOINT, offsets)
            self._checkpointed = offsets

    @storage_errors
    def close(self) -> None:
        """Flush, checkpoint and mark the shutdown clean; the log is unusable afterwards."""
        self.active.finish_time_index()
        self._take_snapshot(self.log_end_offset)
        self._dirty = True
        self.checkpoint()
        for segment in self.segments:
            segment.close()
        (self.directory / layout.CLEAN_SHUTDOWN_FILE).touch()

    def close_uncleanly(self) -> None:
        """Release descriptors without flushing or marking a clean shutdown (tests, crashes)."""
        for fd in self._unflushed:
            os.close(fd)
        self._unflushed = []
        for segment in self.segments:
            segment.close()

    @storage_errors
    def delete(self) -> None:
        """Remove the log's directory and everything in it."""
        self.close_uncleanly()
        shutil.rmtree(self.directory, ignore_errors=True)


def _largest_timestamp(segment: Segment) -> int:
    """Kafka's ``largestTimestamp``: of the records, or, in a segment without any (one a clean
    emptied), the file's modification time, so retention can still take it."""
    if segment.max_timestamp >= 0:
        return segment.max_timestamp
    return os.stat(segment.log_path).st_mtime_ns // 1_000_000
