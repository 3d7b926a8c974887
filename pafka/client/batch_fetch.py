"""Stateless reads of one partition's record batches as bytes, for callers that decode them
themselves (the gateway's ``application/vnd.pafka.batches`` answer).

Nothing is decoded: the batches of the broker's Fetch answer are chosen by their headers and
returned as memoryview slices of the answer, runs of consecutive batches as one slice. Which
batches a read keeps (:func:`select_batches`, pure):

* whole batches only, in offset order; the first may begin before the offset asked for (the
  broker answers from the batch that holds it): the caller skips the records before it, as a
  Kafka consumer does;
* none that begins at or past the end (the high watermark, for read_committed the last stable
  offset); a truncated last batch (the broker cuts its answer at its size limit) is left for
  the next read;
* no control batch (transaction markers are never records), and for read_committed no batch
  of an aborted transaction (decided at the batch level with the broker's aborted list, as
  :mod:`pafka.client.isolation` does for record reads), so the caller never needs that list;
* batches until they hold ``max_records`` records from the offset (the last one whole).

The leader, retries and out-of-range errors are those of :mod:`pafka.client.fetcher`; the
Fetch response is read by hand (:mod:`pafka.protocol.fetch_answer`), so the batches are views
of the response frame as it arrived, never copied here.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pafka.client.cluster import ClusterClient, PartitionLeader
from pafka.client.fetcher import (
    FETCH_VERSION,
    bytes_for,
    fetch_request,
    on_leader,
    out_of_range,
    raise_for_partition,
    read_enough,
    send_fetch,
)
from pafka.client.isolation import (
    AbortedTransaction,
    CommittedFilter,
    IsolationLevel,
    UncommittedFilter,
    batch_filter,
    visible_end,
)
from pafka.errors import CorruptMessageError, NotLeaderOrFollowerError, OffsetOutOfRangeError
from pafka.protocol import fetch_answer
from pafka.protocol.fetch_answer import PartitionAnswer
from pafka.records.batch import HEADER_SIZE, MIN_BATCH_LENGTH, Buffer, read_header


@dataclass(frozen=True)
class BatchesResult:
    # Runs of whole batches, views into the broker's answer, in offset order.
    chunks: list[memoryview]
    high_watermark: int
    log_start_offset: int
    # Below it every transaction is decided; a read_committed read ends there.
    last_stable_offset: int
    # Where the next read should start: past the last batch returned or skipped (markers,
    # aborted transactions), never before the asked offset.
    next_offset: int

    @property
    def size_bytes(self) -> int:
        return sum(len(c) for c in self.chunks)


def select_batches(
    data: Buffer,
    offset: int,
    *,
    max_records: int,
    end: int,
    readable: CommittedFilter | UncommittedFilter,
) -> tuple[list[memoryview], int]:
    """The batches of ``data`` a read from ``offset`` returns (runs of consecutive batches as
    one view each) and the offset to read from next. Headers only: no record is decoded."""
    view = memoryview(data)
    chunks: list[memoryview] = []
    run_start: int | None = None
    position, pos, records = offset, 0, 0
    while len(view) - pos >= HEADER_SIZE and position < end and records < max_records:
        header = read_header(view, pos)
        if header.batch_length < MIN_BATCH_LENGTH:
            raise CorruptMessageError(f"batch at byte {pos} claims {header.batch_length} bytes")
        if pos + header.size > len(view):
            break
        # Every batch goes through the filter, even one before ``offset``: an aborted
        # transaction's state starts where it started.
        keep = readable.readable(header, view[pos : pos + header.size])
        if keep and header.next_offset > position and header.base_offset < end:
            if run_start is None:
                run_start = pos
            records += header.next_offset - max(header.base_offset, position)
        elif run_start is not None:
            chunks.append(view[run_start:pos])
            run_start = None
        position = max(position, min(header.next_offset, end))
        pos += header.size
    if run_start is not None:
        chunks.append(view[run_start:pos])
    return chunks, position


async def fetch_batches(
    cluster: ClusterClient,
    topic: str,
    partition: int,
    offset: int,
    *,
    max_records: int,
    max_bytes: int,
    max_wait_ms: int,
    isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
) -> BatchesResult:
    """The batches of ``topic``-``partition`` from ``offset``, from one Fetch of at most about
    ``max_bytes`` (at least one batch, as Kafka answers), waiting up to ``max_wait_ms`` for a
    first readable batch. An offset outside the log raises :class:`OffsetOutOfRangeError`
    naming the partition's range.

    The Fetch asks for what ``max_records`` records likely take (:func:`bytes_for`), not for
    ``max_bytes`` whatever the count: a broker sends every byte asked for and this process
    reads them all, so a read of ten records behind the log's end would otherwise cost the
    whole ``max_bytes``. Fewer records than asked may come back; the next read goes on."""
    check_read(offset, max_records, max_bytes, max_wait_ms)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_wait_ms / 1000
    position = offset
    chunks: list[memoryview] = []
    used = taken = 0  # bytes and offsets of the batches kept so far

    def result(answer: PartitionAnswer, next_offset: int) -> BatchesResult:
        return _result(answer, chunks, offset, next_offset)

    while True:
        budget = max_bytes - used
        ask = min(budget, bytes_for(max_records - taken, used, taken))
        # Once there are batches, only batches already there are read: no waiting.
        wait_ms = 0 if chunks else max(int((deadline - loop.time()) * 1000), 0)
        try:
            answer = await _fetch_raw(cluster, topic, partition, position, ask, wait_ms, isolation)
        except OffsetOutOfRangeError:
            if chunks:  # the log was cut under this read: answer with what it has
                return result(answer, position)
            raise await out_of_range(cluster, topic, partition, position) from None
        if chunks and len(answer.records) > ask:  # one batch above what is left: next read's
            return result(answer, position)
        end = _end(answer, isolation)
        found, next_offset = _select(answer, position, max_records - taken, isolation)
        if found:
            chunks += found
            used += sum(map(len, found))
            taken += next_offset - position
            if read_enough(taken, max_records, used, max_bytes, ask, budget) or next_offset >= end:
                return result(answer, next_offset)
        # Only markers or aborted batches from here: read on past them while time is left.
        elif not chunks and loop.time() >= deadline:
            return result(answer, next_offset)
        if next_offset <= position:
            return result(answer, next_offset)
        position = next_offset


def batches_of(
    answer: PartitionAnswer, offset: int, max_records: int, isolation: IsolationLevel
) -> BatchesResult:
    """What one partition's Fetch answer gives a read from ``offset`` (a Fetch of several
    partitions, answered at once): :func:`fetch_batches`' result from that one answer."""
    found, next_offset = _select(answer, offset, max_records, isolation)
    return _result(answer, found, offset, next_offset)


def check_read(offset: int, max_records: int, max_bytes: int, max_wait_ms: int) -> None:
    """Refuse a read's arguments that no Fetch can carry out."""
    if offset < 0 or max_records < 1 or max_bytes < 1 or max_wait_ms < 0:
        raise ValueError("offset and max_wait_ms must be >= 0, max_records and max_bytes >= 1")


def _result(
    answer: PartitionAnswer, chunks: list[memoryview], offset: int, next_offset: int
) -> BatchesResult:
    return BatchesResult(
        chunks,
        answer.high_watermark,
        answer.log_start_offset,
        _end(answer, IsolationLevel.READ_COMMITTED),
        max(next_offset, offset),
    )


def _select(
    answer: PartitionAnswer, position: int, max_records: int, isolation: IsolationLevel
) -> tuple[list[memoryview], int]:
    return select_batches(
        answer.records,
        position,
        max_records=max_records,
        end=_end(answer, isolation),
        readable=batch_filter(isolation, [AbortedTransaction(*a) for a in answer.aborted]),
    )


def _end(answer: PartitionAnswer, isolation: IsolationLevel) -> int:
    return visible_end(isolation, answer.high_watermark, answer.last_stable_offset)


async def _fetch_raw(
    cluster: ClusterClient,
    topic: str,
    partition: int,
    offset: int,
    max_bytes: int,
    wait_ms: int,
    isolation: IsolationLevel,
) -> PartitionAnswer:
    """One Fetch from the leader, its answer left in the response frame."""
    assert FETCH_VERSION == fetch_answer.VERSION, "the hand-read answer is of this version"

    async def attempt(leader: PartitionLeader) -> PartitionAnswer:
        body = fetch_request(topic, partition, offset, leader, max_bytes, wait_ms, isolation)
        frame = memoryview(await send_fetch(cluster, leader.leader, body, wait_ms, raw=True))
        raise_for_partition(fetch_answer.session_error(frame), topic, partition)
        found = fetch_answer.find_partition(frame, topic, partition)
        if found is None:
            raise NotLeaderOrFollowerError(f"{topic}-{partition} missing from the Fetch response")
        raise_for_partition(found.error_code, topic, partition)
        return found

    return await on_leader(cluster, topic, partition, attempt)
