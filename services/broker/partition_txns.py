"""A partition replica's transactions: open ones, markers, the stable offset, the txn index.

The decisions are :mod:`services.broker.txn_state`'s; this module feeds it every batch the log
takes (a leader's client appends and markers, a follower's replicated batches, the batches a
restart scans) and writes the aborted transactions to the segments' transaction indexes, so a
leader, a follower and a restarted broker hold the same open transactions.
"""

from __future__ import annotations

from collections.abc import Callable

from pafka.errors import InvalidProducerEpochError, TransactionalIdAuthorizationFailedError
from pafka.records.batch import NO_PRODUCER_ID, BatchHeader, Buffer, iter_batches
from pafka.records.control import TxnMarker, parse_marker
from pafka.storage import producer_snapshot
from pafka.storage.log import Log
from pafka.storage.producer_snapshot import SnapshotEntry
from pafka.storage.txn_index import AbortedTxn, collect_aborted
from services.broker.producer_state import BatchRecord, ProducerStateTable
from services.broker.txn_state import TxnState

# Without a snapshot (a log written before snapshots were), the producer state is rebuilt from
# this many of the last segments.
SEGMENTS_SCANNED_WITHOUT_SNAPSHOT = 2


class PartitionTxns:
    def __init__(self, log_: Log, producers: ProducerStateTable) -> None:
        self.log = log_
        self.producers = producers
        self.state = TxnState()
        log_.snapshot_source = self.snapshot
        log_.stable_offset_source = self.last_stable_offset

    def snapshot(self) -> list[SnapshotEntry]:
        """The producer state as Kafka's snapshot holds it: each producer's last batch, its
        last coordinator epoch and its open transaction's first offset."""
        ongoing, epochs = self.state.ongoing, self.state.coordinator_epochs
        entries = []
        for pid in {**self.producers.producers, **ongoing, **epochs}:
            entry = self.producers.producers.get(pid)
            last = entry.batches[-1] if entry is not None and entry.batches else None
            entries.append(
                SnapshotEntry(
                    producer_id=pid,
                    producer_epoch=entry.epoch if entry is not None else -1,
                    last_sequence=last.last_seq if last is not None else -1,
                    last_offset=last.last_offset if last is not None else -1,
                    offset_delta=last.last_seq - last.first_seq if last is not None else 0,
                    timestamp_ms=last.timestamp_ms if last is not None else -1,
                    coordinator_epoch=epochs.get(pid, -1),
                    current_txn_first_offset=ongoing.get(pid, -1),
                )
            )
        return entries

    def _load(self, entries: list[SnapshotEntry]) -> None:
        for e in sorted(entries, key=lambda e: e.current_txn_first_offset):
            if e.last_sequence >= 0 and e.last_offset >= 0:
                first_seq = e.last_sequence - e.offset_delta
                first_offset = e.last_offset - e.offset_delta
                batch = BatchRecord(
                    first_seq, e.last_sequence, first_offset, e.last_offset, e.timestamp_ms
                )
                self.producers.record(e.producer_id, e.producer_epoch, batch)
            elif e.producer_epoch >= 0:
                self.producers.bump_epoch(e.producer_id, e.producer_epoch)
            if e.coordinator_epoch >= 0:
                self.state.coordinator_epochs[e.producer_id] = e.coordinator_epoch
            if e.current_txn_first_offset >= 0:
                self.state.ongoing[e.producer_id] = e.current_txn_first_offset

    def reload(self, remember: Callable[[BatchHeader], None]) -> None:
        """Rebuild producers and transactions: from the newest snapshot at or below the log
        end, replaying the batches after it and rewriting their aborted transactions' index
        entries (lost if a crash came between a marker and its entry); without one, from the
        last segments, trusting the indexes."""
        log_ = self.log
        self.producers.producers.clear()
        self.state.clear()
        producer_snapshot.delete_outside(log_.directory, log_.log_start_offset, log_.log_end_offset)
        found = producer_snapshot.load_latest(log_.directory, log_.log_end_offset)
        if found is not None:
            start, entries = found
            self._load(entries)
            log_.truncate_txn_indexes(start)
            headers = log_.iter_headers_from(start)
        else:
            scanned = max(len(log_.segments) - SEGMENTS_SCANNED_WITHOUT_SNAPSHOT, 0)
            headers = log_.iter_headers(scanned)
        for head in headers:
            if head.producer_id != NO_PRODUCER_ID and not head.is_control:
                remember(head)
            self.replay(head, index=found is not None)

    def last_stable_offset(self) -> int:
        return self.state.last_stable_offset(self.log.high_watermark, self.log.log_start_offset)

    def aborted_between(self, fetch_offset: int, upper_bound: int) -> tuple[tuple[int, int], ...]:
        """(producer id, first offset) of the aborted transactions overlapping
        ``[fetch_offset, upper_bound)`` (cut to what one read can return), from the segments'
        transaction indexes."""
        upper_bound = min(upper_bound, self.log.read_upper_bound(fetch_offset))
        if fetch_offset >= upper_bound:
            return ()
        found = collect_aborted(self.log.txn_index_paths(fetch_offset), fetch_offset, upper_bound)
        return tuple((t.producer_id, t.first_offset) for t in found)

    def check_client_batch(self, head: BatchHeader, transactional_id: str | None) -> None:
        """Before a leader appends a producer's batch: transactional batches come with a
        transactional id (Kafka refuses them otherwise, as unauthorized)."""
        if head.is_transactional and transactional_id is None:
            raise TransactionalIdAuthorizationFailedError(
                "transactional records need the produce request's transactional id"
            )
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

    def replay(self, head: BatchHeader, *, index: bool) -> None:
        """One batch of the log read back (a restart, a truncation): markers are read whole."""
        if head.producer_id == NO_PRODUCER_ID:
            return
        if head.is_control:
            batch = self.log.read(head.base_offset, head.size)
            marker = parse_marker(batch[: head.size])
            self.on_marker(head, head.base_offset, marker, index=index)
        else:
            self.on_data(head, head.base_offset)
