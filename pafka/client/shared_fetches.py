"""Held Fetches shared by the readers waiting on the same leader.

A reader that follows a partition (the gateway's follow reads) waits in a held Fetch for its
next batches. With a Fetch of its own per reader, one Produce that lands on six partitions of a
broker wakes six Fetches, and each answer costs the broker and this process a whole request for
a few hundred bytes. Here the readers waiting on one leader at one isolation level share
Fetches:

* readers that start waiting in the same turn of the event loop go in one Fetch, each
  partition with its own offset and byte limit;
* its answer wakes the readers whose partitions brought batches, skipped offsets, an error, or
  the end of their wait; the others go on waiting in the leader's next Fetch, sent in the
  following turn with the woken readers that ask again by then (a woken follow read writes
  what it got and asks again without waiting, so the readers of a busy leader keep sharing one
  Fetch);
* a reader that starts waiting while a Fetch of its leader is held is not added to it (the
  broker may hold it up to its wait) but goes in a new one: its batches come no later than
  with a Fetch of its own, and each held Fetch asks for partitions no other one asks for.

A Fetch waits no longer than its earliest reader may, and a reader's result is what
:func:`pafka.client.batch_fetch.fetch_batches` would have returned from the same answer. A
reader that stops waiting leaves its part of the answer unread; once every reader of a held
Fetch has stopped, the Fetch is given up (its connection closed, which ends it at the broker).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

from pafka.client.batch_fetch import BatchesResult, batches_of, check_read
from pafka.client.cluster import ClusterClient
from pafka.client.fetcher import bytes_for, partition_leader, raise_for_partition, send_fetch
from pafka.client.isolation import IsolationLevel
from pafka.errors import NotLeaderOrFollowerError, PafkaError, for_code
from pafka.protocol import fetch_answer
from pafka.protocol.fetch_request import FetchPosition, encode_fetch_many

# The most a Fetch asks for in all (Kafka's fetch.max.bytes default).
MAX_FETCH_BYTES = 50 * 1024 * 1024
# An answer this close to a reader's end of wait ends it: the broker's timer and ours differ
# by a little, and going round again for a millisecond would cost a Fetch.
DEADLINE_SLACK_S = 0.002

# A Fetch's max_wait_ms is an int32.
MAX_WAIT_MS = 2**31 - 1

_Key = tuple[int, IsolationLevel]  # (leader, isolation level)


@dataclass(eq=False)
class _Reader:
    position: FetchPosition
    max_records: int
    deadline: float  # the event loop's clock
    future: asyncio.Future[BatchesResult] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    held_by: asyncio.Task[None] | None = None  # the Fetch it waits in, once sent


class SharedFetches:
    """The held Fetches of one :class:`ClusterClient`'s following readers."""

    def __init__(self, cluster: ClusterClient) -> None:
        self._cluster = cluster
        self._joining: dict[_Key, list[_Reader]] = {}
        self._held: dict[asyncio.Task[None], list[_Reader]] = {}

    async def read(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        max_records: int,
        max_bytes: int,
        max_wait_ms: int,
        isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    ) -> BatchesResult:
        """The batches of ``topic``-``partition`` from ``offset`` as :func:`fetch_batches`
        reads them, waiting up to ``max_wait_ms`` for the first, in a Fetch shared with the
        other readers of its leader. Errors are those of the partition's answer (retriable
        ones, such as a leader that moved, for the caller to retry)."""
        check_read(offset, max_records, max_bytes, max_wait_ms)
        leader = await partition_leader(self._cluster, topic, partition, refresh=False)
        ask = min(max_bytes, bytes_for(max_records, 0, 0))
        loop = asyncio.get_running_loop()
        reader = _Reader(
            FetchPosition(topic, partition, offset, leader.leader_epoch, ask),
            max_records,
            loop.time() + max_wait_ms / 1000,
        )
        self._join((leader.leader, isolation), reader)
        try:
            return await reader.future
        finally:
            reader.future.cancel()
            if reader.future.cancelled():  # it stopped waiting: its answer is not wanted
                self._leave(reader)

    async def close(self) -> None:
        """Stop every held Fetch (their readers are told the client is closing)."""
        for task in list(self._held):
            task.cancel()
        await asyncio.gather(*list(self._held), return_exceptions=True)
        for readers in self._joining.values():
            _fail(readers, PafkaError("the client is closing"))
        self._joining.clear()

    def _join(self, key: _Key, reader: _Reader) -> None:
        joining = self._joining.get(key)
        if joining is None:
            joining = self._joining[key] = []
            # Two turns on: a woken reader comes back in the turn after its wake-up.
            loop = asyncio.get_running_loop()
            loop.call_soon(loop.call_soon, self._send, key)
        joining.append(reader)

    def _send(self, key: _Key) -> None:
        readers = [r for r in self._joining.pop(key, []) if not r.future.done()]
        if readers:
            task = asyncio.ensure_future(self._fetch(key, readers))
            self._held[task] = readers
            task.add_done_callback(self._held.pop)
            for reader in readers:
                reader.held_by = task

    def _leave(self, reader: _Reader) -> None:
        task = reader.held_by
        if task is not None and all(r.future.done() for r in self._held.get(task, ())):
            task.cancel()

    async def _fetch(self, key: _Key, readers: list[_Reader]) -> None:
        broker, isolation = key
        loop = asyncio.get_running_loop()
        wait_s = min(r.deadline for r in readers) - loop.time()
        wait_ms = min(max(math.ceil(wait_s * 1000), 0), MAX_WAIT_MS)
        positions = [r.position for r in readers]
        body = encode_fetch_many(
            positions,
            max_bytes=min(sum(p.max_bytes for p in positions), MAX_FETCH_BYTES),
            max_wait_ms=wait_ms,
            isolation_level=int(isolation),
        )
        try:
            frame = memoryview(await send_fetch(self._cluster, broker, body, wait_ms, raw=True))
            code = fetch_answer.session_error(frame)
            if code:
                raise for_code(code)
            answers = fetch_answer.all_partitions(frame)
        except PafkaError as exc:
            _fail(readers, exc)
            return
        except asyncio.CancelledError:
            _fail(readers, PafkaError("the client is closing"))
            raise
        now = loop.time()
        for reader in readers:
            if reader.future.done():
                continue
            topic, partition = reader.position.topic, reader.position.partition
            answer = answers.get((topic, partition))
            try:
                if answer is None:
                    raise NotLeaderOrFollowerError(f"{topic}-{partition} missing from the answer")
                raise_for_partition(answer.error_code, topic, partition)
            except PafkaError as exc:
                reader.future.set_exception(exc)
                continue
            offset = reader.position.offset
            result = batches_of(answer, offset, reader.max_records, isolation)
            ended = now >= reader.deadline - DEADLINE_SLACK_S
            if result.chunks or result.next_offset > offset or ended:
                reader.future.set_result(result)
            else:
                self._join(key, reader)


def _fail(readers: list[_Reader], error: PafkaError) -> None:
    for reader in readers:
        if not reader.future.done():
            reader.future.set_exception(error)
