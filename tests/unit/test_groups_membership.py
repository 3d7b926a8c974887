"""Group membership decisions (protocol choice, liveness, ownership hand-over) and coordinator
placement: worked examples, then hypothesis properties against small independent models."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.groups.consumer_protocol import TopicPartition
from pafka.groups.membership import (
    COOPERATIVE_PROTOCOLS,
    GroupMetadata,
    Member,
    grant_ownership,
)
from pafka.groups.placement import designated_coordinator
from pafka.groups.state import GroupState


def member(
    member_id: str,
    *protocols: str,
    last_heard_ms: int = 0,
    session_timeout_ms: int = 10_000,
    rebalance_timeout_ms: int = 30_000,
    **kwargs: object,
) -> Member:
    return Member(
        member_id,
        "client",
        "/127.0.0.1",
        session_timeout_ms,
        rebalance_timeout_ms,
        protocols=tuple((name, name.encode()) for name in protocols),
        last_heard_ms=last_heard_ms,
        **kwargs,  # type: ignore[arg-type]
    )


def group(*members: Member, **kwargs: object) -> GroupMetadata:
    meta = GroupMetadata("g", **kwargs)  # type: ignore[arg-type]
    meta.members = {m.member_id: m for m in members}
    return meta


# -- protocol selection ------------------------------------------------------------------------


def test_most_votes_wins() -> None:
    meta = group(
        member("a", "range", "roundrobin"),
        member("b", "roundrobin", "range"),
        member("c", "roundrobin", "range"),
    )
    assert meta.select_protocol() == "roundrobin"


def test_tie_is_broken_by_name() -> None:
    meta = group(member("a", "roundrobin", "range"), member("b", "range", "roundrobin"))
    assert meta.select_protocol() == "range"
    meta = group(member("b", "range", "roundrobin"), member("a", "roundrobin", "range"))
    assert meta.select_protocol() == "range"


def test_only_protocols_every_member_supports_are_candidates() -> None:
    meta = group(
        member("a", "sticky", "range"),
        member("b", "sticky", "range"),
        member("c", "range"),
    )
    assert meta.candidate_protocols() == {"range"}
    assert meta.select_protocol() == "range"


def test_members_without_protocols_do_not_constrain_candidates() -> None:
    meta = group(member("a", "range", "sticky"), member("loaded"))
    assert meta.candidate_protocols() == {"range", "sticky"}
    assert group(member("loaded")).candidate_protocols() == set()


def test_members_without_protocols_do_not_vote() -> None:
    meta = group(member("a", "range", "sticky"), member("loaded"))
    assert meta.select_protocol() == "range"
    with pytest.raises(ValueError, match="no member"):
        group(member("loaded")).select_protocol()


PROTOCOL_NAMES = st.sampled_from(["range", "roundrobin", "sticky", "cooperative-sticky"])
PREFERENCES = st.lists(PROTOCOL_NAMES, min_size=1, max_size=4, unique=True)


@st.composite
def sharing_preferences(draw: st.DrawFn) -> list[list[str]]:
    """Members' preference lists that have at least one protocol in common."""
    shared = draw(PROTOCOL_NAMES)
    lists = draw(st.lists(PREFERENCES, min_size=1, max_size=6))
    for prefs in lists:
        if shared not in prefs:
            prefs.insert(draw(st.integers(0, len(prefs))), shared)
    return lists


@given(sharing_preferences(), st.randoms(use_true_random=False))
def test_selection_is_the_vote_model_in_any_member_order(
    preferences: list[list[str]], rng: object
) -> None:
    members = [member(f"m{i}", *prefs) for i, prefs in enumerate(preferences)]
    common = set.intersection(*map(set, preferences))
    votes = Counter(next(p for p in prefs if p in common) for prefs in preferences)
    expected = sorted(votes, key=lambda name: (-votes[name], name))[0]
    assert group(*members).select_protocol() == expected
    shuffled = list(members)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    assert group(*shuffled).select_protocol() == expected


# -- admission ---------------------------------------------------------------------------------


def test_an_empty_group_admits_any_member_with_protocols() -> None:
    assert GroupMetadata("g").supports("consumer", ["range"])
    assert not GroupMetadata("g").supports("consumer", [])


def test_a_group_whose_members_have_no_protocols_yet_admits_anyone() -> None:
    assert group(member("loaded"), protocol_type="consumer").supports("consumer", ["x"])


def test_joiners_must_share_the_type_and_a_common_protocol() -> None:
    meta = group(member("a", "range", "sticky"), member("b", "sticky"), protocol_type="consumer")
    assert meta.supports("consumer", ["sticky"])
    assert meta.supports("consumer", ["roundrobin", "sticky"])
    assert not meta.supports("consumer", ["range"])  # not supported by b
    assert not meta.supports("connect", ["sticky"])
    assert not meta.supports("consumer", [])


# -- joining and liveness ----------------------------------------------------------------------


def test_all_joined_waits_for_every_member_and_pending_id() -> None:
    a, b = member("a", "range"), member("b", "range")
    meta = group(a, b)
    assert not meta.all_joined()
    assert meta.not_rejoined() == ["a", "b"]
    a.awaiting_join = True
    assert not meta.all_joined()
    assert meta.not_rejoined() == ["b"]
    b.awaiting_join = True
    assert meta.all_joined()
    meta.pending_members["c"] = 1_000
    assert not meta.all_joined()


def test_expiry_is_strictly_after_the_session_timeout() -> None:
    meta = group(member("a", last_heard_ms=1_000, session_timeout_ms=500))
    assert meta.expired_members(1_500) == []
    assert meta.expired_members(1_501) == ["a"]


@pytest.mark.parametrize("parked", ["awaiting_join", "awaiting_sync"])
def test_members_parked_at_the_coordinator_never_expire(parked: str) -> None:
    meta = group(member("a", last_heard_ms=0, session_timeout_ms=1, **{parked: True}))
    assert meta.expired_members(10**12) == []


MEMBER_STATES = st.tuples(
    st.integers(0, 10_000), st.integers(1, 5_000), st.booleans(), st.booleans()
)


@given(st.lists(MEMBER_STATES, max_size=6), st.integers(0, 20_000))
def test_expired_members_model(states: list[tuple[int, int, bool, bool]], now: int) -> None:
    members = [
        member(f"m{i}", last_heard_ms=h, session_timeout_ms=t, awaiting_join=j, awaiting_sync=s)
        for i, (h, t, j, s) in enumerate(states)
    ]
    expected = [f"m{i}" for i, (h, t, j, s) in enumerate(states) if not (j or s) and now > h + t]
    assert group(*members).expired_members(now) == expected


def test_expired_pending() -> None:
    meta = GroupMetadata("g", pending_members={"a": 100, "b": 200})
    assert meta.expired_pending(100) == []
    assert meta.expired_pending(150) == ["a"]
    assert sorted(meta.expired_pending(201)) == ["a", "b"]


def test_leader_timeouts_topics_and_instances() -> None:
    a = member("a", rebalance_timeout_ms=5, subscription=frozenset({"t"}))
    b = member(
        "b", "range", rebalance_timeout_ms=9, subscription=frozenset({"u", "t"}), instance_id="i"
    )
    meta = group(a, b)
    assert meta.choose_leader() == "a"
    meta.leader = "b"
    assert meta.choose_leader() == "b"
    meta.leader = "gone"
    assert meta.choose_leader() == "a"
    assert meta.rebalance_timeout_ms() == 9
    assert GroupMetadata("g").rebalance_timeout_ms() == 0
    assert meta.subscribed_topics() == {"t", "u"}
    assert GroupMetadata("g").subscribed_topics() == set()
    assert meta.member_by_instance("i") is b
    assert meta.member_by_instance("j") is None
    assert b.metadata("range") == b"range"
    with pytest.raises(KeyError):
        b.metadata("sticky")


# -- ownership ---------------------------------------------------------------------------------

T0, T1, T2, U0 = ("t", 0), ("t", 1), ("t", 2), ("u", 0)


@pytest.mark.parametrize(
    ("protocol", "released"), [("range", {T0, T1}), ("cooperative-sticky", {T1})]
)
def test_released_on_join(protocol: str, released: set[TopicPartition]) -> None:
    a = member("a", reported_owned=frozenset({T0}))
    meta = group(a, member("b"), protocol=protocol, owners={T0: "a", T1: "a", T2: "b"})
    assert meta.cooperative is (protocol in COOPERATIVE_PROTOCOLS)
    assert meta.released_on_join(a) == released


OWNER_IDS = st.sampled_from(["a", "b", "c", "gone"])
PARTITIONS = st.sampled_from([T0, T1, T2, U0, ("u", 1)])
OWNERS = st.dictionaries(PARTITIONS, OWNER_IDS, max_size=5)


@given(
    owners=OWNERS,
    reported=st.frozensets(PARTITIONS),
    protocol=st.sampled_from(["range", "roundrobin", "sticky", "cooperative-sticky"]),
)
def test_released_on_join_model(
    owners: dict[TopicPartition, str], reported: frozenset[TopicPartition], protocol: str
) -> None:
    a = member("a", reported_owned=reported)
    meta = group(a, member("b"), protocol=protocol, owners=dict(owners))
    mine = {tp for tp, owner in owners.items() if owner == "a"}
    assert meta.owned_by("a") == mine
    released = meta.released_on_join(a)
    if protocol == "cooperative-sticky":
        assert released == mine - reported
    else:
        assert released == mine
    assert released <= mine  # never anything another member owns


@given(owners=OWNERS, present=st.frozensets(OWNER_IDS))
def test_stale_owners_are_those_of_departed_members(
    owners: dict[TopicPartition, str], present: frozenset[str]
) -> None:
    meta = group(*(member(m) for m in sorted(present)), owners=dict(owners))
    assert meta.stale_owners() == {tp for tp, owner in owners.items() if owner not in present}


# -- grant_ownership ---------------------------------------------------------------------------


def test_grant_hands_over_free_and_dead_owned_partitions() -> None:
    granted, withheld = grant_ownership(
        {"a": frozenset({T0, T1}), "b": frozenset({T2, U0})},
        {T0: "a", T1: "gone", T2: "a"},
        ["a", "b"],
    )
    # T2 still belongs to a (live): b waits for it, and another rebalance must follow.
    assert granted == {"a": frozenset({T0, T1}), "b": frozenset({U0})}
    assert withheld


def test_grant_without_conflicts_withholds_nothing() -> None:
    assignments = {"a": frozenset({T0}), "b": frozenset({T1}), "c": frozenset()}
    granted, withheld = grant_ownership(assignments, {T0: "a", T1: "c"}, ["a", "b"])
    assert granted == assignments
    assert not withheld


def test_a_partition_assigned_twice_goes_to_the_first_member_by_id() -> None:
    granted, withheld = grant_ownership(
        {"b": frozenset({T0}), "a": frozenset({T0})}, {}, ["a", "b"]
    )
    assert granted == {"a": frozenset({T0}), "b": frozenset()}
    assert withheld


MEMBER_IDS = ["a", "b", "c", "d"]
ASSIGNMENTS = st.dictionaries(
    st.sampled_from(MEMBER_IDS), st.frozensets(PARTITIONS, max_size=5), max_size=4
)
GRANT_OWNERS = st.dictionaries(PARTITIONS, st.sampled_from([*MEMBER_IDS, "x", "y"]), max_size=5)
LIVE = st.lists(st.sampled_from([*MEMBER_IDS, "x", "y"]), unique=True, max_size=6)


def blocked(
    tp: TopicPartition, m: str, owners: Mapping[TopicPartition, str], live: set[str]
) -> bool:
    owner = owners.get(tp)
    return owner is not None and owner != m and owner in live


GrantCase = tuple[dict[str, frozenset[TopicPartition]], dict[TopicPartition, str], list[str]]
# The leader's assignments, the recorded owners (some of them gone), the live members.
GRANT_CASES = st.tuples(ASSIGNMENTS, GRANT_OWNERS, LIVE)


@given(GRANT_CASES)
def test_grant_properties(case: GrantCase) -> None:
    assignments, owners, live = case
    granted, withheld = grant_ownership(assignments, owners, live)
    alive = set(live)
    assert set(granted) == set(assignments)
    for m, tps in granted.items():
        assert tps <= assignments[m]
        # Never a partition another live member still owns.
        assert not any(blocked(tp, m, owners, alive) for tp in tps)
    # Never one partition to two members.
    counts = Counter(tp for tps in granted.values() for tp in tps)
    assert all(n == 1 for n in counts.values())
    # Withheld exactly when some member was not given all it was assigned.
    assert withheld == any(granted[m] != assignments[m] for m in assignments)
    # Every assigned partition nobody live holds (or that its assignee holds) is handed out.
    for m, tps in assignments.items():
        for tp in tps:
            if not blocked(tp, m, owners, alive):
                assert tp in counts


@given(GRANT_CASES)
def test_grant_model(case: GrantCase) -> None:
    """Each partition goes to the first member by id that may take it."""
    assignments, owners, live = case
    alive = set(live)
    expected: dict[str, set[TopicPartition]] = {m: set() for m in assignments}
    for tp in {tp for tps in assignments.values() for tp in tps}:
        eligible = sorted(
            m for m, tps in assignments.items() if tp in tps and not blocked(tp, m, owners, alive)
        )
        if eligible:
            expected[eligible[0]].add(tp)
    granted, _ = grant_ownership(assignments, owners, reversed(live))
    assert granted == {m: frozenset(tps) for m, tps in expected.items()}


@given(assignments=ASSIGNMENTS, owners=GRANT_OWNERS)
def test_single_assignee_takes_unowned_and_dead_owned_partitions(
    assignments: dict[str, frozenset[TopicPartition]], owners: dict[TopicPartition, str]
) -> None:
    live = set(assignments)
    granted, _ = grant_ownership(assignments, owners, live)
    assignees = Counter(tp for tps in assignments.values() for tp in tps)
    for m, tps in assignments.items():
        for tp in tps:
            if assignees[tp] == 1 and owners.get(tp) in (None, m, "x", "y"):
                assert tp in granted[m]


# -- coordinator placement ---------------------------------------------------------------------

BROKERS = st.lists(st.integers(0, 50), min_size=1, max_size=8, unique=True)
GROUP_NAMES = st.text(max_size=20)


def test_no_broker_no_coordinator() -> None:
    assert designated_coordinator("g", []) is None
    assert designated_coordinator("g", iter(())) is None


@given(GROUP_NAMES, BROKERS, st.randoms(use_true_random=False))
def test_designation_is_a_live_broker_whatever_the_order(
    name: str, brokers: list[int], rng: object
) -> None:
    chosen = designated_coordinator(name, brokers)
    assert chosen in brokers
    shuffled = list(brokers)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    assert designated_coordinator(name, shuffled) == chosen
    assert designated_coordinator(name, iter(shuffled + shuffled)) == chosen
    assert designated_coordinator(name, [chosen]) == chosen


@given(st.lists(GROUP_NAMES, max_size=30), BROKERS.filter(lambda b: len(b) > 1), st.data())
def test_removing_a_broker_moves_only_its_groups(
    names: Sequence[str], brokers: list[int], data: st.DataObject
) -> None:
    gone = data.draw(st.sampled_from(brokers))
    rest = [b for b in brokers if b != gone]
    for name in names:
        before = designated_coordinator(name, brokers)
        after = designated_coordinator(name, rest)
        if before != gone:
            assert after == before
        else:
            assert after in rest


@given(st.lists(GROUP_NAMES, max_size=30), BROKERS, st.integers(51, 100))
def test_adding_a_broker_moves_groups_only_to_it(
    names: Sequence[str], brokers: list[int], new: int
) -> None:
    for name in names:
        after = designated_coordinator(name, [*brokers, new])
        assert after in (designated_coordinator(name, brokers), new)


@pytest.mark.parametrize("brokers", [[1, 2, 3], [0, 1, 2, 3, 4], [3, 17, 101, 1002, 5, 6, 7]])
def test_groups_spread_roughly_evenly(brokers: list[int]) -> None:
    names = [f"group-{i}" for i in range(3_000)]
    counts = Counter(designated_coordinator(name, brokers) for name in names)
    fair = len(names) / len(brokers)
    assert set(counts) == set(brokers)
    assert all(0.75 * fair <= n <= 1.25 * fair for n in counts.values()), counts


# -- static members coming back (KIP-345) ---------------------------------------------------------


def _stable(*members: Member, protocol: str = "range", leader: str = "a") -> GroupMetadata:
    meta = GroupMetadata("g", state=GroupState.STABLE, protocol=protocol, leader=leader)
    meta.members = {m.member_id: m for m in members}
    return meta


def test_returning_static_member_keeps_the_generation_leader_or_not() -> None:
    # The leader "a" came back under a new id with new metadata: no rebalance either way.
    meta = _stable(member("a2", "range"), member("b", "range"), leader="a2")
    assert meta.static_rejoin_keeps_generation()
    assert _stable(member("a", "range"), member("b2", "range")).static_rejoin_keeps_generation()


def test_returning_static_member_that_changes_the_protocol_rebalances() -> None:
    meta = _stable(member("a2", "roundrobin"), member("b", "range", "roundrobin"))
    assert not meta.static_rejoin_keeps_generation()


def test_static_member_returning_to_a_rebalancing_group_rebalances() -> None:
    meta = _stable(member("a", "range"))
    meta.state = GroupState.PREPARING_REBALANCE
    assert not meta.static_rejoin_keeps_generation()
