"""The follower's fetch session against a model of the leader's cache (KIP-227 semantics)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from services.broker.follower_session import (
    INITIAL_EPOCH,
    MAX_EPOCH,
    FollowerSession,
    PartitionRequest,
    SessionRequest,
)

TopicPartition = tuple[str, int]

keys = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 5))
requests = st.builds(
    PartitionRequest,
    st.integers(0, 3),
    st.integers(0, 1),
    st.integers(0, 2),
    st.just(1024),
)
wanted_maps = st.dictionaries(keys, requests, max_size=8)


class LeaderModel:
    """What a leader keeps for one follower's session."""

    def __init__(self) -> None:
        self.session_id = 0
        self.epoch = 0
        self.cached: dict[TopicPartition, PartitionRequest] = {}

    def handle(self, request: SessionRequest, new_id: int) -> tuple[int, int]:
        """(error_code, session_id) as a leader answers."""
        if request.full:
            self.session_id, self.epoch, self.cached = new_id, 1, dict(request.partitions)
            return 0, new_id
        if request.session_id != self.session_id:
            return 70, 0
        if request.session_epoch != self.epoch:
            return 71, 0
        for key in request.forgotten:
            self.cached.pop(key, None)
        self.cached.update(request.partitions)
        self.epoch += 1
        return 0, self.session_id


@given(
    st.lists(
        st.tuples(wanted_maps, st.sampled_from(["ok", "ok", "ok", "lost", "declined"])),
        max_size=25,
    )
)
def test_the_leaders_cache_always_matches_what_the_follower_last_wanted(
    rounds: list[tuple[dict[TopicPartition, PartitionRequest], str]],
) -> None:
    leader = LeaderModel()
    session = FollowerSession()
    previous: dict[TopicPartition, PartitionRequest] = {}
    for number, (wanted, outcome) in enumerate(rounds, start=1):
        # What a fetcher tracks: only the entries that changed since its last request.
        touched = {
            tp for tp in wanted.keys() | previous.keys() if wanted.get(tp) != previous.get(tp)
        }
        previous = wanted
        request = session.build(wanted, touched)
        if outcome == "lost":
            # The leader restarted: it knows no session, whatever we send.
            leader = LeaderModel()
            leader.session_id = -1
        if outcome == "declined" and request.full:
            session.on_response(request, 0, 0)
            assert session.next_epoch == INITIAL_EPOCH
            continue
        error, session_id = leader.handle(request, new_id=number)
        session.on_response(request, error, session_id)
        if error:
            assert session.next_epoch == INITIAL_EPOCH and not session.sent
            continue
        assert leader.cached == wanted
        assert session.sent == wanted


@given(wanted_maps)
def test_an_idle_follower_sends_nothing_once_the_session_holds_its_partitions(
    wanted: dict[TopicPartition, PartitionRequest],
) -> None:
    session = FollowerSession()
    first = session.build(wanted, wanted.keys())
    assert first.full and first.partitions == wanted
    session.on_response(first, 0, 42)
    idle = session.build(wanted, wanted.keys())
    assert (idle.session_id, idle.session_epoch) == (42, 1)
    assert idle.partitions == {} and idle.forgotten == ()


def test_only_changed_partitions_are_sent_and_removed_ones_forgotten() -> None:
    session = FollowerSession()
    a, b, c = ("t", 0), ("t", 1), ("u", 0)
    first = session.build(
        {a: PartitionRequest(0, 0, 1, 10), b: PartitionRequest(5, 0, 1, 10)}, {a, b}
    )
    session.on_response(first, 0, 7)
    second = session.build(
        {a: PartitionRequest(3, 0, 1, 10), c: PartitionRequest(0, 0, 2, 10)}, {a, b, c}
    )
    assert second.partitions == {a: PartitionRequest(3, 0, 1, 10), c: PartitionRequest(0, 0, 2, 10)}
    assert second.forgotten == (b,)


def test_a_new_leader_epoch_alone_puts_the_partition_in_the_request() -> None:
    session = FollowerSession()
    key = ("t", 0)
    first = session.build({key: PartitionRequest(9, 0, 1, 10)}, {key})
    session.on_response(first, 0, 3)
    assert session.build({key: PartitionRequest(9, 0, 2, 10)}, {key}).partitions == {
        key: PartitionRequest(9, 0, 2, 10)
    }


def test_the_epoch_wraps_to_one_not_to_the_initial_epoch() -> None:
    session = FollowerSession(session_id=5, next_epoch=MAX_EPOCH)
    request = session.build({}, ())
    session.on_response(request, 0, 5)
    assert session.next_epoch == 1
