"""Which of a flush's sends to one partition share a record batch: the producer's batching
decisions, and the batch bytes they make. Pure.

Concurrent small sends to one partition (a REST gateway's one-record requests) are written as
one batch, as a Kafka producer fills a batch up to ``batch.size``: the broker then validates,
indexes and replicates one batch, not one per send. Consecutive sends of plain records (keys
and values only) of at most :data:`MERGE_MAX_RECORDS` records are merged, in their order, while
the batch stays within :data:`MERGE_LIMIT_BYTES`; each record keeps the time of its own send.
Any other send (headers, timestamps of its own, many records) is a batch of its own, built when
it was sent.

A broker refuses a partition's whole record set when any batch in it is invalid (a keyless
record on a compacted topic, a batch over ``max.message.bytes``, a timestamp out of range), and
appends none of it. So one caller's bad send must not fail the others merged with it:
:data:`REFUSED_WHOLE` are the refusals after which each send of a merged record set is sent
again on its own (:attr:`PlannedSend.alone`), in a Produce request of its own, to get its own
answer. Nothing was appended, so this resend can never write a record twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from pafka.client.plain_batch import build_plain_runs
from pafka.errors import (
    CorruptMessageError,
    InvalidRecordError,
    InvalidTimestampError,
    MessageTooLargeError,
)

# Kafka's default batch.size: small enough for any max.message.bytes a topic is likely to set
# (a merged batch refused as too large is split and sent again anyway).
MERGE_LIMIT_BYTES = 16 * 1024
MERGE_MAX_RECORDS = 32  # a send this large fills a batch of its own
RECORD_OVERHEAD_BYTES = 8  # a plain record's framing, about
REFUSED_WHOLE = (
    InvalidRecordError,
    MessageTooLargeError,
    CorruptMessageError,
    InvalidTimestampError,
)

S = TypeVar("S", bound="PlannedSend")
Pairs = Sequence[tuple[bytes | None, bytes | None]]


class PlannedSend(Protocol):
    """What batching needs of a parked send."""

    @property
    def pairs(self) -> Pairs | None:
        """Its ``(key, value)`` records when they are plain (and may be merged), else None."""

    @property
    def batch(self) -> bytes | None:
        """Its own batch, when it is not plain."""

    @property
    def timestamp_ms(self) -> int: ...

    @property
    def alone(self) -> bool:
        """Whether it must be sent in a batch and a request of its own."""


def _weight(pairs: Pairs) -> int:
    return sum([len(k or b"") + len(v or b"") + RECORD_OVERHEAD_BYTES for k, v in pairs])


def plan(sends: Sequence[S]) -> list[list[S]]:
    """``sends`` (to one partition, in order) cut into the runs that share a batch."""
    groups: list[list[S]] = []
    size = MERGE_LIMIT_BYTES  # nothing to join yet
    for send in sends:
        pairs = send.pairs
        if pairs is None or send.alone or len(pairs) > MERGE_MAX_RECORDS:
            groups.append([send])
            size = MERGE_LIMIT_BYTES
            continue
        weight = _weight(pairs)
        if size + weight <= MERGE_LIMIT_BYTES:
            groups[-1].append(send)
            size += weight
        else:
            groups.append([send])
            size = weight
    return groups


def build(group: Sequence[PlannedSend]) -> bytes:
    """The batch of one planned group."""
    if len(group) == 1 and group[0].batch is not None:
        return group[0].batch
    runs = []
    for send in group:
        assert send.pairs is not None, "only plain sends are merged"
        runs.append((send.pairs, send.timestamp_ms))
    return build_plain_runs(runs)
