"""A coalescing producer: concurrent sends share Produce requests, as a producer's linger does.

Each :meth:`Producer.send` parks its records for one partition. The first parked send starts a
linger timer; when it fires, every parked send goes out at once, one Produce request per leader
broker. Small sends to the same partition share a record batch (:mod:`produce_batching`
decides which), and a partition's batches are concatenated: a record set may hold several
batches, appended contiguously, so each send's base offset follows from the ones before it. A
REST gateway serving many small concurrent requests thus writes them in a few large requests,
of a few batches each.

A send is answered with its offsets only when the broker acknowledged it. Errors that prove
nothing was appended (not the leader, no leader yet, a partition the broker does not host yet,
no connection could be made) are retried after a metadata refresh until the request timeout,
as Kafka's producer retries them: a topic created a moment ago reaches each broker's metadata,
and its leader, at a slightly different moment; anything else, including a connection lost
after sending, is reported, never retried, so a caller is never told a record was written
twice or written when it was not.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import NamedTuple

from pafka.client import produce_batching
from pafka.client.cluster import ClusterClient
from pafka.client.plain_batch import build_plain_columns
from pafka.errors import (
    BrokerUnreachableError,
    LeaderNotAvailableError,
    NotLeaderOrFollowerError,
    PafkaError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
    for_code,
)
from pafka.protocol.produce_answer import decode_produce_answer
from pafka.protocol.produce_codec import PartitionProduceResponse
from pafka.protocol.produce_request import VERSION, PartitionRecords, encode_produce
from pafka.protocol.versions import ApiKey
from pafka.records.encoding import build_batch

log = logging.getLogger(__name__)

RETRIABLE_UNAPPENDED = (
    NotLeaderOrFollowerError,
    LeaderNotAvailableError,
    UnknownTopicOrPartitionError,
    BrokerUnreachableError,
)
MAX_BACKOFF_S = 1.0
# A send unanswered this long past its request timeout fails: the broker calls have deadlines
# of their own, this bounds anything else (a leader lookup, a stuck connection slot).
SETTLE_GRACE_S = 5.0


class OutgoingRecord(NamedTuple):
    """One record to send (a tuple: the gateway builds one per record of every request)."""

    value: bytes | None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_ms: int | None = None


class Appended(NamedTuple):
    """Where a send's records landed: offsets ``base_offset .. base_offset + count - 1``.

    ``timestamp_ms`` is what Kafka's producer reports as the records' timestamp: the log
    append time when the topic stamps records so (``log_append_time``), else the create time
    of records sent without one of their own (the time of the send). A tuple: one is made per
    send."""

    partition: int
    base_offset: int
    timestamp_ms: int
    log_append_time: bool = False


@dataclass
class _Parked:
    topic: str
    partition: int
    pairs: list[tuple[bytes | None, bytes | None]] | None  # plain records, batched at the flush
    batch: bytes | None  # any other send's own batch, built when it was sent
    timestamp_ms: int
    count: int
    acks: int
    future: asyncio.Future[Appended]
    deadline: float
    attempts: int = 0
    alone: bool = False  # refused with others in one record set: now sent on its own


@dataclass
class _Linger:
    parked: list[_Parked] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None


class Producer:
    def __init__(
        self,
        cluster: ClusterClient,
        *,
        linger_ms: float = 2.0,
        request_timeout_ms: int = 30_000,
    ) -> None:
        self.cluster = cluster
        self.linger_ms = linger_ms
        self.request_timeout_ms = request_timeout_ms
        self._lingering = _Linger()
        self._inflight: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        """The loop of the first send. Kept rather than asked for per send: before Python 3.12,
        asyncio.get_running_loop() makes a getpid system call each time (a few percent of a
        one-record REST produce). A producer serves one loop anyway: its cluster's
        connections belong to the loop they were opened in."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        return loop

    async def send(
        self, topic: str, partition: int, records: Sequence[OutgoingRecord], acks: int = -1
    ) -> Appended:
        return await self.enqueue(topic, partition, records, acks)

    def enqueue(
        self, topic: str, partition: int, records: Sequence[OutgoingRecord], acks: int = -1
    ) -> asyncio.Future[Appended]:
        """:meth:`send`, handed over before this returns: the records of successive calls for
        one partition go out in the order of the calls."""
        now = int(time.time() * 1000)
        pairs: list[tuple[bytes | None, bytes | None]] | None = None
        batch = None
        if any([r.headers or r.timestamp_ms is not None for r in records]):
            batch = build_batch(
                [(r.key, r.value, r.headers) for r in records],
                timestamps_ms=[now if r.timestamp_ms is None else r.timestamp_ms for r in records],
            )
        else:  # the common send: keys and values only, batched with others at the flush
            pairs = [(r.key, r.value) for r in records]
        return self._parked(topic, partition, pairs, batch, now, len(records), acks)

    async def send_columns(
        self,
        topic: str,
        partition: int,
        keys: Sequence[bytes] | None,
        values: Sequence[bytes],
        acks: int = -1,
    ) -> Appended:
        """:meth:`send` of plain records held as columns (every key null when ``keys`` is
        None): a send small enough to share a batch is parked as pairs, a larger one is built
        into its batch at once, from the columns."""
        now = int(time.time() * 1000)
        count = len(values)
        if count <= produce_batching.MERGE_MAX_RECORDS:
            pairs: list[tuple[bytes | None, bytes | None]] = list(
                zip(repeat(None, count) if keys is None else keys, values, strict=True)
            )
            return await self._parked(topic, partition, pairs, None, now, count, acks)
        batch = build_plain_columns(keys, values, now)
        return await self._parked(topic, partition, None, batch, now, count, acks)

    def _parked(
        self,
        topic: str,
        partition: int,
        pairs: list[tuple[bytes | None, bytes | None]] | None,
        batch: bytes | None,
        timestamp_ms: int,
        count: int,
        acks: int,
    ) -> asyncio.Future[Appended]:
        loop = self._running_loop()
        future: asyncio.Future[Appended] = loop.create_future()
        deadline = loop.time() + self.request_timeout_ms / 1000
        self._park(
            _Parked(topic, partition, pairs, batch, timestamp_ms, count, acks, future, deadline)
        )
        return future

    def _park(self, parked: _Parked) -> None:
        lingering = self._lingering
        lingering.parked.append(parked)
        if lingering.timer is None:
            lingering.timer = self._running_loop().call_later(self.linger_ms / 1000, self._flush)

    def _park_again(self, item: _Parked) -> None:
        # Not when its caller has its answer already (a flush past its deadline failed it, or
        # the caller stopped waiting): a record reported as failed is then never written.
        if not item.future.done():
            self._park(item)

    def _flush(self) -> None:
        parked, self._lingering = self._lingering.parked, _Linger()
        task = asyncio.ensure_future(self._send_all(parked))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)

    async def _send_all(self, parked: list[_Parked]) -> None:
        """Send a flush's batches; whatever is still unanswered a grace period past the latest
        deadline among them fails (one timer per flush, not one per send)."""
        settle_by = max(item.deadline for item in parked) + SETTLE_GRACE_S
        try:
            async with asyncio.timeout_at(settle_by):
                await self._send_parked(parked)
        except TimeoutError:
            waited_s = self.request_timeout_ms / 1000 + SETTLE_GRACE_S
            error = RequestTimedOutError(f"no acknowledgement within {waited_s:.0f}s")
            for item in parked:
                if not item.future.done():
                    item.future.set_exception(error)

    async def _send_parked(self, parked: list[_Parked]) -> None:
        by_broker: dict[tuple[int, int], list[_Parked]] = {}
        leaders: dict[tuple[str, int], int | PafkaError] = {}  # looked up once per flush
        for item in parked:
            where = (item.topic, item.partition)
            leader = leaders.get(where)
            if leader is None:
                try:
                    leader = await self.cluster.leader(item.topic, item.partition)
                except PafkaError as exc:
                    leader = exc
                leaders[where] = leader
            if isinstance(leader, PafkaError):
                self._settle(item, leader)
                continue
            by_broker.setdefault((leader, item.acks), []).append(item)
        requests = []
        for (broker, acks), items in by_broker.items():
            shared = [item for item in items if not item.alone]
            if shared:
                requests.append(self._produce(broker, acks, shared))
            # A broker answers a connection's requests in order: these stay in the send order.
            requests += [self._produce(broker, acks, [item]) for item in items if item.alone]
        if len(requests) == 1:
            # The usual flush (one leader): awaited here rather than as a task of its own,
            # which would cost the request a turn of the event loop before it is written.
            await requests[0]
        else:
            await asyncio.gather(*requests)

    async def _produce(self, broker: int, acks: int, items: list[_Parked]) -> None:
        by_partition: dict[tuple[str, int], list[_Parked]] = {}
        for item in items:
            by_partition.setdefault((item.topic, item.partition), []).append(item)
        topics: dict[str, list[PartitionRecords]] = {}
        for (topic, partition), group in by_partition.items():
            batches = b"".join([produce_batching.build(g) for g in produce_batching.plan(group)])
            topics.setdefault(topic, []).append((partition, batches))
        body = encode_produce(None, acks, self.request_timeout_ms, list(topics.items()))
        try:
            frame = await self.cluster.call(broker, ApiKey.PRODUCE, VERSION, body, raw=True)
            response = decode_produce_answer(memoryview(frame))
        except PafkaError as exc:
            for item in items:
                self._settle(item, exc)
            return
        for t in response.responses:
            for p in t.partition_responses:
                group = by_partition.pop((t.name, p.index), [])
                self._answer(group, p)
        for group in by_partition.values():  # not in the response: the broker lost track
            for item in group:
                self._settle(item, RequestTimedOutError("no answer for this partition"))

    def _answer(self, group: list[_Parked], answer: PartitionProduceResponse) -> None:
        code = answer.error_code
        if code:
            error = for_code(code, _refusal_message(answer))
            if len(group) > 1 and isinstance(error, produce_batching.REFUSED_WHOLE):
                # Refused whole, appended in no part: each send goes again on its own, to be
                # answered for its own records only.
                loop = asyncio.get_running_loop()
                for item in group:
                    item.alone = True
                    loop.call_soon(self._park_again, item)
                return
            for item in group:
                self._settle(item, error)
            return
        offset, timestamp = answer.base_offset, answer.log_append_time_ms
        for item in group:
            if timestamp >= 0:
                appended = Appended(item.partition, offset, timestamp, log_append_time=True)
            else:
                appended = Appended(item.partition, offset, item.timestamp_ms)
            if not item.future.done():
                item.future.set_result(appended)
            offset += item.count

    def _settle(self, item: _Parked, error: PafkaError) -> None:
        """Fail a send, or park it again when the error proves nothing was appended."""
        loop = asyncio.get_running_loop()
        backoff_s = min(0.05 * 2**item.attempts, MAX_BACKOFF_S)
        if isinstance(error, RETRIABLE_UNAPPENDED) and loop.time() + backoff_s < item.deadline:
            item.attempts += 1
            self.cluster.forget(item.topic)  # the next attempt looks the leader up again
            loop.call_later(backoff_s, self._park_again, item)
            return
        if not item.future.done():
            item.future.set_exception(error)

    async def close(self) -> None:
        if self._lingering.timer is not None:
            self._lingering.timer.cancel()
            self._flush()
        if self._inflight:
            await asyncio.gather(*self._inflight, return_exceptions=True)


def _refusal_message(answer: PartitionProduceResponse) -> str:
    """The broker's message, with the first refused record's reason when it names records
    (Produce v8+, KIP-467): "One or more records have been rejected" alone says too little."""
    message = answer.error_message or ""
    record_errors = answer.record_errors
    if not record_errors:
        return message
    batch_index, why = record_errors[0]
    reason = f"record {batch_index} of its batch: {why}"
    more = f" (and {len(record_errors) - 1} more)" if len(record_errors) > 1 else ""
    return f"{message}; {reason}{more}" if message else reason + more
