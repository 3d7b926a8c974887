"""The controller's partition and replica state machines as explicit transition tables.

Each table maps a target state to the states it may be entered from (Kafka's
``validPreviousStates``); :func:`transition` is the only way to move, and refuses anything else.
"""

from __future__ import annotations

import enum
from typing import TypeVar

from pafka.errors import PafkaError


class IllegalStateTransitionError(PafkaError):
    """The controller tried a state change its state machine does not allow."""


class PartitionState(enum.Enum):
    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"


class ReplicaState(enum.Enum):
    NON_EXISTENT = "NonExistentReplica"
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"


P = PartitionState
R = ReplicaState

PARTITION_TRANSITIONS: dict[PartitionState, frozenset[PartitionState]] = {
    P.NEW: frozenset({P.NON_EXISTENT}),
    P.ONLINE: frozenset({P.NEW, P.ONLINE, P.OFFLINE}),
    P.OFFLINE: frozenset({P.NEW, P.ONLINE, P.OFFLINE}),
    P.NON_EXISTENT: frozenset({P.OFFLINE}),
}

REPLICA_TRANSITIONS: dict[ReplicaState, frozenset[ReplicaState]] = {
    R.NEW: frozenset({R.NON_EXISTENT}),
    R.ONLINE: frozenset({R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE}),
    R.OFFLINE: frozenset({R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE}),
    R.DELETION_STARTED: frozenset({R.OFFLINE}),
    R.DELETION_SUCCESSFUL: frozenset({R.DELETION_STARTED}),
    R.DELETION_INELIGIBLE: frozenset({R.OFFLINE, R.DELETION_STARTED}),
    R.NON_EXISTENT: frozenset({R.DELETION_SUCCESSFUL}),
}

S = TypeVar("S", PartitionState, ReplicaState)


def _transition(table: dict[S, frozenset[S]], current: S, target: S, what: str) -> S:
    if current not in table[target]:
        raise IllegalStateTransitionError(
            f"{what} cannot move from {current.value} to {target.value}; "
            f"allowed from {sorted(s.value for s in table[target])}"
        )
    return target


def partition_transition(
    current: PartitionState, target: PartitionState, what: str = "partition"
) -> PartitionState:
    return _transition(PARTITION_TRANSITIONS, current, target, what)


def replica_transition(
    current: ReplicaState, target: ReplicaState, what: str = "replica"
) -> ReplicaState:
    return _transition(REPLICA_TRANSITIONS, current, target, what)
