"""Held Fetches shared by the readers waiting on the same leader.

A reader that follows a partition (the gateway's follow reads) waits in a held Fetch for its
next batches. With a Fetch of its own per reader, one Produce that lands on six partitions of a
broker wakes six Fetches, and each answer costs the broker and this process a whole request for
a few hundred bytes. Here the readers waiting on one leader at one isolation level share
Fetches:

* readers that start waiting in the same turn of the event loop go in one Fetch, each
  partition with its own offset and byte limit;
* its answer wakes the readers whose partitions brought batches, skipped offsets or an error,
  and the leader's next Fetch goes out in the next turn, before the woken readers have written
  what they got (with what the leader's other answers of this turn add, so that Fetches
  answered together go on as one): the others go on waiting in it, and each woken reader's
  partition is fetched
  ahead in it from where that reader got to (as a Kafka consumer fetches while its
  application works). A reader coming back for that offset takes the Fetch made ahead for it,
  held at the broker already or answered already, so batches appended while it wrote are not
  left waiting for the next Fetch to go out; a reader that does not come back within
  :data:`MAX_HOLD_MS` of its answer leaves the part fetched for it unread;
* a reader that starts waiting while a Fetch of its leader is held is not added to it (the
  broker may hold it up to :data:`MAX_HOLD_MS`) but goes in a new one: its batches come no
  later than with a Fetch of its own.

A Fetch is held at most :data:`MAX_HOLD_MS`, and each reader's wait ends on its own timer, so
readers whose waits end at different moments do not each cut the shared Fetch short. A
reader's result is what :func:`pafka.client.batch_fetch.fetch_batches` would have returned
from the same answer; a reader that stops waiting leaves its part of the answer unread.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

from pafka.client.batch_fetch import BatchesResult, batches_of, check_read, fetch_batches
from pafka.client.cluster import ClusterClient
from pafka.client.fetcher import bytes_for, partition_leader, raise_for_partition, send_fetch
from pafka.client.isolation import IsolationLevel
from pafka.errors import NotLeaderOrFollowerError, PafkaError, for_code
from pafka.protocol import fetch_answer
from pafka.protocol.fetch_answer import PartitionAnswer
from pafka.protocol.fetch_request import FetchPosition, encode_fetch_many

# A held Fetch is answered after this at the latest (Kafka's fetch.max.wait.ms default), and
# its readers still waiting go on in the next one: an idle leader costs two Fetches a second,
# whatever the number of readers and however their own waits end.
MAX_HOLD_MS = 500
# The most a Fetch asks for in all (Kafka's fetch.max.bytes default).
MAX_FETCH_BYTES = 50 * 1024 * 1024

_Key = tuple[int, IsolationLevel]  # (leader, isolation level)
_Slot = tuple[_Key, str, int]  # a partition fetched ahead: (leader key, topic, partition)


@dataclass(eq=False)
class _Reader:
    position: FetchPosition
    max_records: int
    deadline: float  # the event loop's clock
    future: asyncio.Future[BatchesResult] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    # What the reader has when its wait ends with nothing: the partition's offsets as the
    # last answer gave them (none yet: -1).
    nothing: BatchesResult | None = None
    # Fetched ahead for a reader expected back: no one waits on it until a reader claims it,
    # and its partition's answer is kept for that reader (``answer``).
    ahead: bool = False
    answer: PartitionAnswer | None = None

    def time_up(self) -> None:
        if not self.future.done():
            offset = self.position.offset
            self.future.set_result(self.nothing or BatchesResult([], -1, -1, -1, offset))


class SharedFetches:
    """The held Fetches of one :class:`ClusterClient`'s following readers."""

    def __init__(self, cluster: ClusterClient) -> None:
        self._cluster = cluster
        self._joining: dict[_Key, list[_Reader]] = {}
        self._held: set[asyncio.Task[None]] = set()
        self._ahead: dict[_Slot, _Reader] = {}

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
        reads them, waiting up to ``max_wait_ms`` for the first in a Fetch shared with the
        other readers of its leader (with no wait, a Fetch of its own). A wait that ends with
        nothing returns no batches and the partition's offsets as its last answer gave them
        (-1 before any). Errors are those of the partition's answer (retriable ones, such as a
        leader that moved, for the caller to retry)."""
        check_read(offset, max_records, max_bytes, max_wait_ms)
        if max_wait_ms == 0:
            return await fetch_batches(
                self._cluster,
                topic,
                partition,
                offset,
                max_records=max_records,
                max_bytes=max_bytes,
                max_wait_ms=0,
                isolation=isolation,
            )
        leader = await partition_leader(self._cluster, topic, partition, refresh=False)
        key = (leader.leader, isolation)
        loop = asyncio.get_running_loop()
        ask = min(max_bytes, bytes_for(max_records, 0, 0))
        position = FetchPosition(topic, partition, offset, leader.leader_epoch, ask)
        deadline = loop.time() + max_wait_ms / 1000
        reader = self._claim((key, topic, partition), position, max_records, deadline)
        if reader is None:
            reader = _Reader(position, max_records, deadline)
            self._join(key, [reader])
        elif reader.future.done():  # answered ahead with its batches (or its error)
            return reader.future.result()
        # Each reader's wait ends on its own clock, not by cutting its Fetch short: readers
        # whose waits end at many moments would otherwise make a Fetch of all the others each.
        timer = loop.call_at(reader.deadline, reader.time_up)
        try:
            return await reader.future
        finally:
            timer.cancel()
            reader.future.cancel()  # a reader that stopped waiting: its answer is not wanted

    async def close(self) -> None:
        """Stop every held Fetch (their readers are told the client is closing)."""
        for task in list(self._held):
            task.cancel()
        await asyncio.gather(*self._held, return_exceptions=True)
        for key, readers in self._joining.items():
            self._fail(key, readers, PafkaError("the client is closing"))
        self._joining.clear()
        for ahead in self._ahead.values():
            ahead.future.cancel()
        self._ahead.clear()

    def _claim(
        self, slot: _Slot, position: FetchPosition, max_records: int, deadline: float
    ) -> _Reader | None:
        """The reader fetched ahead for this read, if one was (and then no longer ahead):
        still held, or done with its answer's result, or joining the next Fetch when that
        answer had nothing for it. None when the read is to join a Fetch as any reader does."""
        ahead = self._ahead.get(slot)
        if ahead is None or ahead.position != position:
            return None  # none, or made for another reader of the partition (left to it)
        del self._ahead[slot]
        ahead.ahead, ahead.max_records, ahead.deadline = False, max_records, deadline
        answer = ahead.answer
        if answer is not None:  # answered before the reader came back
            key = slot[0]
            ahead.answer = None
            if self._wake(ahead, answer, key[1]):
                self._join(key, self._ahead_of(key, ahead))  # with others claiming this turn
            else:
                self._join(key, [ahead])
        return ahead

    def _join(self, key: _Key, readers: list[_Reader], *, next_turn: bool = False) -> None:
        """Add ``readers`` to the leader's next Fetch, sent two turns on (readers that start
        waiting together share it) or, when ``next_turn``, one."""
        if not readers:
            return
        joining = self._joining.get(key)
        if joining is None:
            joining = self._joining[key] = []
            loop = asyncio.get_running_loop()
            if next_turn:
                loop.call_soon(self._send, key)
            else:
                loop.call_soon(loop.call_soon, self._send, key)
        joining.extend(readers)

    def _send(self, key: _Key) -> None:
        readers = [r for r in self._joining.pop(key, []) if not r.future.done()]
        if readers:
            task = asyncio.ensure_future(self._fetch(key, readers))
            self._held.add(task)
            task.add_done_callback(self._held.discard)

    async def _fetch(self, key: _Key, readers: list[_Reader]) -> None:
        broker, isolation = key
        loop = asyncio.get_running_loop()
        # No longer than the last of its readers waits.
        wait_s = max(r.deadline for r in readers) - loop.time()
        wait_ms = min(max(math.ceil(wait_s * 1000), 0), MAX_HOLD_MS)
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
            self._fail(key, readers, exc)
            return
        except asyncio.CancelledError:
            self._fail(key, readers, PafkaError("the client is closing"))
            raise
        except Exception as exc:  # a bug: its readers fail with it rather than wait it out
            self._fail(key, readers, exc)
            raise
        waiting: list[_Reader] = []
        for reader in readers:
            if reader.future.done():
                continue  # its wait ended, or (ahead) it was dropped
            topic, partition = reader.position.topic, reader.position.partition
            answer = answers.get((topic, partition))
            if reader.ahead:
                self._keep((key, topic, partition), reader, answer)
            elif self._wake(reader, answer, isolation):
                waiting.extend(self._ahead_of(key, reader))
            else:
                waiting.append(reader)
        # Next turn, before the woken readers come back (so they find it held already), with
        # what other answers of this turn add: Fetches answered together go on as one.
        self._join(key, waiting, next_turn=True)

    @staticmethod
    def _wake(reader: _Reader, answer: PartitionAnswer | None, isolation: IsolationLevel) -> bool:
        """Whether ``answer`` ends the reader's wait (batches, skipped offsets or an error);
        if not, it is kept as the reader's ``nothing``."""
        topic, partition, offset = reader.position[:3]
        try:
            if answer is None:
                raise NotLeaderOrFollowerError(f"{topic}-{partition} missing from the answer")
            raise_for_partition(answer.error_code, topic, partition)
        except PafkaError as exc:
            reader.future.set_exception(exc)
            return True
        result = batches_of(answer, offset, reader.max_records, isolation)
        if result.chunks or result.next_offset > offset:
            reader.future.set_result(result)
            return True
        reader.nothing = result
        return False

    def _ahead_of(self, key: _Key, woken: _Reader) -> list[_Reader]:
        """The reader to fetch ahead for ``woken``'s partition from where its answer ends
        (none when that answer ends its read, or the partition is fetched ahead already)."""
        if woken.future.exception() is not None:
            return []
        result, position = woken.future.result(), woken.position
        slot = (key, position.topic, position.partition)
        passed = result.next_offset - position.offset
        if passed >= woken.max_records or slot in self._ahead:
            return []
        deadline = asyncio.get_running_loop().time() + MAX_HOLD_MS / 1000
        left = woken.max_records - passed
        # Asking what the reader will ask for from there (bytes for fewer records, at most).
        ask = min(position.max_bytes, bytes_for(left, 0, 0))
        ahead = _Reader(
            position._replace(offset=result.next_offset, max_bytes=ask), left, deadline, ahead=True
        )
        self._ahead[slot] = ahead
        return [ahead]

    def _keep(self, slot: _Slot, ahead: _Reader, answer: PartitionAnswer | None) -> None:
        """Keep the answer of a partition fetched ahead until its reader comes back for it,
        for :data:`MAX_HOLD_MS` at most (one missing from the Fetch's answer is not kept: the
        reader finds out in a Fetch of its own)."""
        if answer is None:
            self._drop(slot, ahead)
            return
        ahead.answer = answer
        loop = asyncio.get_running_loop()
        loop.call_later(MAX_HOLD_MS / 1000, self._drop, slot, ahead)

    def _drop(self, slot: _Slot, ahead: _Reader) -> None:
        if self._ahead.get(slot) is ahead:
            del self._ahead[slot]
            ahead.future.cancel()

    def _fail(self, key: _Key, readers: list[_Reader], error: BaseException) -> None:
        """End the readers' waits with ``error``; the ones fetched ahead are dropped (their
        readers will meet the error in a Fetch of their own, if it lasts)."""
        for reader in readers:
            if reader.ahead:
                self._drop((key, reader.position.topic, reader.position.partition), reader)
            elif not reader.future.done():
                reader.future.set_exception(error)
