"""The cleaner's offset map (its memory bound measured, not assumed) and its I/O throttle."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.storage.offset_map import ENTRY_BYTES, MIN_CAPACITY, OffsetMap, key_digest
from pafka.storage.throttle import Throttle


def test_capacity_comes_from_the_memory_budget() -> None:
    assert OffsetMap(ENTRY_BYTES * 5_000).capacity == 5_000
    assert OffsetMap(ENTRY_BYTES * 5_000 + ENTRY_BYTES - 1).capacity == 5_000
    assert OffsetMap(128 * 1024 * 1024).capacity == 128 * 1024 * 1024 // ENTRY_BYTES
    assert OffsetMap(0).capacity == MIN_CAPACITY  # a tiny budget still cleans something


@pytest.mark.parametrize("capacity", [MIN_CAPACITY, 5_000, 43_690, 100_000])
def test_memory_at_capacity_stays_within_the_budget(capacity: int) -> None:
    """Filled to capacity with digests and offsets as large as real logs have, the map's
    measured memory stays within ENTRY_BYTES per entry: the bound the setting promises."""
    budget = capacity * ENTRY_BYTES
    digests = [key_digest(i.to_bytes(8, "big")) for i in range(capacity)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        offsets = OffsetMap(budget)
        assert offsets.capacity == capacity
        for i, digest in enumerate(digests):
            # Fresh key objects (a clean makes one per record) and offsets past the small-int
            # cache, so every value is an object of its own.
            offsets.put(bytes(digest), 2**40 + i)
        assert offsets.full and len(offsets) == capacity
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert used <= budget, f"{used / capacity:.1f} bytes per entry, budget {ENTRY_BYTES}"


@settings(max_examples=200)
@given(st.lists(st.tuples(st.binary(max_size=6), st.integers(0, 2**62)), max_size=60))
def test_map_holds_the_latest_put_and_the_largest_offset(puts: list[tuple[bytes, int]]) -> None:
    offsets = OffsetMap(0)
    model: dict[bytes, int] = {}
    for key, offset in puts:
        offsets.put(key_digest(key), offset)
        model[key] = offset
    assert len(offsets) == len(model)
    for key, offset in model.items():
        assert offsets.get(key_digest(key)) == offset
    assert offsets.get(key_digest(b"never put, longer than six")) == -1
    assert offsets.latest_offset == max((o for _, o in puts), default=-1)
    assert offsets.utilization == len(model) / MIN_CAPACITY
    offsets.clear()
    assert len(offsets) == 0 and offsets.latest_offset == -1 and not offsets.full


def test_digests_are_fixed_size_whatever_the_key() -> None:
    assert {len(key_digest(k)) for k in (b"", b"k", b"x" * 100_000)} == {16}
    assert key_digest(b"a") != key_digest(b"b")


class FakeTime:
    def __init__(self) -> None:
        self.now_s = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now_s

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now_s += seconds


def test_throttle_sleeps_for_what_the_bytes_should_have_taken() -> None:
    t = FakeTime()
    throttle = Throttle(1_000.0, t.clock, t.sleep, check_interval_s=0.5)
    throttle.account(400)  # no time has passed: not checked yet
    assert t.sleeps == []
    t.now_s += 0.5
    throttle.account(600)  # 1,000 bytes in 0.5 s at 1,000 B/s: should have taken 1 s
    assert t.sleeps == [pytest.approx(0.5)]
    assert throttle.slept_s == pytest.approx(0.5)
    t.now_s += 2.0
    throttle.account(1_000)  # 1,000 bytes in 2 s: under the limit
    assert len(t.sleeps) == 1


def test_throttle_within_the_check_interval_only_counts() -> None:
    t = FakeTime()
    throttle = Throttle(10.0, t.clock, t.sleep, check_interval_s=1.0)
    for _ in range(10):
        t.now_s += 0.0625  # binary fractions: the sums are exact
        throttle.account(1_000)
    assert t.sleeps == []
    t.now_s += 0.375  # 1.0 s since the window started; 10,000 bytes should take 1,000 s
    throttle.account(0)
    assert t.sleeps == [pytest.approx(999.0)]


@pytest.mark.parametrize("limit", [0.0, -1.0, float("inf")])
def test_unlimited_throttle_never_sleeps(limit: float) -> None:
    t = FakeTime()
    throttle = Throttle(limit, t.clock, t.sleep, check_interval_s=0.0)
    for _ in range(5):
        t.now_s += 0.001
        throttle.account(10**9)
    assert throttle.unlimited and t.sleeps == [] and throttle.slept_s == 0.0


@settings(max_examples=200)
@given(
    st.floats(min_value=1.0, max_value=1e6),
    st.lists(st.tuples(st.integers(0, 100_000), st.floats(0.0, 0.5)), min_size=1, max_size=40),
)
def test_throttled_rate_never_exceeds_the_limit_over_whole_windows(
    limit: float, steps: list[tuple[int, float]]
) -> None:
    """Measured from the start to the end of the last check, bytes / time <= the limit."""
    t = FakeTime()
    start = t.now_s
    throttle = Throttle(limit, t.clock, t.sleep, check_interval_s=0.3)
    checked_bytes = pending = 0
    checked_at = start
    for nbytes, advance_s in steps:
        t.now_s += advance_s
        window = throttle._window_start
        throttle.account(nbytes)
        pending += nbytes
        if throttle._window_start != window:  # a check happened: the window restarted
            checked_bytes += pending
            pending = 0
            checked_at = t.now_s
    if checked_at > start:
        assert checked_bytes / (checked_at - start) <= limit * (1 + 1e-9)
