"""Idempotent-producer state of one partition: sequence checks and duplicate detection.

Kafka's rules (KIP-98): per producer id the broker remembers the epoch and the last five batches
(first/last sequence and offsets). A retried batch whose sequence range matches one of them
exactly is a duplicate and gets the original offsets back instead of being appended again; any
other batch must continue the sequence exactly. A batch from an older epoch is fenced. Pure
logic: the caller appends.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from pafka.errors import InvalidProducerEpochError, OutOfOrderSequenceError

BATCHES_KEPT = 5
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class BatchRecord:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp_ms: int


@dataclass
class ProducerEntry:
    epoch: int
    batches: deque[BatchRecord] = field(default_factory=lambda: deque(maxlen=BATCHES_KEPT))

    @property
    def last_seq(self) -> int | None:
        return self.batches[-1].last_seq if self.batches else None


def next_sequence(seq: int) -> int:
    """Sequences wrap from INT32_MAX back to 0."""
    return 0 if seq == INT32_MAX else seq + 1


@dataclass
class ProducerStateTable:
    producers: dict[int, ProducerEntry] = field(default_factory=dict)
    # Bounded so that a client cycling through producer ids cannot grow broker memory.
    max_producers: int = 10_000

    def check(
        self, producer_id: int, epoch: int, first_seq: int, last_seq: int
    ) -> BatchRecord | None:
        """The earlier batch this one duplicates, None when it may be appended, else raise."""
        entry = self.producers.get(producer_id)
        if entry is None:
            # Any sequence, as Kafka 2.5+ (KIP-360): this partition may have lost the producer's
            # state (retention, DeleteRecords, eviction), and a refusal would make the client
            # reset its sequences and send again what may already be written.
            return None
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {producer_id} epoch {epoch} is older than the current {entry.epoch}"
            )
        if epoch > entry.epoch:
            if first_seq != 0:
                raise OutOfOrderSequenceError(
                    f"producer {producer_id} bumped its epoch to {epoch} but its first batch "
                    f"has sequence {first_seq}, not 0"
                )
            return None
        for batch in entry.batches:
            # Both ends, as Kafka's findDuplicateBatch: a batch that starts where a written one
            # did but holds more records is not that batch, and acknowledging it with the
            # written one's offsets would report records that were never appended.
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        last = entry.last_seq
        if last is None and first_seq != 0:
            # Known only from a transaction marker that bumped its epoch: it starts afresh.
            raise OutOfOrderSequenceError(
                f"producer {producer_id} sent sequence {first_seq} as its first, not 0"
            )
        if last is not None and first_seq != next_sequence(last):
            raise OutOfOrderSequenceError(
                f"producer {producer_id} sent sequence {first_seq}, expected {next_sequence(last)}"
            )
        return None

    def record(self, producer_id: int, epoch: int, batch: BatchRecord) -> None:
        entry = self.producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            if entry is None and len(self.producers) >= self.max_producers:
                self._evict_oldest()
            entry = ProducerEntry(epoch=epoch)
            self.producers[producer_id] = entry
        entry.batches.append(batch)

    def epoch_of(self, producer_id: int) -> int | None:
        entry = self.producers.get(producer_id)
        return None if entry is None else entry.epoch

    def bump_epoch(self, producer_id: int, epoch: int) -> None:
        """A transaction marker's epoch (the coordinator bumps it when it aborts a timed-out
        transaction): a newer epoch forgets the older one's batches, as Kafka's
        ``maybeUpdateProducerEpoch`` does."""
        entry = self.producers.get(producer_id)
        if entry is None:
            if len(self.producers) >= self.max_producers:
                self._evict_oldest()
            self.producers[producer_id] = ProducerEntry(epoch=epoch)
        elif epoch > entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()

    def _evict_oldest(self) -> None:
        oldest = min(
            self.producers,
            key=lambda pid: (
                self.producers[pid].batches[-1].timestamp_ms if self.producers[pid].batches else 0
            ),
        )
        del self.producers[oldest]

    def truncate_to(self, offset: int) -> None:
        """Forget batches at or above ``offset`` (the log was truncated)."""
        for pid in list(self.producers):
            entry = self.producers[pid]
            kept = [b for b in entry.batches if b.last_offset < offset]
            entry.batches.clear()
            entry.batches.extend(kept)
            if not kept:
                del self.producers[pid]
