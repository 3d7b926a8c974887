"""Fetch session decisions (KIP-227), pure: epochs, what a request does to a session's
partitions, what an incremental response carries, which session a full cache gives up."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from services.broker.fetch_sessions import (
    EVICTION_MS,
    FINAL_EPOCH,
    MAX_EPOCH,
    CachedPartition,
    PartitionOutcome,
    PartitionRequest,
    RequestKind,
    SessionStanding,
    apply_request,
    eviction_choice,
    must_respond,
    next_epoch,
    remember_response,
    request_kind,
    stays_dirty,
)

keys = st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 5))
requests = st.builds(
    PartitionRequest, keys, st.integers(0, 10**6), st.integers(1, 10**6), st.integers(-1, 9)
)
outcomes = st.builds(
    PartitionOutcome,
    st.sampled_from([0, 0, 0, 6, 74]),
    st.integers(0, 1000),
    st.integers(-1, 100),
    st.integers(-1, 100),
)


def test_epochs_choose_the_kind_of_fetch() -> None:
    assert request_kind(-1) is RequestKind.SESSIONLESS
    assert request_kind(0) is RequestKind.NEW_SESSION
    assert request_kind(1) is RequestKind.INCREMENTAL
    assert request_kind(-7) is RequestKind.INCREMENTAL  # no such session epoch: refused later


def test_the_epoch_after_the_largest_wraps_to_one_never_zero() -> None:
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42
    assert next_epoch(MAX_EPOCH) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


@given(
    st.lists(requests, max_size=8),
    st.lists(requests, max_size=8),
    st.lists(keys, max_size=4),
)
def test_a_request_adds_updates_and_forgets_partitions(
    first: list[PartitionRequest], second: list[PartitionRequest], forgotten: list[tuple[str, int]]
) -> None:
    partitions: dict[tuple[str, int], CachedPartition] = {}
    apply_request(partitions, first, ())
    before = {
        k: (c.fetch_offset, c.max_bytes, c.current_leader_epoch) for k, c in partitions.items()
    }

    touched, removed = apply_request(partitions, second, forgotten)

    latest = {r.key: r for r in second}
    assert set(partitions) == (set(before) | set(latest)) - set(forgotten)
    assert set(removed) == (set(before) | set(latest)) & set(forgotten)
    assert set(touched) == set(latest) - set(forgotten)
    for key, cached in partitions.items():
        if key in latest:  # named: takes the request's position
            want = latest[key]
            assert (cached.fetch_offset, cached.max_bytes, cached.current_leader_epoch) == (
                want.fetch_offset,
                want.max_bytes,
                want.current_leader_epoch,
            )
        else:  # not named: keeps what was cached
            assert (cached.fetch_offset, cached.max_bytes, cached.current_leader_epoch) == before[
                key
            ]


def test_a_new_partition_is_always_in_the_next_response() -> None:
    partitions: dict[tuple[str, int], CachedPartition] = {}
    apply_request(partitions, [PartitionRequest(("t", 0), 5, 100, 3)], ())
    idle = PartitionOutcome(0, 0, 0, 0)
    assert must_respond(partitions[("t", 0)], idle)


@given(outcomes, outcomes)
def test_an_incremental_response_carries_only_news(
    told: PartitionOutcome, now: PartitionOutcome
) -> None:
    cached = CachedPartition(0, 100, -1)
    remember_response(cached, told)
    news = (
        now.records_bytes > 0
        or now.error_code != 0
        or told.error_code != 0  # after an error the partition is told everything again
        or (now.high_watermark, now.log_start_offset)
        != (told.high_watermark, told.log_start_offset)
    )
    assert must_respond(cached, now) == news


@given(outcomes)
def test_once_told_an_unchanged_partition_is_left_out(outcome: PartitionOutcome) -> None:
    cached = CachedPartition(0, 100, -1)
    remember_response(cached, outcome)
    quiet = PartitionOutcome(0, 0, outcome.high_watermark, outcome.log_start_offset)
    assert must_respond(cached, quiet) == (outcome.error_code != 0)


def test_only_a_read_that_found_nothing_settles_a_partition() -> None:
    assert not stays_dirty(PartitionOutcome(0, 0, 10, 0), skipped=False)
    assert stays_dirty(PartitionOutcome(0, 0, 10, 0), skipped=True)
    assert stays_dirty(PartitionOutcome(0, 512, 10, 0), skipped=False)
    assert stays_dirty(PartitionOutcome(6, 0, -1, -1), skipped=False)


NOW = 10 * EVICTION_MS
OLD = NOW - EVICTION_MS - 1  # created long enough ago to be evictable


def standing(
    sid: int, privileged: bool, size: int, created: int = OLD, used: int = NOW
) -> SessionStanding:
    return SessionStanding(sid, privileged, size, created, used)


def test_a_stale_session_goes_first_whoever_asks() -> None:
    sessions = [standing(1, True, 5000, used=NOW - EVICTION_MS - 1), standing(2, False, 1)]
    assert eviction_choice(sessions, privileged=False, size=1, now_ms=NOW) == 1


def test_a_follower_displaces_a_consumer_but_not_the_reverse() -> None:
    sessions = [standing(1, True, 10), standing(2, False, 10_000)]
    assert eviction_choice(sessions, privileged=True, size=1, now_ms=NOW) == 2
    only_follower = [standing(1, True, 10)]
    assert eviction_choice(only_follower, privileged=False, size=10**6, now_ms=NOW) is None


def test_a_larger_session_displaces_a_smaller_one_of_its_kind() -> None:
    sessions = [standing(1, False, 10), standing(2, False, 3)]
    assert eviction_choice(sessions, privileged=False, size=4, now_ms=NOW) == 2
    assert eviction_choice(sessions, privileged=False, size=3, now_ms=NOW) is None


def test_a_young_session_is_not_evicted_for_its_size() -> None:
    sessions = [standing(1, False, 1, created=NOW - 5)]
    assert eviction_choice(sessions, privileged=True, size=10**6, now_ms=NOW) is None


@given(
    st.lists(
        st.builds(
            SessionStanding,
            st.integers(1, 50),
            st.booleans(),
            st.integers(0, 100),
            st.integers(0, NOW),
            st.integers(0, NOW),
        ),
        max_size=10,
        unique_by=lambda s: s.session_id,
    ),
    st.booleans(),
    st.integers(0, 100),
)
def test_eviction_never_takes_what_the_newcomer_may_not(
    sessions: list[SessionStanding], privileged: bool, size: int
) -> None:
    victim = eviction_choice(sessions, privileged, size, NOW)
    if victim is None:
        return
    chosen = next(s for s in sessions if s.session_id == victim)
    if NOW - chosen.last_used_ms > EVICTION_MS:
        return  # stale: anyone may take its place
    assert NOW - chosen.created_ms > EVICTION_MS
    assert privileged or not chosen.privileged
    assert (privileged, size) > (chosen.privileged, chosen.size)
