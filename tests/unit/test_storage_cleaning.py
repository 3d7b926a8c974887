"""The cleaner's pure decisions: what is cleanable, when a log is due, which goes first, how
segments group, which records survive."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.storage.cleaning import (
    LONG_MAX,
    MAX_GROUP_OFFSET_SPAN,
    Cleanable,
    CleaningConfig,
    SegmentSummary,
    choose,
    cleanable,
    delete_horizon,
    first_dirty_offset,
    group_segments,
    keep_record,
    tombstones_expired,
)

NOW_MS = 10_000_000


def segs(
    *bounds: int, size: int = 100, max_ts: int = 0, index_size: int = 0
) -> list[SegmentSummary]:
    """Consecutive segments with the given bases; the last bound is the log end (the last
    segment is the active one)."""
    return [
        SegmentSummary(base, nxt, size, max_ts, max_ts, 0, index_size)
        for base, nxt in itertools.pairwise(bounds)
    ]


def where(segments: list[SegmentSummary], **positions: int) -> Cleanable:
    args = {
        "log_start_offset": segments[0].base_offset,
        "checkpoint": 0,
        "high_watermark": LONG_MAX,
    }
    args.update(positions)
    return cleanable(segments, now_ms=NOW_MS, config=CleaningConfig(), **args)


def test_the_active_segment_is_never_cleanable() -> None:
    state = where(segs(0, 10, 20, 30))
    assert (state.first_dirty_offset, state.first_uncleanable_offset) == (0, 20)
    assert state.dirty_bytes == 200 and state.clean_bytes == 0


def test_only_one_segment_means_nothing_to_clean() -> None:
    state = where(segs(0, 10))
    assert state.first_uncleanable_offset == 0 and state.dirty_bytes == 0
    assert not state.due(CleaningConfig(min_cleanable_dirty_ratio=0.0))


def test_a_high_watermark_inside_a_segment_stops_cleaning_at_its_base() -> None:
    segments = segs(0, 10, 20, 30, 40)
    assert where(segments, high_watermark=25).first_uncleanable_offset == 20
    assert where(segments, high_watermark=20).first_uncleanable_offset == 20
    assert where(segments, high_watermark=30).first_uncleanable_offset == 30
    assert where(segments, high_watermark=5).first_uncleanable_offset == 0


def test_min_compaction_lag_stops_at_the_first_young_segment() -> None:
    segments = [
        SegmentSummary(0, 10, 100, NOW_MS - 5_000, 0, 0),
        SegmentSummary(10, 20, 100, NOW_MS - 500, 0, 0),  # younger than the lag
        SegmentSummary(20, 30, 100, NOW_MS - 5_000, 0, 0),
        SegmentSummary(30, 31, 100, NOW_MS, 0, 0),
    ]
    config = CleaningConfig(min_compaction_lag_ms=1_000)
    state = cleanable(
        segments, log_start_offset=0, checkpoint=0, high_watermark=31, now_ms=NOW_MS, config=config
    )
    assert state.first_uncleanable_offset == 10
    # Exactly the lag old is old enough (Kafka: uncleanable when newer than now - lag).
    config = CleaningConfig(min_compaction_lag_ms=500)
    state = cleanable(
        segments, log_start_offset=0, checkpoint=0, high_watermark=31, now_ms=NOW_MS, config=config
    )
    assert state.first_uncleanable_offset == 30


def test_checkpoint_out_of_the_log_restarts_at_the_log_start() -> None:
    segments = segs(100, 110, 120, 130)
    assert first_dirty_offset(50, 100, 130) == 100
    assert first_dirty_offset(131, 100, 130) == 100
    assert first_dirty_offset(130, 100, 130) == 130
    assert where(segments, log_start_offset=100, checkpoint=50).first_dirty_offset == 100
    assert where(segments, log_start_offset=100, checkpoint=999).first_dirty_offset == 100
    state = where(segments, log_start_offset=100, checkpoint=110)
    assert (state.first_dirty_offset, state.clean_bytes, state.dirty_bytes) == (110, 100, 100)


def test_a_checkpoint_in_the_active_segment_leaves_nothing_dirty() -> None:
    state = where(segs(0, 10, 20, 30), checkpoint=25)
    assert state.first_uncleanable_offset == 25 and state.dirty_bytes == 0
    assert not state.due(CleaningConfig(min_cleanable_dirty_ratio=0.0))


def test_a_checkpoint_inside_a_segment_past_the_high_watermark_leaves_nothing_dirty() -> None:
    # Cleaning it would map records above the high watermark, which a follower may lose.
    state = where(segs(0, 10, 20, 30), checkpoint=15, high_watermark=12)
    assert state.first_uncleanable_offset == 15 and state.dirty_bytes == 0
    assert not state.due(CleaningConfig(min_cleanable_dirty_ratio=0.0))


def test_a_checkpoint_inside_a_safe_segment_makes_it_dirty() -> None:
    state = where(segs(0, 10, 20, 30), checkpoint=15)
    assert (state.first_uncleanable_offset, state.clean_bytes, state.dirty_bytes) == (20, 100, 100)


def test_dirty_ratio_and_due() -> None:
    state = Cleanable(0, 10, 20, clean_bytes=300, dirty_bytes=100, compaction_delay_ms=0)
    assert state.dirty_ratio == 0.25
    assert state.due(CleaningConfig(min_cleanable_dirty_ratio=0.2))
    assert not state.due(CleaningConfig(min_cleanable_dirty_ratio=0.25))  # must pass the ratio
    overdue = Cleanable(0, 10, 20, clean_bytes=300, dirty_bytes=100, compaction_delay_ms=1)
    assert overdue.due(CleaningConfig(min_cleanable_dirty_ratio=0.9))
    nothing = Cleanable(0, 10, 10, clean_bytes=300, dirty_bytes=0, compaction_delay_ms=99)
    assert nothing.dirty_ratio == 0.0 and not nothing.due(CleaningConfig(0.0))
    assert Cleanable(0, 0, 0, 0, 0, 0).dirty_ratio == 0.0


def test_max_compaction_lag_delay_from_the_first_dirty_segment() -> None:
    segments = [
        SegmentSummary(0, 10, 100, 0, 1_000, 0),  # clean already
        SegmentSummary(10, 20, 100, 0, 2_000, 0),  # first dirty: its first timestamp counts
        SegmentSummary(20, 30, 100, 0, 500, 0),
        SegmentSummary(30, 31, 100, 0, 9_000, 0),
    ]

    def delay(now_ms: int, max_lag_ms: int) -> int:
        return cleanable(
            segments,
            log_start_offset=0,
            checkpoint=10,
            high_watermark=31,
            now_ms=now_ms,
            config=CleaningConfig(max_compaction_lag_ms=max_lag_ms),
        ).compaction_delay_ms

    assert delay(5_000, 1_000) == 2_000
    assert delay(3_000, 1_000) == 0  # exactly at the lag: not past it
    assert delay(2_500, 1_000) == 0
    assert delay(10**9, LONG_MAX) == 0  # no max lag set
    unknown = [segments[0], SegmentSummary(10, 20, 100, 0, -1, 0), segments[3]]
    state = cleanable(
        unknown,
        log_start_offset=0,
        checkpoint=10,
        high_watermark=31,
        now_ms=10**9,
        config=CleaningConfig(max_compaction_lag_ms=1),
    )
    assert state.compaction_delay_ms == 0


@st.composite
def logs(draw: st.DrawFn) -> tuple[list[SegmentSummary], int, int, int, int]:
    start = draw(st.integers(0, 50))
    lengths = draw(st.lists(st.integers(1, 20), min_size=1, max_size=8))
    segments, base = [], start
    for length in lengths:
        segments.append(
            SegmentSummary(
                base, base + length, draw(st.integers(0, 500)), draw(st.integers(0, 2_000)),
                draw(st.integers(-1, 2_000)), 0,
            )
        )  # fmt: skip
        base += length
    end = segments[-1].next_offset
    log_start = draw(st.integers(start, segments[0].next_offset - 1))
    checkpoint = draw(st.integers(0, end + 5))
    hw = draw(st.integers(log_start, end))
    lag = draw(st.sampled_from([0, 100, 1_000]))
    return segments, log_start, checkpoint, hw, lag


@settings(max_examples=400)
@given(logs(), st.integers(0, 3_000))
def test_cleanable_section_is_whole_safe_segments(
    case: tuple[list[SegmentSummary], int, int, int, int], now_ms: int
) -> None:
    segments, log_start, checkpoint, hw, lag = case
    config = CleaningConfig(min_compaction_lag_ms=lag)
    state = cleanable(
        segments,
        log_start_offset=log_start,
        checkpoint=checkpoint,
        high_watermark=hw,
        now_ms=now_ms,
        config=config,
    )
    end = segments[-1].next_offset
    first, stop = state.first_dirty_offset, state.first_uncleanable_offset
    assert first == (checkpoint if log_start <= checkpoint <= end else log_start)
    assert first <= stop
    bases = {s.base_offset for s in segments}
    assert stop == first or stop in bases
    assert stop <= max(segments[-1].base_offset, first)

    def safe(s: SegmentSummary) -> bool:
        return s.next_offset <= hw and (lag == 0 or s.max_timestamp <= now_ms - lag)

    dirty = [s for s in segments[:-1] if first < s.next_offset <= stop]
    assert all(safe(s) for s in dirty)
    # The dirty section ends on a segment boundary: no segment is cut by it.
    assert not [s for s in segments if s.base_offset < stop < s.next_offset and stop > first]
    if state.dirty_bytes == 0:
        assert not state.due(CleaningConfig(min_cleanable_dirty_ratio=0.0))
    # Maximal: the segment at the stop (if dirty and sealed) is unsafe.
    at_stop = [s for s in segments[:-1] if s.base_offset == stop and s.next_offset > first]
    if stop > first and at_stop:
        assert not safe(at_stop[0])
    assert state.dirty_bytes == sum(s.size for s in dirty)
    assert state.clean_bytes == sum(s.size for s in segments if s.next_offset <= first)
    assert 0.0 <= state.dirty_ratio <= 1.0


cleanables = st.builds(
    Cleanable,
    st.just(0),
    st.just(0),
    st.just(0),
    st.integers(0, 1_000),
    st.integers(0, 1_000),
    st.sampled_from([0, 0, 5, 50]),
)


@settings(max_examples=300)
@given(st.lists(st.tuples(cleanables, st.sampled_from([0.0, 0.5, 0.9])), max_size=6))
def test_choose_takes_the_most_overdue_then_the_dirtiest_due_log(
    candidates: list[tuple[Cleanable, float]],
) -> None:
    pairs = [
        (state, CleaningConfig(min_cleanable_dirty_ratio=ratio)) for state, ratio in candidates
    ]
    chosen = choose(pairs)
    due = [i for i, (state, config) in enumerate(pairs) if state.due(config)]
    if not due:
        assert chosen is None
        return
    assert chosen in due
    best = pairs[chosen][0]
    for i in due:
        other = pairs[i][0]
        assert (other.compaction_delay_ms, other.dirty_ratio) <= (
            best.compaction_delay_ms,
            best.dirty_ratio,
        )


def test_choose_prefers_an_overdue_log_over_a_dirtier_one() -> None:
    dirty = Cleanable(0, 0, 0, clean_bytes=0, dirty_bytes=100, compaction_delay_ms=0)
    overdue = Cleanable(0, 0, 0, clean_bytes=900, dirty_bytes=100, compaction_delay_ms=10)
    config = CleaningConfig(min_cleanable_dirty_ratio=0.5)
    assert choose([(dirty, config), (overdue, config)]) == 1
    assert choose([(dirty, config)]) == 0
    assert choose([]) is None


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(st.integers(1, 2**31), st.integers(0, 300), st.integers(0, 40)),
        min_size=1,
        max_size=12,
    ),
    st.integers(1, 1_000),
    st.integers(1, 100),
)
def test_groups_are_consecutive_and_fit_one_segment(
    shapes: list[tuple[int, int, int]], segment_bytes: int, index_bytes: int
) -> None:
    segments, base = [], 0
    for span, size, index_size in shapes:
        segments.append(SegmentSummary(base, base + span, size, 0, 0, 0, index_size))
        base += span
    config = CleaningConfig(segment_bytes=segment_bytes, segment_index_bytes=index_bytes)
    groups = group_segments(segments, config)
    assert [s for group in groups for s in group] == segments
    for group in groups:
        assert group
        if len(group) > 1:  # a lone segment is never split, whatever its size
            assert sum(s.size for s in group) <= segment_bytes
            assert sum(s.index_size for s in group) <= index_bytes
            assert group[-1].next_offset - 1 - group[0].base_offset <= MAX_GROUP_OFFSET_SPAN
    # Greedy: the next group's first segment would not have fitted into the previous group.
    for before, after in itertools.pairwise(groups):
        joined = [*before, after[0]]
        assert (
            sum(s.size for s in joined) > segment_bytes
            or sum(s.index_size for s in joined) > index_bytes
            or joined[-1].next_offset - 1 - joined[0].base_offset > MAX_GROUP_OFFSET_SPAN
        )


def test_group_limits_exactly() -> None:
    config = CleaningConfig(segment_bytes=300, segment_index_bytes=1_000)
    three = segs(0, 10, 20, 30, 40, size=100)
    assert [len(g) for g in group_segments(three, config)] == [3, 1]
    by_index = CleaningConfig(segment_bytes=10**9, segment_index_bytes=16)
    assert [len(g) for g in group_segments(segs(0, 1, 2, 3, index_size=8), by_index)] == [2, 1]
    wide = [
        SegmentSummary(0, 2**31 - 1, 1, 0, 0, 0),
        SegmentSummary(2**31 - 1, 2**31, 1, 0, 0, 0),  # ends at relative offset 2**31 - 1
        SegmentSummary(2**31, 2**31 + 1, 1, 0, 0, 0),
    ]
    assert [len(g) for g in group_segments(wide, CleaningConfig())] == [2, 1]
    assert group_segments([], CleaningConfig()) == []


def test_keep_record() -> None:
    assert not keep_record(False, 5, -1, False)  # no key: dropped
    assert keep_record(True, 5, -1, False)  # not mapped: kept
    assert keep_record(True, 5, 5, False)  # the latest
    assert not keep_record(True, 5, 6, False)  # superseded
    assert keep_record(True, 7, 6, False)  # newer than the map (beyond the mapped section)
    assert not keep_record(True, 5, 5, True)  # the latest, an expired tombstone


@given(
    st.none() | st.integers(0, 20_000),
    st.booleans(),
    st.integers(0, 10_000),
    st.integers(0, 5_000),
)
def test_a_batch_keeps_its_delete_horizon_from_its_first_clean_with_tombstones(
    current: int | None, keeps_tombstones: bool, now_ms: int, retention_ms: int
) -> None:
    horizon = delete_horizon(current, keeps_tombstones, now_ms, retention_ms)
    if not keeps_tombstones:
        assert horizon is None
    elif current is not None:
        assert horizon == current  # merging or cleaning again never moves it
    else:
        assert horizon == now_ms + retention_ms
    # Tombstones go only once a horizon is set and reached.
    assert not tombstones_expired(None, now_ms)
    if horizon is not None:
        assert tombstones_expired(horizon, now_ms) == (now_ms >= horizon)
        assert tombstones_expired(horizon, horizon)
        assert not tombstones_expired(horizon, horizon - 1)


def test_a_horizon_never_overflows_the_batch_field() -> None:
    assert delete_horizon(None, True, 10, 2**63 - 1) == 2**63 - 1
