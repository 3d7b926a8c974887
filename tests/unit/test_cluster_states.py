"""The partition and replica state machines: every (from, to) pair against Kafka's tables."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TypeVar

import pytest

from pafka.cluster.states import (
    PARTITION_TRANSITIONS,
    REPLICA_TRANSITIONS,
    IllegalStateTransitionError,
    PartitionState,
    ReplicaState,
    partition_targets,
    partition_transition,
    replica_targets,
    replica_transition,
)

P = PartitionState
R = ReplicaState
S = TypeVar("S", PartitionState, ReplicaState)

# Kafka's validPreviousStates, written out independently of the module's table.
KAFKA_PARTITION = {
    (P.NON_EXISTENT, P.NEW),
    (P.NEW, P.ONLINE),
    (P.ONLINE, P.ONLINE),
    (P.OFFLINE, P.ONLINE),
    (P.NEW, P.OFFLINE),
    (P.ONLINE, P.OFFLINE),
    (P.OFFLINE, P.OFFLINE),
    (P.OFFLINE, P.NON_EXISTENT),
}
KAFKA_REPLICA = {
    (R.NON_EXISTENT, R.NEW),
    *((s, R.ONLINE) for s in (R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE)),
    *((s, R.OFFLINE) for s in (R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE)),
    (R.OFFLINE, R.DELETION_STARTED),
    (R.DELETION_STARTED, R.DELETION_SUCCESSFUL),
    (R.OFFLINE, R.DELETION_INELIGIBLE),
    (R.DELETION_STARTED, R.DELETION_INELIGIBLE),
    (R.DELETION_SUCCESSFUL, R.NON_EXISTENT),
}


def test_tables_match_kafka() -> None:
    assert set(PARTITION_TRANSITIONS) == set(P)
    assert set(REPLICA_TRANSITIONS) == set(R)
    assert {(s, t) for t, ss in PARTITION_TRANSITIONS.items() for s in ss} == KAFKA_PARTITION
    assert {(s, t) for t, ss in REPLICA_TRANSITIONS.items() for s in ss} == KAFKA_REPLICA


@pytest.mark.parametrize("pair", list(itertools.product(P, P)), ids=str)
def test_every_partition_pair(pair: tuple[PartitionState, PartitionState]) -> None:
    check(pair, KAFKA_PARTITION, partition_transition)


@pytest.mark.parametrize("pair", list(itertools.product(R, R)), ids=str)
def test_every_replica_pair(pair: tuple[ReplicaState, ReplicaState]) -> None:
    check(pair, KAFKA_REPLICA, replica_transition)


def check(pair: tuple[S, S], allowed: set[tuple[S, S]], move: Callable[[S, S], S]) -> None:
    current, target = pair
    if pair in allowed:
        assert move(current, target) is target
    else:
        with pytest.raises(IllegalStateTransitionError) as caught:
            move(current, target)
        assert caught.value.current is current and caught.value.target is target
        assert current.value in str(caught.value) and target.value in str(caught.value)


def test_targets_are_the_inverse_table() -> None:
    for s in P:
        assert partition_targets(s) == {t for c, t in KAFKA_PARTITION if c is s}
    for r in R:
        assert replica_targets(r) == {t for c, t in KAFKA_REPLICA if c is r}


def test_error_names_the_partition() -> None:
    with pytest.raises(IllegalStateTransitionError, match="orders-3 cannot move"):
        partition_transition(P.ONLINE, P.NEW, "orders-3")


def test_kafka_state_names() -> None:
    assert [s.value for s in P] == [
        "NonExistentPartition",
        "NewPartition",
        "OnlinePartition",
        "OfflinePartition",
    ]
    assert R.DELETION_INELIGIBLE.value == "ReplicaDeletionIneligible"
