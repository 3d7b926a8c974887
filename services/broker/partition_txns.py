"""A partition replica's transactions: open ones, markers, the stable offset, the txn index.

The decisions are :mod:`services.broker.txn_state`'s; this module feeds it every batch the log
takes (a leader's client appends and markers, a follower's replicated batches, the batches a
restart scans) and writes the aborted transactions to the segments' transaction indexes, so a
leader, a follower and a restarted broker hold the same open transactions.
"""

from __future__ import annotations

from pafka.errors import InvalidProducerEpochError
from pafka.records.batch import NO_PRODUCER_ID, BatchHeader, Buffer, iter_batches
from pafka.records.control import TxnMarker, parse_marker
from pafka.storage.log import Log
from pafka.storage.txn_index import AbortedTxn, collect_aborted
from services.broker.producer_state import ProducerStateTable
from services.broker.txn_state import TxnState


class PartitionTxns:
    def __init__(self, log_: Log, producers: ProducerStateTable) -> None:
        self.log = log_
        self.producers = producers
        self.state = TxnState()

    def last_stable_offset(self) -> int:
        return self.state.last_stable_offset(self.log.high_watermark)

    def aborted_between(self, fetch_offset: int, upper_bound: int) -> tuple[tuple[int, int], ...]:
        """(producer id, first offset) of the aborted transactions overlapping
        ``[fetch_offset, upper_bound)``, from the segments' transaction indexes."""
        if fetch_offset >= upper_bound:
            return ()
        found = collect_aborted(self.log.txn_index_paths(fetch_offset), fetch_offset, upper_bound)
        return tuple((t.producer_id, t.first_offset) for t in found)

    def check_client_batch(self, head: BatchHeader) -> None:
        """Before a leader appends a producer's batch."""
        if head.producer_id != NO_PRODUCER_ID:
            self.state.check_data(head.producer_id, head.is_transactional)

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Before a leader appends a marker: Kafka's ``appendEndTxnMarker`` checks."""
        held = self.producers.epoch_of(producer_id)
        if held is not None and producer_epoch < held:
            raise InvalidProducerEpochError(
                f"marker for producer {producer_id} with epoch {producer_epoch}, older than {held}"
            )
        self.state.check_marker(producer_id, coordinator_epoch)

    def on_data(self, head: BatchHeader, first_offset: int) -> None:
        if head.producer_id != NO_PRODUCER_ID:
            self.state.on_data(head.producer_id, first_offset, head.is_transactional)

    def on_marker(
        self, head: BatchHeader, offset: int, marker: TxnMarker, *, index: bool = True
    ) -> None:
        """A marker is in the log at ``offset``: end the transaction, index it if aborted
        (not when replaying the log: its indexes already hold what it aborted)."""
        self.producers.bump_epoch(head.producer_id, head.producer_epoch)
        completed = self.state.on_marker(
            head.producer_id, offset, marker.is_abort, marker.coordinator_epoch
        )
        if index and completed is not None and completed.is_aborted:
            stable = self.state.stable_offset_after(completed)
            self.log.index_aborted_txn(
                AbortedTxn(completed.producer_id, completed.first_offset, offset, stable)
            )

    def apply(self, records: Buffer) -> None:
        """Batches written with their offsets (replicated, or read back from the log)."""
        for pos, head in iter_batches(records):
            if head.producer_id == NO_PRODUCER_ID:
                continue
            if head.is_control:
                marker = parse_marker(memoryview(records)[pos : pos + head.size], head)
                self.on_marker(head, head.base_offset, marker)
            else:
                self.on_data(head, head.base_offset)

    def replay(self, head: BatchHeader) -> None:
        """One batch of the log read back (a restart, a truncation): markers are read whole."""
        if head.producer_id == NO_PRODUCER_ID:
            return
        if head.is_control:
            batch = self.log.read(head.base_offset, head.size)
            marker = parse_marker(batch[: head.size])
            self.on_marker(head, head.base_offset, marker, index=False)
        else:
            self.on_data(head, head.base_offset)
