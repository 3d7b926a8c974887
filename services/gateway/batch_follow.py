"""Range reads that follow the log: ``follow=true`` with the batch format.

``GET /topics/{t}/partitions/{p}/records?offset=N&follow=true`` with ``Accept:
application/vnd.pafka.batches`` answers as the one-shot batch read does (same parameters,
guard and errors before anything is sent), but does not end with the first answer: the
response stays open and the record batches are written to it as they become readable, chunked
(the batches of one Fetch answer joined), in offset order, the same bytes a one-shot read
would return. A reader keeping up with a busy
partition then pays no request per answer, and gets each batch one broker Fetch after it was
appended instead of a whole request round trip later.

The stream ends cleanly (its last chunk) when ``max_records`` offsets have been passed (when
the client gave ``max_records``), when no record came for ``timeout_ms`` (the gateway's
``max_poll_ms`` when not given, and never more), when the read can no longer go on (the log
was cut under it, the topic deleted: the next read from where the stream stopped is answered
with the error), or when the gateway shuts down. A client that goes away stops it at once.
Each batch carries its offsets, so where to read on after an end is the last batch's base
offset plus its last offset delta plus one, found without any header.

While a stream waits for its next batches it does so in a Fetch shared with the other streams
waiting on the same leader (:mod:`pafka.client.shared_fetches`): one Produce landing on many
followed partitions wakes one Fetch per broker, not one per stream.

Retriable failures (a leader moving, a broker restarting) are retried within the idle limit, as
a Kafka consumer does; the gateway's fetching waits on the client: a reader that stops
reading stops the Fetches too (the HTTP send waits while the socket's buffer is full).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Iterator, Mapping

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from pafka.client.batch_fetch import BatchesResult
from pafka.client.isolation import IsolationLevel
from pafka.errors import PafkaError
from services.gateway.batch_reads import HIGH_WATERMARK, LOG_START_OFFSET, MEDIA_TYPE
from services.gateway.context import GatewayContext
from services.gateway.topic_metadata import partition_state

log = logging.getLogger(__name__)

# A retriable failure is tried again after this long (a leader moving takes about as long).
RETRY_BACKOFF_S = 0.1
# Offsets a stream may pass when the client set no max_records: without end.
UNBOUNDED = 2**63 - 1
# An answer's batches go out joined in body chunks of at most this (a larger batch alone).
PIECE_BYTES = 256 * 1024


async def follow_batches(
    ctx: GatewayContext,
    topic: str,
    partition: int,
    *,
    offset: int,
    max_records: int | None,
    max_bytes: int | None,
    timeout_ms: int | None,
    isolation: str,
) -> Response:
    """The stream of ``topic``-``partition``'s batches from ``offset`` on. Its first read is
    made here, so that an unknown partition or an offset out of range is answered as the
    one-shot read answers it, before the response starts."""
    await partition_state(ctx, topic, partition)
    settings = ctx.settings
    stream = _Stream(
        ctx,
        topic,
        partition,
        limit=UNBOUNDED if max_records is None else max_records,
        max_bytes=settings.read_bytes(max_bytes),
        idle_s=settings.read_wait_ms(settings.max_poll_ms if timeout_ms is None else timeout_ms)
        / 1000,
        isolation=IsolationLevel.parse(isolation),
    )
    # Without waiting: the response starts at once, and the stream waits from there.
    first = await stream.read(offset, wait=False)
    return FollowResponse(stream, offset, first)


class _Stream:
    """What one follow read reads: its partition, limits, and where it has got to."""

    def __init__(
        self,
        ctx: GatewayContext,
        topic: str,
        partition: int,
        *,
        limit: int,
        max_bytes: int,
        idle_s: float,
        isolation: IsolationLevel,
    ) -> None:
        self.ctx, self.topic, self.partition = ctx, topic, partition
        self.limit, self.max_bytes, self.idle_s = limit, max_bytes, idle_s
        self.isolation = isolation
        self.passed = 0  # offsets passed so far (records, and markers skipped)
        self.idle_until = time.monotonic() + idle_s

    async def read(self, position: int, *, wait: bool = True) -> BatchesResult:
        """The batches from ``position``: those there now, or (``wait``) the first to come
        until the idle limit, in a Fetch shared with the other streams of the leader."""
        wait_ms = math.ceil((self.idle_until - time.monotonic()) * 1000) if wait else 0
        return await self.ctx.shared_fetches.read(
            self.topic,
            self.partition,
            position,
            max_records=max(1, self.limit - self.passed),
            max_bytes=self.max_bytes,
            max_wait_ms=max(0, wait_ms),
            isolation=self.isolation,
        )

    def took(self, start: int, result: BatchesResult) -> None:
        self.passed += result.next_offset - start
        if result.chunks:
            self.idle_until = time.monotonic() + self.idle_s

    @property
    def over(self) -> bool:
        return self.passed >= self.limit or time.monotonic() >= self.idle_until


class FollowResponse(Response):
    """Writes the stream's batches as they come until it ends, the client leaves or the
    gateway stops; one Fetch at a time, each sent only once the last answer was written."""

    media_type = MEDIA_TYPE

    def __init__(self, stream: _Stream, offset: int, first: BatchesResult) -> None:
        self.stream, self.offset, self.first = stream, offset, first
        self.status_code = 200
        self.background = None
        self.init_headers(_headers(first))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        open_now = scope["app"].state.metrics.follow_reads
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        writing = asyncio.create_task(self._write(send))
        leaving = asyncio.create_task(_client_leaves(receive))
        stopping = asyncio.create_task(self.stream.ctx.stopping.wait())
        open_now.inc()
        try:
            await asyncio.wait({writing, leaving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            open_now.dec()
            for task in (writing, leaving, stopping):
                task.cancel()
            await asyncio.gather(writing, leaving, stopping, return_exceptions=True)
        if leaving.done() and not leaving.cancelled():
            return  # nobody to end the body for
        failure = writing.exception() if writing.done() and not writing.cancelled() else None
        if failure is not None:
            raise failure  # a bug: uvicorn logs it and drops the connection, the body unended
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _write(self, send: Send) -> None:
        stream, position, result = self.stream, self.offset, self.first
        while True:
            for piece in _pieces(result.chunks):
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            stream.took(position, result)
            position = max(position, result.next_offset)
            if stream.over:
                return
            try:
                result = await stream.read(position)
            except PafkaError as exc:
                if not exc.retriable:
                    log.info("follow read of %s-%d ends: %s", stream.topic, stream.partition, exc)
                    return
                stream.ctx.cluster.forget(stream.topic)
                await asyncio.sleep(RETRY_BACKOFF_S)
                result = BatchesResult([], 0, 0, 0, position)


def _pieces(chunks: list[memoryview]) -> Iterator[bytes | memoryview]:
    """An answer's batches joined into body chunks of up to :data:`PIECE_BYTES`: written one
    by one, each batch (a Produce's worth of a partition, often a few kilobytes) would cost a
    socket write and a wake-up of the reader."""
    piece: list[memoryview] = []
    size = 0
    for chunk in chunks:
        if piece and size + len(chunk) > PIECE_BYTES:
            yield _joined(piece)
            piece, size = [], 0
        piece.append(chunk)
        size += len(chunk)
    if piece:
        yield _joined(piece)


def _joined(piece: list[memoryview]) -> bytes | memoryview:
    return piece[0] if len(piece) == 1 else b"".join(piece)


async def _client_leaves(receive: Receive) -> None:
    """Returns when the client has gone (the request's body, if any, is already read)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def _headers(first: BatchesResult) -> Mapping[str, str]:
    # Where the log stood at the start; no next offset: the stream goes on past it.
    return {
        HIGH_WATERMARK: str(first.high_watermark),
        LOG_START_OFFSET: str(first.log_start_offset),
        "Cache-Control": "no-store",
    }
