"""What the log cleaner cleans and what survives a clean: pure decisions over plain values.

A compacted log is cut in three by two offsets:

* ``[log start, first dirty)``: the clean section, already cleaned up to there (the cleaner's
  checkpoint);
* ``[first dirty, first uncleanable)``: the dirty section, whose keys the next clean maps;
* ``[first uncleanable, log end)``: never cleaned yet: the active segment, segments not wholly
  below the high watermark (a replica may still lose them to truncation, and a key's older
  value must not go before its newer one is safe), and segments with a record younger than
  ``min.compaction.lag.ms``.

Cut points are segment bases, so a clean reads and writes whole segments. A log is due once
its dirty section is more than ``min.cleanable.dirty.ratio`` of the cleanable log, or at once
when its oldest dirty record is older than ``max.compaction.lag.ms`` (KIP-354); among due logs
the dirtiest goes first, as in Kafka.

A clean rewrites ``[log start, end of the mapped keys)`` keeping, of each key, only the record
at its latest offset. A tombstone (a null value) is a record like any other while its key's
latest; the first clean that keeps it gives its batch a delete horizon ``delete.retention.ms``
ahead (KIP-534, in the batch itself, so merging segments never moves it), and the first clean
after the horizon removes it: a consumer reading the log from the start within that time sees
the delete. Records without a key are dropped, as Kafka's cleaner drops them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MAX_GROUP_OFFSET_SPAN = 2**31 - 1
LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class SegmentSummary:
    base_offset: int
    next_offset: int  # one past the last offset it may hold
    size: int
    max_timestamp: int  # -1 when no record carried one
    first_timestamp: int  # of its first batch, -1 when unknown or empty
    last_modified_ms: int
    index_size: int = 0


@dataclass(frozen=True)
class CleaningConfig:
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    delete_retention_ms: int = 24 * 60 * 60 * 1000
    segment_bytes: int = 1024 * 1024 * 1024
    segment_index_bytes: int = 10 * 1024 * 1024


@dataclass(frozen=True)
class Cleanable:
    """Where one log stands for the cleaner."""

    log_start_offset: int
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    dirty_bytes: int
    compaction_delay_ms: int  # how long the oldest dirty record is past max.compaction.lag.ms
    tombstones_due: bool = False  # a cleaned batch's delete horizon has passed

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0

    def due(self, config: CleaningConfig) -> bool:
        if self.tombstones_due and self.clean_bytes > 0:
            return True  # KIP-534: tombstones past their horizon go even with nothing dirty
        if self.dirty_bytes <= 0:
            return False
        return self.compaction_delay_ms > 0 or self.dirty_ratio > config.min_cleanable_dirty_ratio


def first_dirty_offset(checkpoint: int, log_start_offset: int, log_end_offset: int) -> int:
    """The checkpointed offset, or the log start when it is missing or out of the log."""
    if log_start_offset <= checkpoint <= log_end_offset:
        return checkpoint
    return log_start_offset


def cleanable(
    segments: Sequence[SegmentSummary],
    *,
    log_start_offset: int,
    checkpoint: int,
    high_watermark: int,
    now_ms: int,
    config: CleaningConfig,
    delete_horizon_ms: int | None = None,
) -> Cleanable:
    """Where the dirty section starts and ends; ``segments`` end with the active one.
    ``delete_horizon_ms`` is the earliest delete horizon the last clean left, if any."""
    log_end = segments[-1].next_offset if segments else log_start_offset
    first_dirty = first_dirty_offset(checkpoint, log_start_offset, log_end)
    uncleanable = segments[-1].base_offset if segments else log_start_offset
    young_after_ms = now_ms - config.min_compaction_lag_ms
    for segment in segments[:-1]:
        if segment.next_offset <= first_dirty:
            continue
        if segment.next_offset > high_watermark or (
            config.min_compaction_lag_ms > 0 and segment.max_timestamp > young_after_ms
        ):
            uncleanable = segment.base_offset
            break
    uncleanable = max(uncleanable, first_dirty)
    # Whole sealed segments ending by the first uncleanable offset: a checkpoint inside the
    # active segment or inside an unsafe one leaves nothing dirty.
    dirty = [s for s in segments[:-1] if first_dirty < s.next_offset <= uncleanable]
    clean_bytes = sum(s.size for s in segments if s.next_offset <= first_dirty)
    delay = 0
    if dirty and config.max_compaction_lag_ms < LONG_MAX:
        first = dirty[0].first_timestamp
        if first >= 0:
            delay = max(now_ms - config.max_compaction_lag_ms - first, 0)
    return Cleanable(
        log_start_offset=log_start_offset,
        first_dirty_offset=first_dirty,
        first_uncleanable_offset=uncleanable,
        clean_bytes=clean_bytes,
        dirty_bytes=sum(s.size for s in dirty),
        compaction_delay_ms=delay,
        tombstones_due=tombstones_expired(delete_horizon_ms, now_ms),
    )


def choose(candidates: Sequence[tuple[Cleanable, CleaningConfig]]) -> int | None:
    """Index of the log to clean next: overdue logs first (longest overdue), then the
    dirtiest of those past their ratio; None when none is due."""
    best: int | None = None
    best_key: tuple[int, float] = (0, 0.0)
    for i, (state, config) in enumerate(candidates):
        if not state.due(config):
            continue
        key = (state.compaction_delay_ms, state.dirty_ratio)
        if best is None or key > best_key:
            best, best_key = i, key
    return best


def group_segments(
    segments: Sequence[SegmentSummary], config: CleaningConfig
) -> list[list[SegmentSummary]]:
    """Consecutive segments merged into groups that each fit one segment after cleaning: at
    most ``segment.bytes`` of log and ``segment.index.bytes`` of index before cleaning, and an
    offset span a segment's relative offsets can address."""
    groups: list[list[SegmentSummary]] = []
    for segment in segments:
        if groups:
            group = groups[-1]
            if (
                sum(s.size for s in group) + segment.size <= config.segment_bytes
                and sum(s.index_size for s in group) + segment.index_size
                <= config.segment_index_bytes
                and segment.next_offset - 1 - group[0].base_offset <= MAX_GROUP_OFFSET_SPAN
            ):
                group.append(segment)
                continue
        groups.append([segment])
    return groups


def tombstones_expired(delete_horizon_ms: int | None, now_ms: int) -> bool:
    """Whether a batch's tombstones may go: its delete horizon is set and has passed."""
    return delete_horizon_ms is not None and now_ms >= delete_horizon_ms


def delete_horizon(
    current_ms: int | None, keeps_tombstones: bool, now_ms: int, retention_ms: int
) -> int | None:
    """A cleaned batch's delete horizon: the one it has, or, the first time it is cleaned with
    tombstones in it, ``delete.retention.ms`` from now; none once it holds no tombstone."""
    if not keeps_tombstones:
        return None
    if current_ms is not None:
        return current_ms
    return min(now_ms + retention_ms, LONG_MAX)


def keep_record(
    key_present: bool, offset: int, latest_offset: int, expired_tombstone: bool
) -> bool:
    """Whether a record survives a clean. ``latest_offset`` is the latest offset of its key
    in the map (-1 when the key is not mapped: the record is kept)."""
    if not key_present:
        return False
    if latest_offset > offset:
        return False
    return not expired_tombstone


AbortedRanges = dict[int, list[tuple[int, int]]]


def aborted_ranges(entries: Iterable[tuple[int, int, int]]) -> AbortedRanges:
    """Producer id -> [(first offset, marker offset)] of its aborted transactions."""
    ranges: AbortedRanges = {}
    for producer_id, first, last in entries:
        ranges.setdefault(producer_id, []).append((first, last))
    return ranges


def in_aborted_txn(ranges: AbortedRanges, producer_id: int, offset: int) -> bool:
    """Whether a transactional batch at ``offset`` belongs to an aborted transaction: Kafka's
    cleaner removes those (no read_committed consumer reads them; the marker stays)."""
    return any(first <= offset < last for first, last in ranges.get(producer_id, ()))
