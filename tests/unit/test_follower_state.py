"""A fetcher's partitions: an error holds back only its own partition, for the back-off."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pafka.errors import (
    FencedLeaderEpochError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    UnknownLeaderEpochError,
)
from services.broker.follower_state import FetchStates, Next, after_error

EPOCH_ERRORS = [FencedLeaderEpochError.code, UnknownLeaderEpochError.code]


def test_a_new_partition_first_finds_its_common_point_with_the_leader() -> None:
    states = FetchStates()
    states.add(("t", 0))
    assert states.due_truncations(0.0) == [("t", 0)]
    assert not states.fetching(("t", 0))
    states.ready(("t", 0))
    assert states.fetching(("t", 0)) and states.due_truncations(0.0) == []


def test_an_offset_out_of_range_truncates_at_once() -> None:
    state = after_error(OffsetOutOfRangeError.code, now_s=100.0, backoff_s=1.0)
    assert state.next is Next.TRUNCATE and state.due(100.0)


def test_an_epoch_error_holds_back_one_partition_and_no_other() -> None:
    states = FetchStates()
    for index in range(3):
        states.add(("t", index))
        states.ready(("t", index))
    states.failed(("t", 1), FencedLeaderEpochError.code, now_s=10.0, backoff_s=1.0)
    assert [i for i in range(3) if states.fetching(("t", i))] == [0, 2]
    assert states.due_truncations(10.5) == []
    assert states.due_truncations(11.0) == [("t", 1)]
    assert states.next_due_s() == 11.0


def test_a_new_leader_and_isr_ends_the_back_off() -> None:
    states = FetchStates()
    states.add(("t", 0))
    states.failed(("t", 0), NotLeaderOrFollowerError.code, now_s=5.0, backoff_s=30.0)
    states.add(("t", 0))
    assert states.due_truncations(5.0) == [("t", 0)]
    assert states.next_due_s() is None


def test_a_diverged_append_truncates_at_once() -> None:
    states = FetchStates()
    states.add(("t", 0))
    states.ready(("t", 0))
    states.diverged(("t", 0))
    assert not states.fetching(("t", 0))
    assert states.due_truncations(0.0) == [("t", 0)]


def test_errors_for_partitions_no_longer_followed_are_ignored() -> None:
    states = FetchStates()
    states.failed(("gone", 0), FencedLeaderEpochError.code, now_s=0.0, backoff_s=1.0)
    states.diverged(("gone", 0))
    assert len(states) == 0


@given(
    st.lists(
        st.tuples(st.integers(0, 9), st.sampled_from([*EPOCH_ERRORS, 0])), min_size=1, max_size=30
    ),
    st.floats(0.0, 5.0),
)
def test_every_partition_without_an_error_stays_fetchable(
    events: list[tuple[int, int]], backoff_s: float
) -> None:
    states = FetchStates()
    for index in range(10):
        states.add(("t", index))
        states.ready(("t", index))
    failed = set()
    for index, code in events:
        if code:
            states.failed(("t", index), code, now_s=0.0, backoff_s=backoff_s)
            failed.add(("t", index))
    fetchable = {("t", i) for i in range(10) if states.fetching(("t", i))}
    assert fetchable == {("t", i) for i in range(10)} - failed
    assert set(states.due_truncations(backoff_s)) == failed
    assert states.truncating == failed
