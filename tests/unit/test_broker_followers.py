"""The leader's view of its followers: Kafka's caught-up rule, so an idle follower whose
partitions a fetch session does not read stays in sync."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from services.broker.followers import Followers

LEADER = 1
LAG_MS = 30_000


def test_a_follower_at_the_leaders_end_is_in_sync_however_long_ago_it_fetched() -> None:
    followers = Followers()
    followers.reset([2, 3], now_ms=0)
    followers.on_fetch(2, 10, leader_end=10, now_ms=0)
    followers.on_fetch(3, 7, leader_end=10, now_ms=0)
    later = 10 * LAG_MS
    assert followers.lagging((1, 2, 3), LEADER, 10, later, LAG_MS) == {3}


def test_an_append_stamps_followers_at_the_old_end_caught_up_until_then() -> None:
    followers = Followers()
    followers.reset([2, 3], now_ms=0)
    followers.on_fetch(2, 10, leader_end=10, now_ms=0)
    followers.on_fetch(3, 7, leader_end=10, now_ms=0)
    append_ms = 5 * LAG_MS
    followers.on_leader_append(10, append_ms)  # the log grows to 11
    assert followers.lagging((1, 2, 3), LEADER, 11, append_ms + LAG_MS, LAG_MS) == {3}
    assert followers.lagging((1, 2, 3), LEADER, 11, append_ms + LAG_MS + 1, LAG_MS) == {2, 3}


def test_a_follower_of_unknown_position_has_the_grace_of_a_new_term() -> None:
    followers = Followers()
    followers.reset([2], now_ms=1000)
    assert followers.lagging((1, 2), LEADER, 0, 1000 + LAG_MS, LAG_MS) == set()
    assert followers.lagging((1, 2), LEADER, 0, 1001 + LAG_MS, LAG_MS) == {2}


@given(
    st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20), st.integers(0, 10**6)), max_size=20),
    st.integers(0, 20),
    st.integers(0, 2 * 10**6),
)
def test_in_sync_means_at_the_end_or_caught_up_within_the_lag(
    fetches: list[tuple[int, int, int]], leader_end: int, now_ms: int
) -> None:
    followers = Followers()
    followers.reset([2], now_ms=0)
    for offset, end, at_ms in fetches:
        followers.on_fetch(2, offset, max(offset, end), at_ms)
    state = followers.states[2]
    expected_lagging = (
        state.log_end_offset != leader_end and now_ms - state.last_caught_up_ms > LAG_MS
    )
    assert (followers.lagging((1, 2), LEADER, leader_end, now_ms, LAG_MS) == {2}) == (
        expected_lagging
    )
