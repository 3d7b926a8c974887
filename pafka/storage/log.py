"""The log of one partition replica: an ordered list of segments, the last one active.

Invariants:
* offsets are dense and increasing across segments; ``log_start_offset <= high_watermark <=
  log_end_offset``;
* only batches that passed validation (whole, v2, CRC intact, within max.message.bytes) are
  written, so anything read back is what a producer sent, with its offset assigned;
* after an unclean shutdown everything past the recovery point is re-validated and the first
  bad batch ends the log.
"""

from __future__ import annotations

import bisect
import logging
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pafka.errors import InvalidRecordError, OffsetOutOfRangeError
from pafka.records.batch import BatchHeader, assign_offsets, iter_batches, validate
from pafka.storage import layout
from pafka.storage.checkpoints import read_epochs, write_epochs
from pafka.storage.config import LogConfig
from pafka.storage.epochs import LeaderEpochCache
from pafka.storage.segment import Segment

log = logging.getLogger(__name__)

MAX_RELATIVE_OFFSET = 2**31 - 1


@dataclass(frozen=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int


class Log:
    def __init__(self, directory: Path, config: LogConfig, segments: list[Segment]) -> None:
        self.directory = directory
        self.config = config
        self.segments = segments
        self.log_start_offset = segments[0].base_offset
        self._high_watermark = 0
        self.recovery_point = 0
        self.epochs = LeaderEpochCache(read_epochs(directory / layout.LEADER_EPOCH_CHECKPOINT))
        self.dirty = False

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        *,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        high_watermark: int = 0,
    ) -> Log:
        directory.mkdir(parents=True, exist_ok=True)
        marker = directory / layout.CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        marker.unlink(missing_ok=True)
        bases = layout.segment_base_offsets(directory)
        segments: list[Segment] = []
        cut = False
        for i, base in enumerate(bases):
            segment = Segment(directory, base, config.index_interval_bytes)
            if cut:
                log.warning("deleting segment %s after a corrupt tail", segment.log_path)
                segment.delete()
                continue
            ends_after_recovery = i + 1 == len(bases) or bases[i + 1] > recovery_point
            result = segment.load(validate=not clean and ends_after_recovery)
            if result.truncated:
                log.warning(
                    "truncated corrupt tail of %s at byte %d", segment.log_path, result.valid_bytes
                )
                cut = True
            segments.append(segment)
        if not segments:
            segments.append(Segment(directory, log_start_offset, config.index_interval_bytes))
        self = cls(directory, config, segments)
        self.log_start_offset = max(log_start_offset, segments[0].base_offset)
        self.epochs.truncate_from_end(self.log_end_offset)
        self._high_watermark = max(min(high_watermark, self.log_end_offset), self.log_start_offset)
        self.recovery_point = self.log_end_offset
        return self

    # -- positions -------------------------------------------------------------------------------

    @property
    def active(self) -> Segment:
        return self.segments[-1]

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
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # -- appending -------------------------------------------------------------------------------

    def append(self, records: bytes, *, leader_epoch: int, now_ms: int) -> AppendInfo:
        """Validate producer batches, assign offsets from the log end and write them."""
        headers = validate(records, self.config.max_message_bytes)
        first = self.log_end_offset
        count = sum(h.last_offset_delta + 1 for h in headers)
        self._maybe_roll(len(records), count, now_ms)
        data = assign_offsets(records, first, leader_epoch=leader_epoch)
        if self.epochs.assign(leader_epoch, first):
            self.write_epochs()
        self.active.append(data, list(iter_batches(data)))
        self.dirty = True
        return AppendInfo(first, first + count - 1, max(h.max_timestamp for h in headers))

    def append_as_follower(self, records: bytes, now_ms: int) -> AppendInfo | None:
        """Append a leader's batches keeping their offsets and epochs (replication)."""
        if not records:
            return None
        headers = validate(records, 2**31 - 1, from_client=False)
        if headers[0].base_offset != self.log_end_offset:
            raise InvalidRecordError(
                f"follower append at {headers[0].base_offset}, log ends at {self.log_end_offset}"
            )
        count = headers[-1].next_offset - headers[0].base_offset
        self._maybe_roll(len(records), count, now_ms)
        for h in headers:
            if self.epochs.assign(h.partition_leader_epoch, h.base_offset):
                self.write_epochs()
        self.active.append(records, list(iter_batches(records)))
        self.dirty = True
        return AppendInfo(
            headers[0].base_offset, headers[-1].last_offset, headers[-1].max_timestamp
        )

    def _maybe_roll(self, incoming_bytes: int, incoming_offsets: int, now_ms: int) -> None:
        active = self.active
        if active.size == 0:
            return
        if (
            active.size + incoming_bytes > self.config.segment_bytes
            or now_ms - active.created_ms >= self.config.segment_ms
            or self.log_end_offset + incoming_offsets - active.base_offset > MAX_RELATIVE_OFFSET
        ):
            self.roll()

    def roll(self) -> None:
        self.active.flush()
        self.segments.append(
            Segment(self.directory, self.log_end_offset, self.config.index_interval_bytes)
        )

    # -- reading ---------------------------------------------------------------------------------

    def read(
        self, offset: int, max_bytes: int, *, max_offset: int | None = None
    ) -> bytes | memoryview:
        """Whole batches from the one holding ``offset``: at least one if any, else up to
        ``max_bytes``; none whose base offset is at or past ``max_offset``."""
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside {self.log_start_offset}..{self.log_end_offset}"
            )
        i = max(bisect.bisect_right([s.base_offset for s in self.segments], offset) - 1, 0)
        for segment in self.segments[i:]:
            data = segment.read(max(offset, segment.base_offset), max_bytes, max_offset)
            if data:
                return data
        return b""

    def iter_headers(self, start_segment: int = 0) -> Iterator[BatchHeader]:
        for segment in self.segments[start_segment:]:
            for _, header in segment.iter_headers():
                yield header

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(timestamp, offset) of the first batch whose largest timestamp >= ``timestamp_ms``."""
        for segment in self.segments:
            found = segment.find_timestamp(timestamp_ms)
            if found is not None:
                return found
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        best: tuple[int, int] | None = None
        for segment in self.segments:
            for _, header in segment.iter_headers():
                if best is None or header.max_timestamp > best[0]:
                    best = (header.max_timestamp, header.base_offset)
        return best

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self.epochs.end_offset_for(epoch, self.log_end_offset)

    # -- shrinking -------------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Drop everything at or above ``offset`` (a follower diverged from its leader)."""
        if offset >= self.log_end_offset:
            return
        offset = max(offset, self.log_start_offset)
        while len(self.segments) > 1 and self.active.base_offset >= offset:
            self.segments.pop().delete()
        if self.active.base_offset >= offset:
            self.active.delete()
            self.segments[-1] = Segment(self.directory, offset, self.config.index_interval_bytes)
            self.segments[-1].load(validate=True)
        else:
            self.active.truncate_to(offset)
        self.epochs.truncate_from_end(offset)
        self.write_epochs()
        self._high_watermark = min(self._high_watermark, self.log_end_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)

    def apply_retention(self, now_ms: int) -> int:
        """Delete whole sealed segments past retention.ms or retention.bytes; never data above
        the high watermark, never the active segment."""
        deleted = 0
        total = self.size_bytes
        while len(self.segments) > 1 and self.segments[1].base_offset <= self._high_watermark:
            oldest = self.segments[0]
            too_old = (
                self.config.retention_ms >= 0
                and oldest.max_timestamp >= 0
                and now_ms - oldest.max_timestamp > self.config.retention_ms
            )
            too_big = (
                self.config.retention_bytes >= 0
                and total - oldest.size >= self.config.retention_bytes
            )
            if not (too_old or too_big):
                break
            self.segments.pop(0)
            total -= oldest.size
            oldest.delete()
            deleted += 1
            self.log_start_offset = self.segments[0].base_offset
        if deleted:
            self.epochs.truncate_from_start(self.log_start_offset)
            self.write_epochs()
        return deleted

    # -- durability ------------------------------------------------------------------------------

    def write_epochs(self) -> None:
        write_epochs(self.directory / layout.LEADER_EPOCH_CHECKPOINT, self.epochs.entries)

    def flush(self) -> None:
        if self.dirty:
            self.active.flush()
            self.dirty = False
        self.recovery_point = self.log_end_offset

    def close(self) -> None:
        self.flush()
        for segment in self.segments:
            segment.close()
        (self.directory / layout.CLEAN_SHUTDOWN_FILE).touch()

    def delete(self) -> None:
        for segment in self.segments:
            segment.close()
        shutil.rmtree(self.directory, ignore_errors=True)
