"""Stateless reads of one partition: records from an offset, and the partition's offset range.

Each call goes to the partition's current leader with the leader epoch the metadata names, so a
deposed leader cannot answer. When the broker says it is not (or no longer, or not yet) the
leader, or the connection drops, metadata is refreshed and the request goes again: a read
changes nothing, so retrying it is always safe. A long poll (``max_wait_ms > 0``) borrows a
connection of its own, because a broker answers each connection strictly in order and a held
Fetch would stall every request queued behind it on the shared one.

Which records of the answer a read returns is decided in :mod:`pafka.client.batch_reading`; a
read_committed read stops at the last stable offset and drops aborted transactions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from pafka.client.batch_reading import FetchedRecord, select_records
from pafka.client.cluster import ClusterClient, PartitionLeader
from pafka.client.isolation import AbortedTransaction, IsolationLevel, batch_filter, visible_end
from pafka.errors import (
    BrokerConnectionError,
    FencedLeaderEpochError,
    KafkaApiError,
    LeaderNotAvailableError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    PafkaError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
    for_code,
)
from pafka.protocol.fetch_request import VERSION as FETCH_REQUEST_VERSION
from pafka.protocol.fetch_request import encode_fetch
from pafka.protocol.messages import request_class
from pafka.protocol.versions import ApiKey

FETCH_VERSION = FETCH_REQUEST_VERSION  # the last non-flexible version with leader epochs
LIST_OFFSETS_VERSION = 5
EARLIEST = -2
LATEST = -1
MAX_ATTEMPTS = 6
RETRY_BACKOFF_S = 0.1
# A held Fetch is answered after max_wait_ms; allow this much more before giving up on it.
ANSWER_MARGIN_S = 15.0
# Errors after which the leader may be elsewhere now; nothing else is worth a second try.
LEADER_MOVED = (
    NotLeaderOrFollowerError,
    LeaderNotAvailableError,
    FencedLeaderEpochError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
    BrokerConnectionError,
)

T = TypeVar("T")


@dataclass(frozen=True)
class FetchResult:
    records: list[FetchedRecord]
    high_watermark: int
    log_start_offset: int
    # Where the next read should start: past the last record returned, or past batches that
    # held nothing readable (control batches, compacted gaps), never before the asked offset.
    next_offset: int
    # Below it every transaction is decided; a read_committed read stops there.
    last_stable_offset: int


class _Answer(NamedTuple):
    """One partition of a Fetch response."""

    data: bytes
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: tuple[AbortedTransaction, ...]

    def end(self, isolation: IsolationLevel) -> int:
        return visible_end(isolation, self.high_watermark, self.last_stable_offset)


# -- talking to the leader ---------------------------------------------------------------------


async def partition_leader(
    cluster: ClusterClient, topic: str, partition: int, *, refresh: bool
) -> PartitionLeader:
    info = await cluster.topic(topic, refresh=refresh)
    found = info.partitions.get(partition)
    if found is None:
        raise UnknownTopicOrPartitionError(f"topic {topic!r} has no partition {partition}")
    if found.leader < 0:
        raise LeaderNotAvailableError(f"{topic}-{partition} has no leader right now")
    return found


async def on_leader(
    cluster: ClusterClient,
    topic: str,
    partition: int,
    attempt: Callable[[PartitionLeader], Awaitable[T]],
) -> T:
    """Run ``attempt`` against the current leader, refreshing metadata when it moved."""
    refresh = False
    for tries in range(1, MAX_ATTEMPTS + 1):
        try:
            leader = await partition_leader(cluster, topic, partition, refresh=refresh)
            return await attempt(leader)
        except LEADER_MOVED:
            if tries == MAX_ATTEMPTS:
                raise
            refresh = True
            await asyncio.sleep(RETRY_BACKOFF_S * tries)
    raise AssertionError("unreachable")


def raise_for_partition(code: int, topic: str, partition: int) -> None:
    """Raise the error a partition's answer carries, naming the partition."""
    if code:
        error: KafkaApiError = for_code(code)
        raise for_code(code, f"{topic}-{partition}: {error.message}")


async def fetch(
    cluster: ClusterClient,
    topic: str,
    partition: int,
    offset: int,
    *,
    max_records: int,
    max_bytes: int,
    max_wait_ms: int,
    isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
) -> FetchResult:
    """Up to ``max_records`` records of ``topic``-``partition`` from ``offset`` (waiting up to
    ``max_wait_ms`` for the first one), from at most about ``max_bytes`` of batches. An offset
    outside the log raises :class:`OffsetOutOfRangeError` naming the partition's range.

    Fetches ask for what ``max_records`` records need (guessed, then measured on the records
    read so far), not for ``max_bytes`` at once: a broker serves (and this process copies)
    every byte asked for, and a read of a few records should not cost megabytes."""
    if offset < 0 or max_records < 1 or max_bytes < 1 or max_wait_ms < 0:
        raise ValueError("offset and max_wait_ms must be >= 0, max_records and max_bytes >= 1")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_wait_ms / 1000
    position = offset
    records: list[FetchedRecord] = []
    used = 0  # bytes of batches fetched since the first readable record
    answer = _Answer(b"", 0, 0, 0, ())

    def result(next_offset: int) -> FetchResult:
        return FetchResult(
            records,
            answer.high_watermark,
            answer.log_start_offset,
            next_offset,
            answer.end(IsolationLevel.READ_COMMITTED),
        )

    while True:
        budget = max_bytes - used
        ask = min(budget, bytes_for(max_records - len(records), used, len(records)))
        # Once there are records, only records already there are read: no waiting.
        wait_ms = 0 if records else max(int((deadline - loop.time()) * 1000), 0)
        try:
            answer = await _fetch_once(cluster, topic, partition, position, ask, wait_ms, isolation)
        except OffsetOutOfRangeError:
            if records:  # the log was cut under this read: answer with what it has
                return result(position)
            raise await out_of_range(cluster, topic, partition, position) from None
        data, end = answer.data, answer.end(isolation)
        if records and len(data) > ask:  # one batch above what is left: for the next read
            return result(position)
        found, next_offset = select_records(
            data,
            position,
            max_records=max_records - len(records),
            high_watermark=end,
            readable=batch_filter(isolation, answer.aborted),
        )
        if records or found:
            used += len(data)
        records += found
        if records:
            done = read_enough(len(records), max_records, used, max_bytes, ask, budget)
            if done or next_offset <= position or next_offset >= end:
                return result(next_offset)
        # Batches holding nothing readable from here were skipped: read on if time is left.
        elif next_offset <= position or loop.time() >= deadline:
            return result(max(next_offset, offset))
        position = next_offset


# The first Fetch of a read asks for this many bytes per wanted record (a record of about a
# hundred bytes in a batch of its own takes about 160), and never less than FETCH_FLOOR_BYTES.
GUESS_RECORD_BYTES = 256
FETCH_FLOOR_BYTES = 64 * 1024


def read_enough(
    kept: int, max_records: int, used: int, max_bytes: int, asked: int, budget: int
) -> bool:
    """Whether a read holding ``kept`` records in ``used`` bytes stops after a Fetch that asked
    for ``asked`` of the ``budget`` bytes it had left: it has the records or the bytes it may
    have, or that Fetch asked for all it had left, so the byte cap, not the size guess of
    :func:`bytes_for`, held it back."""
    return kept >= max_records or used >= max_bytes or asked >= budget


def bytes_for(wanted: int, fetched_bytes: int, fetched_records: int) -> int:
    """How many bytes of batches ``wanted`` more records likely take, from what the records
    fetched so far took (a tenth more, as batches are read whole)."""
    per_record = fetched_bytes // fetched_records if fetched_records else GUESS_RECORD_BYTES
    return max(FETCH_FLOOR_BYTES, wanted * per_record * 11 // 10)


async def _fetch_once(
    cluster: ClusterClient,
    topic: str,
    partition: int,
    offset: int,
    max_bytes: int,
    wait_ms: int,
    isolation: IsolationLevel,
) -> _Answer:
    """One Fetch from the leader."""

    async def attempt(leader: PartitionLeader) -> _Answer:
        body = fetch_request(topic, partition, offset, leader, max_bytes, wait_ms, isolation)
        response = await send_fetch(cluster, leader.leader, body, wait_ms)
        for t in response.responses:
            for p in t.partitions:
                if t.topic == topic and p.partition_index == partition:
                    raise_for_partition(p.error_code, topic, partition)
                    return _Answer(
                        bytes(p.records or b""),
                        p.high_watermark,
                        p.last_stable_offset,
                        p.log_start_offset,
                        tuple(
                            AbortedTransaction(a.producer_id, a.first_offset)
                            for a in p.aborted_transactions or ()
                        ),
                    )
        raise NotLeaderOrFollowerError(f"{topic}-{partition} missing from the Fetch response")

    return await on_leader(cluster, topic, partition, attempt)


def fetch_request(
    topic: str,
    partition: int,
    offset: int,
    leader: PartitionLeader,
    max_bytes: int,
    wait_ms: int,
    isolation: IsolationLevel,
) -> bytes:
    """A sessionless Fetch (v``FETCH_VERSION``) of one partition, as a consumer sends it."""
    return encode_fetch(
        topic,
        partition,
        offset,
        leader_epoch=leader.leader_epoch,
        max_bytes=max_bytes,
        max_wait_ms=wait_ms,
        isolation_level=int(isolation),
    )


async def send_fetch(
    cluster: ClusterClient, broker: int, body: Any, wait_ms: int, *, raw: bool = False
) -> Any:
    """Send a Fetch; the answer decoded, or with ``raw`` its frame as received. A held Fetch
    goes on a connection of its own, so it never delays other calls to that broker."""
    if wait_ms <= 0:
        connection = await cluster.connection(broker)
        return await connection.call(ApiKey.FETCH, FETCH_VERSION, body, raw=raw)
    async with cluster.exclusive(broker) as connection:
        return await connection.call(
            ApiKey.FETCH,
            FETCH_VERSION,
            body,
            timeout_s=wait_ms / 1000 + ANSWER_MARGIN_S,
            raw=raw,
        )


async def out_of_range(
    cluster: ClusterClient, topic: str, partition: int, offset: int
) -> OffsetOutOfRangeError:
    """The error for a read at ``offset`` outside the partition, naming its readable range."""
    try:
        beginning, end = await offsets(cluster, topic, partition)
    except PafkaError:
        return OffsetOutOfRangeError(f"offset {offset} is out of range for {topic}-{partition}")
    return OffsetOutOfRangeError(
        f"offset {offset} is out of range for {topic}-{partition}: "
        f"records are kept from {beginning} to {end}"
    )


async def offsets(
    cluster: ClusterClient,
    topic: str,
    partition: int,
    isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
) -> tuple[int, int]:
    """(log start offset, end): the first readable offset and the end as a consumer of this
    isolation level sees it (the high watermark, or for read_committed the last stable
    offset)."""
    beginning, end = await asyncio.gather(
        _list_offset(cluster, topic, partition, EARLIEST, isolation),
        _list_offset(cluster, topic, partition, LATEST, isolation),
    )
    return beginning, end


async def _list_offset(
    cluster: ClusterClient, topic: str, partition: int, which: int, isolation: IsolationLevel
) -> int:
    cls = request_class(ApiKey.LIST_OFFSETS)[LIST_OFFSETS_VERSION]

    async def attempt(leader: PartitionLeader) -> int:
        body = cls(
            replica_id=-1,
            isolation_level=int(isolation),
            topics=[
                cls.ListOffsetsTopic(
                    name=topic,
                    partitions=[
                        cls.ListOffsetsTopic.ListOffsetsPartition(
                            partition_index=partition,
                            current_leader_epoch=leader.leader_epoch,
                            timestamp=which,
                        )
                    ],
                )
            ],
        )
        response = await cluster.call(
            leader.leader, ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, body
        )
        for t in response.topics:
            for p in t.partitions:
                if t.name == topic and p.partition_index == partition:
                    raise_for_partition(p.error_code, topic, partition)
                    return int(p.offset)
        raise NotLeaderOrFollowerError(f"{topic}-{partition} missing from the ListOffsets answer")

    return await on_leader(cluster, topic, partition, attempt)


async def offset_for_time(
    cluster: ClusterClient, topic: str, partition: int, timestamp_ms: int
) -> int | None:
    """Kafka's ``offsetsForTimes`` for one partition: the first offset whose timestamp is at or
    after ``timestamp_ms`` (ListOffsets with that timestamp), None when no record's is."""
    if timestamp_ms < 0:
        raise ValueError("a timestamp is >= 0 (negative ones name earliest and latest)")
    found = await _list_offset(
        cluster, topic, partition, timestamp_ms, IsolationLevel.READ_UNCOMMITTED
    )
    return None if found < 0 else found
