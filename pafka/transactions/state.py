"""The transaction state machine as a transition table (Kafka's ``TransactionState``).

Empty ─AddPartitions/AddOffsets─► Ongoing ─EndTxn(commit)─► PrepareCommit ─markers─► CompleteCommit
Ongoing ─EndTxn(abort), timeout─► PrepareAbort ─markers─► CompleteAbort
Ongoing ─InitProducerId of a new producer─► PrepareEpochFence ─► PrepareAbort (epoch bumped)
Empty, CompleteCommit, CompleteAbort ─InitProducerId (epoch bump)─► Empty; ─AddPartitions─► Ongoing

PrepareEpochFence is never stored: as in Kafka it is the step between Ongoing and the stored
PrepareAbort with the bumped epoch. Dead is an expired transactional id about to be removed.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from pafka.cluster.states import transition


class TxnState(enum.Enum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"

    @property
    def expiration_allowed(self) -> bool:
        """States whose transactional id may expire (no transaction in flight)."""
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @property
    def completing(self) -> bool:
        """Markers are being written: the client must wait (CONCURRENT_TRANSACTIONS)."""
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)


T = TxnState

TXN_TRANSITIONS: Mapping[TxnState, frozenset[TxnState]] = {
    T.EMPTY: frozenset({T.EMPTY, T.COMPLETE_COMMIT, T.COMPLETE_ABORT}),
    T.ONGOING: frozenset({T.ONGOING, T.EMPTY, T.COMPLETE_COMMIT, T.COMPLETE_ABORT}),
    T.PREPARE_COMMIT: frozenset({T.ONGOING}),
    T.PREPARE_ABORT: frozenset({T.ONGOING, T.PREPARE_EPOCH_FENCE}),
    T.COMPLETE_COMMIT: frozenset({T.PREPARE_COMMIT}),
    T.COMPLETE_ABORT: frozenset({T.PREPARE_ABORT}),
    T.DEAD: frozenset({T.EMPTY, T.COMPLETE_COMMIT, T.COMPLETE_ABORT}),
    T.PREPARE_EPOCH_FENCE: frozenset({T.ONGOING}),
}
"""Target state -> the states it may be entered from (Kafka's ``validPreviousStates``)."""


def txn_transition(current: TxnState, target: TxnState, transactional_id: str) -> TxnState:
    """``target`` if a transaction may move there from ``current``, else
    IllegalStateTransitionError."""
    return transition(TXN_TRANSITIONS, current, target, f"transactional id {transactional_id!r}")
