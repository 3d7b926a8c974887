"""Which old segments retention deletes: a pure decision over plain segment summaries.

Kafka's three rules, applied to the oldest sealed segments in order, stopping at the first
segment that no rule condemns:

* retention.ms: the segment's largest timestamp is older than ``now - retention.ms``;
* retention.bytes: the log without the segment is still at least retention.bytes;
* log start: every offset of the segment is below the log start offset (DeleteRecords).

The first two apply only when ``delete`` is in the log's ``cleanup.policy``: a compacted log
keeps every key's latest value however old (its cleaner removes what is superseded).

Never the active (last) segment, and never a segment holding offsets at or above the high
watermark, so consumers never lose data they could not yet read.
"""

from __future__ import annotations

from dataclasses import dataclass

from pafka.storage.config import LogConfig


@dataclass(frozen=True)
class SegmentInfo:
    size: int
    max_timestamp: int  # -1 when no batch carried a timestamp
    next_offset: int  # one past the last offset the segment may hold


def segments_to_delete(
    segments: list[SegmentInfo],
    config: LogConfig,
    now_ms: int,
    high_watermark: int,
    log_start_offset: int = 0,
) -> int:
    """How many of the oldest segments to delete."""
    total = sum(s.size for s in segments)
    count = 0
    for segment in segments[:-1]:
        if segment.next_offset > high_watermark:
            break
        too_old = (
            config.deletes
            and config.retention_ms >= 0
            and segment.max_timestamp >= 0
            and now_ms - segment.max_timestamp > config.retention_ms
        )
        too_big = (
            config.deletes
            and config.retention_bytes >= 0
            and total - segment.size >= config.retention_bytes
        )
        below_start = segment.next_offset <= log_start_offset
        if not (too_old or too_big or below_start):
            break
        total -= segment.size
        count += 1
    return count
