"""The controller's partition and replica state machines as explicit transition tables.

Each table maps a target state to the states it may be entered from (Kafka's
``validPreviousStates`` in ``PartitionStateMachine.scala`` / ``ReplicaStateMachine.scala``);
:func:`partition_transition` and :func:`replica_transition` are the only ways to move, and refuse
anything else with :class:`IllegalStateTransitionError`.

Partitions: NonExistent → New → Online ⇄ Offline → NonExistent (New may also go straight to
Offline; Online and Offline may repeat, a re-election).

Replicas: NonExistent → New → Online ⇄ Offline (New may go straight to Offline; both repeat);
deletion runs Offline → DeletionStarted → DeletionSuccessful → NonExistent, and a deletion that
cannot proceed parks in DeletionIneligible (from Offline or DeletionStarted), which goes back
to Online or Offline.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TypeVar

from pafka.errors import PafkaError


class IllegalStateTransitionError(PafkaError):
    """The controller tried a state change its state machine does not allow."""

    def __init__(
        self, message: str = "", current: enum.Enum | None = None, target: enum.Enum | None = None
    ) -> None:
        super().__init__(message)
        self.current = current
        self.target = target


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

PARTITION_TRANSITIONS: Mapping[PartitionState, frozenset[PartitionState]] = {
    # Assigned replicas exist in ZooKeeper, no leader yet.
    P.NEW: frozenset({P.NON_EXISTENT}),
    # A leader has been elected.
    P.ONLINE: frozenset({P.NEW, P.ONLINE, P.OFFLINE}),
    # The leader died (or the topic is being deleted).
    P.OFFLINE: frozenset({P.NEW, P.ONLINE, P.OFFLINE}),
    # Deleted, or never created.
    P.NON_EXISTENT: frozenset({P.OFFLINE}),
}
"""Target state -> the states it may be entered from."""

REPLICA_TRANSITIONS: Mapping[ReplicaState, frozenset[ReplicaState]] = {
    # Created by assignment or reassignment; can only become a follower.
    R.NEW: frozenset({R.NON_EXISTENT}),
    # Part of the assigned replicas, hosted by a live broker.
    R.ONLINE: frozenset({R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE}),
    # Its broker died (or it is about to be deleted).
    R.OFFLINE: frozenset({R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE}),
    # StopReplica(delete) sent.
    R.DELETION_STARTED: frozenset({R.OFFLINE}),
    # The broker confirmed the deletion.
    R.DELETION_SUCCESSFUL: frozenset({R.DELETION_STARTED}),
    # Deletion failed or its broker is down; retried later.
    R.DELETION_INELIGIBLE: frozenset({R.OFFLINE, R.DELETION_STARTED}),
    # Gone from the controller's view.
    R.NON_EXISTENT: frozenset({R.DELETION_SUCCESSFUL}),
}
"""Target state -> the states it may be entered from."""

S = TypeVar("S", bound=enum.Enum)


def transition(table: Mapping[S, frozenset[S]], current: S, target: S, what: str) -> S:
    """``target`` if ``table`` (target -> sources) allows it from ``current``, else raise."""
    if current not in table[target]:
        allowed = ", ".join(sorted(s.value for s in table[target]))
        raise IllegalStateTransitionError(
            f"{what} cannot move from {current.value} to {target.value}; "
            f"{target.value} may only be entered from {allowed}",
            current,
            target,
        )
    return target


def partition_transition(
    current: PartitionState, target: PartitionState, what: str = "partition"
) -> PartitionState:
    """``target`` if the partition state machine allows ``current -> target``, else raise.

    ``what`` names the partition in the error message (e.g. ``"orders-3"``).
    """
    return transition(PARTITION_TRANSITIONS, current, target, what)


def replica_transition(
    current: ReplicaState, target: ReplicaState, what: str = "replica"
) -> ReplicaState:
    """``target`` if the replica state machine allows ``current -> target``, else raise."""
    return transition(REPLICA_TRANSITIONS, current, target, what)


def _targets(table: Mapping[S, frozenset[S]], current: S) -> frozenset[S]:
    return frozenset(target for target, sources in table.items() if current in sources)


def partition_targets(current: PartitionState) -> frozenset[PartitionState]:
    """The states a partition in ``current`` may move to."""
    return _targets(PARTITION_TRANSITIONS, current)


def replica_targets(current: ReplicaState) -> frozenset[ReplicaState]:
    """The states a replica in ``current`` may move to."""
    return _targets(REPLICA_TRANSITIONS, current)
