"""One transactional id's state (Kafka's ``TransactionMetadata``), immutable.

Every change goes through :meth:`TxnMetadata.moved_to`, which checks the transition table, so no
decision can produce a state Kafka's coordinator could not be in.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from pafka.groups.offsets_partition import OFFSETS_TOPIC
from pafka.transactions.state import TxnState, txn_transition

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
# Short.MaxValue: never handed to a client, so a coordinator can always fence one more time.
MAX_PRODUCER_EPOCH = 32767

TopicPartition = tuple[str, int]


def epoch_exhausted(epoch: int) -> bool:
    """No epoch can be handed out after this one (Kafka's ``isEpochExhausted``)."""
    return epoch >= MAX_PRODUCER_EPOCH - 1


@dataclass(frozen=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    # The producer id and epoch before the last bump or rotation, so a retried InitProducerId
    # whose answer was lost is recognised (KIP-360).
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60_000
    state: TxnState = TxnState.EMPTY
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    # Groups whose offsets the transaction commits (AddOffsetsToTxn): their coordinators get
    # the markers of the ``__consumer_offsets`` partitions.
    groups: frozenset[str] = field(default_factory=frozenset)
    start_ms: int = -1
    last_update_ms: int = -1

    def moved_to(self, state: TxnState, **changes: object) -> TxnMetadata:
        """This transaction in ``state`` with ``changes``; IllegalStateTransitionError if the
        table forbids the move."""
        txn_transition(self.state, state, self.transactional_id)
        return dataclasses.replace(self, state=state, **changes)  # type: ignore[arg-type]

    @property
    def epoch_exhausted(self) -> bool:
        return epoch_exhausted(self.producer_epoch)

    @property
    def data_partitions(self) -> frozenset[TopicPartition]:
        """Partitions whose leaders get markers; ``__consumer_offsets`` ones go to groups."""
        return frozenset(tp for tp in self.partitions if tp[0] != OFFSETS_TOPIC)
