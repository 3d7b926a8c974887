"""Transactions of one partition (KIP-98): which are open, where they start, how they ended.

Kafka's ``ProducerStateManager`` rules, as the partition side needs them:

* a producer's first transactional batch after none (or after a marker) opens its transaction
  at that batch's base offset; later batches of the same transaction change nothing;
* a non-transactional batch from a producer whose transaction is open is INVALID_TXN_STATE;
* a control batch (COMMIT or ABORT marker) ends the producer's open transaction; a marker with
  no transaction open completes nothing (nothing to index, no effect on the stable offset);
* a marker whose coordinator epoch is older than the last one seen for the producer is
  TRANSACTION_COORDINATOR_FENCED, unless replicated (a follower takes what its leader wrote);
* the **first unstable offset** is the smallest first offset of the open transactions and of
  those whose marker is not yet below the high watermark (Kafka's ``unreplicatedTxns``: a
  transaction is stable once its marker is replicated), and the last stable offset is
  ``min(high watermark, first unstable offset)``;
* an aborted transaction's index entry carries the stable offset just after it completed:
  the first offset of the oldest *other* open transaction, else the marker's offset + 1.

Pure: offsets in, decisions out; the partition appends, indexes and persists.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pafka.errors import InvalidTxnStateError, TransactionCoordinatorFencedError


@dataclass(frozen=True)
class CompletedTxn:
    """A transaction a marker ended: its first offset, the marker's offset, how it ended."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass
class TxnState:
    # producer id -> first offset of its open transaction (dicts keep insertion order, and a
    # transaction opens at the log end, so the first entry is the oldest).
    ongoing: dict[int, int] = field(default_factory=dict)
    # producer id -> the coordinator epoch of the last marker written for it.
    coordinator_epochs: dict[int, int] = field(default_factory=dict)
    # (first offset, marker offset) of completed transactions whose marker may still be at or
    # above the high watermark, oldest first.
    unreplicated: list[tuple[int, int]] = field(default_factory=list)

    def check_data(self, producer_id: int, is_transactional: bool) -> None:
        """Refuse a client's batch that does not belong to its producer's open transaction."""
        if producer_id in self.ongoing and not is_transactional:
            raise InvalidTxnStateError(
                f"producer {producer_id} sent a non-transactional batch while its transaction "
                f"from offset {self.ongoing[producer_id]} is open"
            )

    def on_data(self, producer_id: int, first_offset: int, is_transactional: bool) -> None:
        if is_transactional and producer_id not in self.ongoing:
            self.ongoing[producer_id] = first_offset

    def check_marker(self, producer_id: int, coordinator_epoch: int) -> None:
        held = self.coordinator_epochs.get(producer_id)
        if held is not None and coordinator_epoch < held:
            raise TransactionCoordinatorFencedError(
                f"marker for producer {producer_id} from coordinator epoch {coordinator_epoch}, "
                f"older than {held}"
            )

    def on_marker(
        self, producer_id: int, offset: int, is_abort: bool, coordinator_epoch: int
    ) -> CompletedTxn | None:
        """End ``producer_id``'s transaction with the marker at ``offset``."""
        self.coordinator_epochs[producer_id] = coordinator_epoch
        first = self.ongoing.pop(producer_id, None)
        if first is None:
            return None
        self.unreplicated.append((first, offset))
        return CompletedTxn(producer_id, first, offset, is_abort)

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """Forgets the completed transactions the high watermark has passed."""
        if self.unreplicated:
            self.unreplicated = [(f, m) for f, m in self.unreplicated if m >= high_watermark]
        elif not self.ongoing:
            return None
        firsts = [*self.ongoing.values(), *(f for f, _ in self.unreplicated)]
        return min(firsts, default=None)

    def last_stable_offset(self, high_watermark: int, log_start_offset: int = 0) -> int:
        """Retention may delete the segment where an open transaction began (Kafka's does):
        its start then counts as the log start, as in Kafka's maybeIncrementFirstUnstableOffset."""
        first = self.first_unstable_offset(high_watermark)
        if first is None:
            return high_watermark
        return min(max(first, log_start_offset), high_watermark)

    def stable_offset_after(self, completed: CompletedTxn) -> int:
        """Kafka's ``lastStableOffset(completedTxn)``: what the txn index entry records."""
        others = [f for pid, f in self.ongoing.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def clear(self) -> None:
        self.ongoing.clear()
        self.coordinator_epochs.clear()
        self.unreplicated.clear()
