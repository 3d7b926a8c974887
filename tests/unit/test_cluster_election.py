"""Leader election algorithms and the state machine tables."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.cluster.election import (
    Election,
    controlled_shutdown_leader,
    isr_without,
    offline_partition_leader,
    preferred_imbalance,
    preferred_replica_leader,
)
from pafka.cluster.names import validate_topic_name
from pafka.cluster.states import (
    PARTITION_TRANSITIONS,
    REPLICA_TRANSITIONS,
    IllegalStateTransitionError,
    PartitionState,
    ReplicaState,
    partition_transition,
    replica_transition,
)
from pafka.errors import InvalidTopicError


def test_offline_election_prefers_assignment_order_within_the_isr() -> None:
    assert offline_partition_leader([1, 2, 3], [3, 2], {2, 3}, False) == Election(2, (3, 2))
    assert offline_partition_leader([1, 2, 3], [1], {2, 3}, False) is None
    assert offline_partition_leader([1, 2, 3], [1], {2, 3}, True) == Election(2, (2,), unclean=True)


@given(
    assignment=st.lists(st.integers(0, 6), min_size=1, max_size=5, unique=True),
    isr_mask=st.lists(st.booleans(), min_size=5, max_size=5),
    live=st.sets(st.integers(0, 6)),
    unclean=st.booleans(),
)
def test_offline_election_properties(
    assignment: list[int], isr_mask: list[bool], live: set[int], unclean: bool
) -> None:
    isr = [b for b, inside in zip(assignment, isr_mask, strict=False) if inside]
    result = offline_partition_leader(assignment, isr, live, unclean)
    clean_candidates = [b for b in assignment if b in live and b in isr]
    if clean_candidates:
        assert result is not None and result.leader == clean_candidates[0] and not result.unclean
        assert set(result.isr) <= live
    elif unclean and set(assignment) & live:
        assert result is not None and result.unclean and result.leader in live
    else:
        assert result is None


def test_preferred_and_controlled_shutdown() -> None:
    assert preferred_replica_leader([1, 2], [1, 2], {1, 2}) == Election(1, (1, 2))
    assert preferred_replica_leader([1, 2], [2], {1, 2}) is None
    assert controlled_shutdown_leader([1, 2, 3], [1, 2, 3], {1, 2, 3}, {1}) == Election(2, (2, 3))
    assert controlled_shutdown_leader([1], [1], {1}, {1}) is None


def test_isr_never_empties() -> None:
    assert isr_without([1, 2], {1}) == (2,)
    assert isr_without([1, 2], {1, 2}) == (1,)


def test_preferred_imbalance() -> None:
    ratios = preferred_imbalance(
        {("t", 0): (2, [1, 2]), ("t", 1): (1, [1, 2]), ("t", 2): (2, [2, 1])}
    )
    assert ratios == {1: 0.5, 2: 0.0}


@pytest.mark.parametrize(
    ("table", "move", "states"),
    [
        (PARTITION_TRANSITIONS, partition_transition, list(PartitionState)),
        (REPLICA_TRANSITIONS, replica_transition, list(ReplicaState)),
    ],
)
def test_every_transition_pair_follows_the_table(table, move, states) -> None:  # type: ignore[no-untyped-def]
    for current, target in itertools.product(states, states):
        if current in table[target]:
            assert move(current, target) is target
        else:
            with pytest.raises(IllegalStateTransitionError):
                move(current, target)


@pytest.mark.parametrize("name", ["a", "A.b_c-1", "x" * 249])
def test_legal_topic_names(name: str) -> None:
    validate_topic_name(name)


@pytest.mark.parametrize("name", ["", ".", "..", "x" * 250, "a b", "a/b", "ü", "a\x00"])
def test_illegal_topic_names(name: str) -> None:
    with pytest.raises(InvalidTopicError):
        validate_topic_name(name)
