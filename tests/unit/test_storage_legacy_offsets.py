"""ListOffsets v0's offsets-before-a-time decision (pure) and the points of a real log."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.errors import UnknownServerError
from pafka.records.encoding import build_batch
from pafka.storage.config import LogConfig
from pafka.storage.legacy_offsets import (
    EARLIEST,
    LATEST,
    SegmentPoint,
    cap_at_high_watermark,
    log_points,
    offsets_before,
)
from pafka.storage.log import Log

# Three segments written at t=100, 200, 300 and the log end (now, t=1000).
POINTS = [
    SegmentPoint(0, 100),
    SegmentPoint(10, 200),
    SegmentPoint(20, 300),
    SegmentPoint(25, 1000),
]


def test_latest_and_earliest() -> None:
    assert offsets_before(POINTS, LATEST, 1) == [25]
    assert offsets_before(POINTS, LATEST, 10) == [25, 20, 10, 0]
    assert offsets_before(POINTS, EARLIEST, 1) == [0]
    # Kafka starts EARLIEST at the oldest point and walks towards older ones: one offset at most.
    assert offsets_before(POINTS, EARLIEST, 10) == [0]


def test_a_time_starts_at_the_newest_point_written_at_or_before_it() -> None:
    assert offsets_before(POINTS, 250, 10) == [10, 0]
    assert offsets_before(POINTS, 200, 1) == [10]
    assert offsets_before(POINTS, 99, 10) == []
    assert offsets_before(POINTS, 5000, 2) == [25, 20]


def test_zero_offsets_asked_and_a_negative_count() -> None:
    assert offsets_before(POINTS, LATEST, 0) == []
    with pytest.raises(UnknownServerError):
        offsets_before(POINTS, LATEST, -1)


def test_consumers_never_see_past_the_high_watermark() -> None:
    assert cap_at_high_watermark([25, 20, 10], 22) == [22, 20, 10]
    assert cap_at_high_watermark([25, 24], 22) == [22]
    assert cap_at_high_watermark([20, 10], 22) == [20, 10]


@given(
    times=st.lists(st.integers(0, 10_000), min_size=1, max_size=8),
    timestamp=st.integers(-2, 12_000),
    count=st.integers(0, 10),
    hw_offset=st.integers(0, 100),
)
def test_answers_are_descending_bounded_and_capped(
    times: list[int], timestamp: int, count: int, hw_offset: int
) -> None:
    points = [SegmentPoint(i * 10, t) for i, t in enumerate(sorted(times))]
    got = offsets_before(points, timestamp, count)
    assert len(got) <= count
    assert got == sorted(got, reverse=True)
    assert set(got) <= {p.offset for p in points}
    if timestamp >= 0:
        assert all(p.modified_ms <= timestamp for p in points if p.offset in got)
    capped = cap_at_high_watermark(got, hw_offset)
    assert all(o <= hw_offset for o in capped)
    assert len(capped) <= max(len(got), 1)


def test_points_of_a_real_log(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=1))
    try:
        assert log_points(log, 5000) == [SegmentPoint(0, _mtime_ms(log, 0))]
        for i in range(3):
            log.append(build_batch([(None, b"v%d" % i, [])]), leader_epoch=0, now_ms=1)
        # segment_bytes=1 rolls before every append after the first: three segments, the last
        # one holding data, so the log end is a point stamped now.
        points = log_points(log, 5000)
        assert [p.offset for p in points] == [0, 1, 2, 3]
        assert points[-1].modified_ms == 5000
        assert [p.modified_ms for p in points[:-1]] == [_mtime_ms(log, i) for i in range(3)]
        assert offsets_before(points, LATEST, 2) == [3, 2]
    finally:
        log.close()


def _mtime_ms(log: Log, index: int) -> int:
    return os.stat(log.segments[index].log_path).st_mtime_ns // 1_000_000
