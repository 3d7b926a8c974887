"""What a consumer may see of a partition: read_uncommitted or read_committed (KIP-98).

A read_committed Fetch is answered only up to the last stable offset, with the transactions
aborted within the range it returns. The consumer, not the broker, drops those transactions'
batches, exactly as Kafka's consumer does: walking the batches in offset order, a producer is
"aborted" from the first offset of one of its aborted transactions until its ABORT marker, and
its transactional batches in between are skipped. Control batches (the markers) are never
records for anyone. Pure: batch headers and the broker's list in, decisions out.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable
from typing import NamedTuple

from pafka.records.batch import HEADER_SIZE, BatchHeader, Buffer
from pafka.records.encoding import read_varint

# The type in a control record's key (version int16, type int16), Kafka's ControlRecordType.
ABORT_MARKER = 0
COMMIT_MARKER = 1


class IsolationLevel(enum.IntEnum):
    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1

    @classmethod
    def parse(cls, name: str) -> IsolationLevel:
        """From Kafka's config spelling (``isolation.level``), case-insensitively."""
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise ValueError(
                f"isolation level must be read_committed or read_uncommitted, not {name!r}"
            ) from None


class AbortedTransaction(NamedTuple):
    producer_id: int
    first_offset: int


def control_type(batch: Buffer) -> int | None:
    """The marker type in the key of a control batch's record (ABORT_MARKER, COMMIT_MARKER),
    None when unreadable: an unknown control record is still not a user record. Control
    batches are never compressed."""
    try:
        pos = HEADER_SIZE
        _, pos = read_varint(batch, pos)  # record length
        pos += 1  # attributes
        for _ in range(2):  # timestamp delta, offset delta
            _, pos = read_varint(batch, pos)
        key_length, pos = read_varint(batch, pos)
        if key_length < 4 or pos + 4 > len(batch):
            return None
        return int.from_bytes(batch[pos + 2 : pos + 4], "big", signed=True)
    except IndexError:
        return None


class CommittedFilter:
    """Decides, batch by batch in offset order, which batches of one Fetch answer hold records
    a read_committed consumer may see."""

    def __init__(self, aborted: Iterable[AbortedTransaction]) -> None:
        # Oldest first; consumed from the left as the batches pass their first offsets.
        self._pending = deque(sorted(aborted, key=lambda t: t.first_offset))
        self._aborting: set[int] = set()

    def readable(self, header: BatchHeader, batch: Buffer) -> bool:
        """False for a control batch and for a batch of an aborted transaction."""
        if header.has_producer_id:
            while self._pending and self._pending[0].first_offset <= header.last_offset:
                self._aborting.add(self._pending.popleft().producer_id)
            if header.is_control:
                if control_type(batch) == ABORT_MARKER:
                    self._aborting.discard(header.producer_id)
                return False
            if header.is_transactional and header.producer_id in self._aborting:
                return False
        return not header.is_control


class UncommittedFilter:
    """read_uncommitted: every batch but the markers."""

    def readable(self, header: BatchHeader, batch: Buffer) -> bool:
        return not header.is_control


def batch_filter(
    level: IsolationLevel, aborted: Iterable[AbortedTransaction] | None
) -> CommittedFilter | UncommittedFilter:
    if level is IsolationLevel.READ_COMMITTED:
        return CommittedFilter(aborted or ())
    return UncommittedFilter()
