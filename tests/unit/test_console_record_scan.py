"""The console's partition search, pure: matching, the windows a scan reads within its cap,
and continuations that together find every match once, in order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pafka.client.batch_reading import FetchedRecord, TimestampType
from services.gateway.console.record_scan import (
    WINDOW_OFFSETS,
    Direction,
    RecordFilter,
    Window,
    exhausted,
    next_window,
    record_bytes,
    scan_window,
    trim,
)


def record(
    offset: int,
    key: bytes | None = None,
    value: bytes | None = None,
    headers: tuple[tuple[str, bytes | None], ...] = (),
) -> FetchedRecord:
    return FetchedRecord(offset, 0, TimestampType.CREATE_TIME, key, value, headers)


def test_a_filter_needs_every_condition_given() -> None:
    r = record(0, b"order-7", b'{"amount": 12}', (("trace", b"abc123"), ("empty", None)))
    assert RecordFilter().matches(r)
    assert RecordFilter(key=b"order-7").matches(r)
    assert not RecordFilter(key=b"order-").matches(r)  # equals, not contains
    assert RecordFilter(value_contains=b"amount").matches(r)
    assert not RecordFilter(key=b"order-7", value_contains=b"total").matches(r)
    assert RecordFilter(header_name="trace").matches(r)
    assert not RecordFilter(header_name="Trace").matches(r)
    assert RecordFilter(header_name="trace", header_value_contains=b"c12").matches(r)
    assert not RecordFilter(header_name="empty", header_value_contains=b"c12").matches(r)
    assert RecordFilter(header_value_contains=b"abc").matches(r)  # any header
    assert not RecordFilter(value_contains=b"x").matches(record(1, b"k", None))  # a tombstone
    assert not RecordFilter(key=b"k").matches(record(2, None, b"v"))


def test_windows_stay_in_the_log_and_the_budget() -> None:
    assert next_window(Direction.FORWARD, 0, 10, 5000, 300) == Window(10, 310)
    assert next_window(Direction.FORWARD, 4990, 10, 5000, 300) == Window(4990, 5000)
    assert next_window(Direction.FORWARD, 5000, 10, 5000, 300) is None
    assert next_window(Direction.FORWARD, 0, 0, 5000, 5000) == Window(0, WINDOW_OFFSETS)
    assert next_window(Direction.BACKWARD, 5000, 10, 5000, 300) == Window(4700, 5000)
    assert next_window(Direction.BACKWARD, 100, 10, 5000, 300) == Window(10, 100)
    assert next_window(Direction.BACKWARD, 10, 10, 5000, 300) is None
    assert next_window(Direction.BACKWARD, 9000, 10, 5000, 300) == Window(4700, 5000)
    assert next_window(Direction.FORWARD, 0, 0, 5000, 0) is None
    assert exhausted(Direction.FORWARD, 5000, 10, 5000)
    assert not exhausted(Direction.FORWARD, 4999, 10, 5000)
    assert exhausted(Direction.BACKWARD, 10, 10, 5000)
    assert not exhausted(Direction.BACKWARD, 11, 10, 5000)


def test_a_window_stops_just_past_the_last_match_wanted() -> None:
    records = [record(o, value=b"hit" if o % 3 == 0 else b"miss") for o in range(10, 20)]
    hits = RecordFilter(value_contains=b"hit")
    forward = scan_window(Direction.FORWARD, Window(10, 20), records, hits, 2)
    assert [r.offset for r in forward.matches] == [12, 15]
    assert (forward.scanned, forward.resume, forward.full) == (6, 16, True)
    backward = scan_window(Direction.BACKWARD, Window(10, 20), records, hits, 2)
    assert [r.offset for r in backward.matches] == [18, 15]
    assert (backward.scanned, backward.resume, backward.full) == (5, 15, True)
    every = scan_window(Direction.BACKWARD, Window(10, 20), records, hits, 10)
    assert [r.offset for r in every.matches] == [18, 15, 12]
    assert (every.scanned, every.resume, every.full) == (10, 10, False)
    # Records of the batch before the window (a Fetch answers whole batches) are not looked at.
    before = scan_window(Direction.FORWARD, Window(15, 20), records, hits, 10)
    assert (before.scanned, [r.offset for r in before.matches]) == (5, [15, 18])


def test_a_window_too_large_is_cut_from_the_side_the_scan_comes_from() -> None:
    records = [record(o, b"k", b"v" * 9) for o in range(10, 20)]  # 10 bytes each
    assert record_bytes(record(0, b"ab", b"cde", (("h", b"xy"), ("n", None)))) == 9
    forward = trim(Direction.FORWARD, Window(10, 20), records, 35)
    assert forward[0] == Window(10, 13) and [r.offset for r in forward[1]] == [10, 11, 12]
    backward = trim(Direction.BACKWARD, Window(10, 20), records, 35)
    assert backward[0] == Window(17, 20) and [r.offset for r in backward[1]] == [17, 18, 19]
    assert trim(Direction.FORWARD, Window(10, 20), records, 1000) == (Window(10, 20), records)
    # One record always fits, however large.
    assert trim(Direction.BACKWARD, Window(10, 20), records, 1)[0] == Window(19, 20)


def search(
    log: list[FetchedRecord],
    log_start: int,
    log_end: int,
    direction: Direction,
    record_filter: RecordFilter,
    cap: int,
    wanted: int,
    max_bytes: int,
) -> tuple[list[int], int]:
    """Requests chained by their continuations until the log is exhausted, as the console's
    "Continue" does: the offsets found, and the requests made. Each request checks its cap."""
    found: list[int] = []
    position = log_start if direction is Direction.FORWARD else log_end
    requests = 0
    while True:
        requests += 1
        budget, read, matches = cap, 0, 0
        while (window := next_window(direction, position, log_start, log_end, budget)) is not None:
            inside = [r for r in log if window.start <= r.offset < window.stop]
            window, inside = trim(direction, window, inside, max_bytes)
            step = scan_window(direction, window, inside, record_filter, wanted - matches)
            found += [r.offset for r in step.matches]
            matches += len(step.matches)
            read += window.size
            budget -= window.size
            position = step.resume
            if step.full:
                break
        assert read <= cap
        if exhausted(direction, position, log_start, log_end):
            return found, requests
        assert requests < 10_000, "a search that never ends"


@given(
    st.sets(st.integers(0, 3000), max_size=300),
    st.integers(0, 3000),
    st.sampled_from(list(Direction)),
    st.integers(1, 2500),
    st.integers(1, 20),
    st.integers(1, 60),
)
def test_continued_searches_find_every_match_once_in_order_within_each_cap(
    offsets: set[int], start: int, direction: Direction, cap: int, wanted: int, max_bytes: int
) -> None:
    # A log with gaps (compaction, markers): offsets from ``start``, every third a match, of
    # 1 to 9 bytes; windows cut to ``max_bytes``.
    log = [
        record(o, value=(b"hit" if o % 3 == 0 else b"-") + b"." * (o % 7))
        for o in sorted(offsets)
        if o >= start
    ]
    log_end = max([start, *offsets]) + 1
    hits = RecordFilter(value_contains=b"hit")
    found, _ = search(log, start, log_end, direction, hits, cap, wanted, max_bytes)
    expected = [r.offset for r in log if r.offset % 3 == 0]
    assert found == (expected if direction is Direction.FORWARD else expected[::-1])
