"""The availability arithmetic: gaps, overlaps and recovery from time series."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.partitions.availability import longest_gap, longest_overlap, recovery

times = st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), max_size=30)


def test_gap_counts_the_window_edges() -> None:
    assert longest_gap([2.0, 3.0], 0.0, 10.0) == 7.0
    assert longest_gap([1.0, 9.5], 0.0, 10.0) == 8.5
    assert longest_gap([], 5.0, 8.0) == 3.0


def test_gap_ignores_events_outside_the_window() -> None:
    assert longest_gap([-5.0, 20.0], 0.0, 10.0) == 10.0


def test_gap_refuses_a_window_that_ends_first() -> None:
    with pytest.raises(ValueError, match="ends before it starts"):
        longest_gap([], 2.0, 1.0)


@given(times)
def test_gap_is_within_the_window_and_covers_it(events: list[float]) -> None:
    gap = longest_gap(events, 0.0, 100.0)
    inside = sorted(events)
    assert 0.0 <= gap <= 100.0
    # Some event-free stretch is at least the window divided among its events' gaps.
    assert gap >= 100.0 / (len(inside) + 1) - 1e-9


def test_overlap_of_two_actives() -> None:
    samples = {
        "c1": [(0.0, True), (5.0, True), (8.0, False)],
        "c2": [(0.0, False), (3.0, True), (10.0, False)],
    }
    assert longest_overlap(samples) == 5.0  # from 3 (c2 active) to 8 (c1 steps down)


def test_overlap_takes_the_longest_of_several() -> None:
    samples = {
        "c1": [(0.0, True), (20.0, True)],
        "c2": [(1.0, True), (2.0, False), (10.0, True), (14.0, False)],
    }
    assert longest_overlap(samples) == 4.0


def test_overlap_runs_to_the_last_sample() -> None:
    samples = {"c1": [(0.0, True), (9.0, True)], "c2": [(4.0, True)]}
    assert longest_overlap(samples) == 5.0


def test_no_overlap_with_one_active_at_a_time() -> None:
    samples = {"c1": [(0.0, True), (5.0, False)], "c2": [(5.0, True), (9.0, True)]}
    assert longest_overlap(samples) == 0.0
    assert longest_overlap({}) == 0.0


@given(st.lists(st.tuples(st.floats(0, 100), st.booleans()), max_size=20))
def test_one_party_never_overlaps_itself(series: list[tuple[float, bool]]) -> None:
    assert longest_overlap({"c1": series}) == 0.0


def test_recovery_waits_for_the_full_isr_then_an_ack_on_every_partition() -> None:
    acks = {0: [10.5, 14.0], 1: [12.5], 2: [13.0]}
    # Heal at 10, ISR full at 12: partition 0's first write after that is at 14.
    assert recovery(10.0, 12.0, acks, 3) == 4.0


def test_recovery_counts_from_the_heal_when_the_isr_never_shrank() -> None:
    acks = {0: [10.2], 1: [10.4], 2: [10.1]}
    assert recovery(10.0, 9.0, acks, 3) == pytest.approx(0.4)


def test_no_recovery_without_full_isr_or_without_acks() -> None:
    assert recovery(10.0, None, {0: [11.0]}, 1) is None
    assert recovery(10.0, 11.0, {0: [12.0], 1: [10.5]}, 2) is None
