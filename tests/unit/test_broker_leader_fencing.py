"""When a leader refuses acks=all writes: ZooKeeper and every in-sync follower out of reach."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from services.broker.followers import Followers
from services.broker.leader_fencing import fenced, reason, refuses

brokers = st.frozensets(st.integers(1, 6), max_size=5)


@given(brokers, brokers, st.booleans())
def test_fenced_exactly_without_zookeeper_and_without_an_in_sync_follower(
    isr_followers: frozenset[int], lagging: frozenset[int], zk_connected: bool
) -> None:
    lagging = lagging & isr_followers
    got = fenced(zk_connected=zk_connected, isr_followers=isr_followers, lagging=lagging)
    expected = not zk_connected and bool(isr_followers) and lagging == isr_followers
    assert got == expected


def test_zookeeper_alone_is_footing_enough() -> None:
    assert not fenced(zk_connected=True, isr_followers={2, 3}, lagging={2, 3})


def test_one_caught_up_follower_is_footing_enough() -> None:
    assert not fenced(zk_connected=False, isr_followers={2, 3}, lagging={2})
    assert fenced(zk_connected=False, isr_followers={2, 3}, lagging={2, 3})


def test_a_leader_alone_in_its_isr_is_never_fenced() -> None:
    assert not fenced(zk_connected=False, isr_followers=set(), lagging=set())


@given(st.sampled_from([-1, 0, 1]), st.booleans())
def test_only_acks_all_is_refused(acks: int, is_fenced: bool) -> None:
    assert refuses(acks, is_fenced) == (is_fenced and acks == -1)


def test_reason_names_the_setting() -> None:
    assert "replica.lag.time.max.ms (3000 ms)" in reason(3000)


def test_with_the_followers_bookkeeping_an_idle_follower_at_the_end_keeps_the_leader_open() -> None:
    # Leader 1, followers 2 and 3 caught up at offset 10; then silence for long.
    followers = Followers()
    followers.reset([2, 3], now_ms=0)
    followers.on_fetch(2, 10, leader_end=10, now_ms=100)
    followers.on_fetch(3, 10, leader_end=10, now_ms=100)
    lagging = followers.lagging([1, 2, 3], 1, leader_end=10, now_ms=60_000, lag_max_ms=3000)
    assert not fenced(zk_connected=False, isr_followers={2, 3}, lagging=lagging)
    # A write arrives; nobody fetches it within the lag time: the leader is fenced.
    followers.on_leader_append(10, now_ms=60_000)
    lagging = followers.lagging([1, 2, 3], 1, leader_end=11, now_ms=63_001, lag_max_ms=3000)
    assert fenced(zk_connected=False, isr_followers={2, 3}, lagging=lagging)
    # One follower fetches the write: footing again.
    followers.on_fetch(3, 11, leader_end=11, now_ms=63_500)
    lagging = followers.lagging([1, 2, 3], 1, leader_end=11, now_ms=63_500, lag_max_ms=3000)
    assert not fenced(zk_connected=False, isr_followers={2, 3}, lagging=lagging)
