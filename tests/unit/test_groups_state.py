"""The group state machine: every (from, to) pair against Kafka's ``GroupState`` table."""

from __future__ import annotations

import itertools

import pytest

from pafka.cluster.states import IllegalStateTransitionError
from pafka.groups.membership import GroupMetadata
from pafka.groups.state import GROUP_TRANSITIONS, GroupState, group_transition

G = GroupState

# Kafka's GroupState.validPreviousStates, written out independently of the module's table.
KAFKA_GROUP = {
    (G.STABLE, G.PREPARING_REBALANCE),
    (G.COMPLETING_REBALANCE, G.PREPARING_REBALANCE),
    (G.EMPTY, G.PREPARING_REBALANCE),
    (G.PREPARING_REBALANCE, G.COMPLETING_REBALANCE),
    (G.COMPLETING_REBALANCE, G.STABLE),
    (G.PREPARING_REBALANCE, G.EMPTY),
    *((s, G.DEAD) for s in G),
}


def test_table_matches_kafka() -> None:
    assert set(GROUP_TRANSITIONS) == set(G)
    assert {(s, t) for t, ss in GROUP_TRANSITIONS.items() for s in ss} == KAFKA_GROUP


@pytest.mark.parametrize("pair", list(itertools.product(G, G)), ids=str)
def test_every_group_pair(pair: tuple[GroupState, GroupState]) -> None:
    current, target = pair
    if pair in KAFKA_GROUP:
        assert group_transition(current, target, "g") is target
    else:
        with pytest.raises(IllegalStateTransitionError) as caught:
            group_transition(current, target, "g")
        assert caught.value.current is current and caught.value.target is target
        assert current.value in str(caught.value) and target.value in str(caught.value)


@pytest.mark.parametrize("pair", list(itertools.product(G, G)), ids=str)
def test_group_metadata_moves_only_along_the_table(pair: tuple[GroupState, GroupState]) -> None:
    current, target = pair
    group = GroupMetadata("g", state=current)
    if pair in KAFKA_GROUP:
        group.transition(target)
        assert group.state is target
    else:
        with pytest.raises(IllegalStateTransitionError):
            group.transition(target)
        assert group.state is current


def test_dead_is_terminal() -> None:
    assert {t for s, t in KAFKA_GROUP if s is G.DEAD} == {G.DEAD}


def test_a_full_generation_walks_the_table() -> None:
    group = GroupMetadata("g")
    assert group.state is G.EMPTY
    for target in (
        G.PREPARING_REBALANCE,
        G.COMPLETING_REBALANCE,
        G.STABLE,
        G.PREPARING_REBALANCE,
        G.EMPTY,
        G.DEAD,
    ):
        group.transition(target)
    assert group.state is G.DEAD


def test_error_names_the_group() -> None:
    with pytest.raises(IllegalStateTransitionError, match="group 'orders' cannot move"):
        group_transition(G.EMPTY, G.STABLE, "orders")


def test_kafka_state_names() -> None:
    assert [s.value for s in G] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]
