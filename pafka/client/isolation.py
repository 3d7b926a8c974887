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

from pafka.errors import PafkaError
from pafka.records.batch import BatchHeader, Buffer
from pafka.records.control import parse_marker


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


def visible_end(isolation: IsolationLevel, high_watermark: int, last_stable_offset: int) -> int:
    """Where the records a Fetch answer lets this isolation level see end (a broker that
    reports no last stable offset, -1, leaves the high watermark)."""
    if isolation is IsolationLevel.READ_COMMITTED and last_stable_offset >= 0:
        return min(last_stable_offset, high_watermark)
    return high_watermark


class AbortedTransaction(NamedTuple):
    producer_id: int
    first_offset: int


def is_abort_marker(batch: Buffer, header: BatchHeader) -> bool:
    """Whether a control batch is an ABORT marker; an unreadable or unknown control record
    is not one (and still no user record)."""
    try:
        return parse_marker(batch, header).is_abort
    except PafkaError:
        return False


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
                if is_abort_marker(batch, header):
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
