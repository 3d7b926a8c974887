"""ListOffsets v0's answer: the offsets at which segments start, before a time.

Before records carried timestamps (ListOffsets v1, KIP-79), Kafka answered "offsets before T"
from its segment files' modification times, and Kafka 2.8 still answers v0 that way: each
segment is a point (its base offset, or the log start offset inside the first segment; the time
its file was last written), and the log end is one more point, stamped now, when the active
segment holds data. LATEST (-1) starts at the newest point, EARLIEST (-2) at the oldest, a time
at the newest point written at or before it; up to ``max_num_offsets`` points are taken from
there towards older ones, newest offset first. A consumer (replica id -1) never sees an offset
past the high watermark: those are dropped and the high watermark is put first instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from pafka.errors import KafkaStorageError, UnknownServerError
from pafka.storage.log import Log

LATEST = -1
EARLIEST = -2
CONSUMER_REPLICA_ID = -1


@dataclass(frozen=True)
class SegmentPoint:
    offset: int
    modified_ms: int


def offsets_before(
    points: Sequence[SegmentPoint], timestamp_ms: int, max_num_offsets: int
) -> list[int]:
    """The v0 answer from a log's points (oldest first), before the high-watermark cap."""
    if max_num_offsets < 0:
        # Kafka fails building a negative-sized answer and reports an unknown server error.
        raise UnknownServerError(f"max_num_offsets {max_num_offsets} is negative")
    if timestamp_ms == LATEST:
        start = len(points) - 1
    elif timestamp_ms == EARLIEST:
        start = 0 if points else -1
    else:
        start = len(points) - 1
        while start >= 0 and points[start].modified_ms > timestamp_ms:
            start -= 1
    taken = [points[i].offset for i in range(start, start - min(max_num_offsets, start + 1), -1)]
    return sorted(taken, reverse=True)


def cap_at_high_watermark(offsets: Sequence[int], high_watermark: int) -> list[int]:
    """What a consumer is told: offsets past the high watermark become the high watermark."""
    if not any(o > high_watermark for o in offsets):
        return list(offsets)
    return [high_watermark, *(o for o in offsets if o <= high_watermark)]


def log_points(log: Log, now_ms: int) -> list[SegmentPoint]:
    """The points of ``log`` (stats each segment's file: v0 requests only, never a hot path)."""
    try:
        points = [
            SegmentPoint(
                max(segment.base_offset, log.log_start_offset),
                os.stat(segment.log_path).st_mtime_ns // 1_000_000,
            )
            for segment in log.segments
        ]
    except OSError as exc:
        raise KafkaStorageError(f"{log.directory.name}: {exc}") from exc
    if log.segments[-1].size > 0:
        points.append(SegmentPoint(log.log_end_offset, now_ms))
    return points
