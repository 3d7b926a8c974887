"""Range reads answered with the partition's record batches as they are on disk.

``GET /topics/{t}/partitions/{p}/records`` with ``Accept: application/vnd.pafka.batches``
answers with Kafka v2 record batches (magic 2), byte for byte as the broker served them: the
gateway reads batch headers only, never a record, and streams views of the broker's Fetch
answer (:mod:`pafka.client.batch_fetch` says which batches a read keeps). The body is the
batches back to back; each starts with its 8-byte base offset and 4-byte length, so a client
walks them with no other framing. Where to read on travels in headers (:data:`HEADERS`).

The parameters, the long poll and every error (unknown topic or partition, offset out of
range, authentication and ACLs) are those of the JSON read: the same route and guard run
first, and errors are REST Proxy JSON bodies.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from pafka.client.batch_fetch import fetch_batches
from pafka.client.isolation import IsolationLevel
from services.gateway.context import GatewayContext
from services.gateway.topic_metadata import partition_state

MEDIA_TYPE = "application/vnd.pafka.batches"
HIGH_WATERMARK = "Pafka-High-Watermark"
LOG_START_OFFSET = "Pafka-Log-Start-Offset"
LAST_STABLE_OFFSET = "Pafka-Last-Stable-Offset"
NEXT_OFFSET = "Pafka-Next-Offset"
HEADERS = {
    NEXT_OFFSET: "Where the next read should start (past every batch returned or skipped)",
    HIGH_WATERMARK: "Offset after the last readable record (read_uncommitted's end)",
    LAST_STABLE_OFFSET: "Below it every transaction is decided (read_committed's end)",
    LOG_START_OFFSET: "First offset still kept",
}

OPENAPI_CONTENT = {
    MEDIA_TYPE: {
        "schema": {
            "type": "string",
            "format": "binary",
            "description": "Kafka v2 record batches back to back, as on disk; the first may "
            "begin before `offset` (skip its earlier records). No control batches; with "
            "read_committed no batches of aborted transactions. See the README.",
        }
    }
}
OPENAPI_HEADERS = {
    name: {"description": f"{MEDIA_TYPE} only: {text}", "schema": {"type": "integer"}}
    for name, text in HEADERS.items()
}


def wants_batches(accept: str | None) -> bool:
    """Whether the ``Accept`` header names the batch format (parameters and q ignored)."""
    if not accept or MEDIA_TYPE not in accept.lower():
        return False
    return any(part.split(";", 1)[0].strip().lower() == MEDIA_TYPE for part in accept.split(","))


async def read_batches(
    ctx: GatewayContext,
    topic: str,
    partition: int,
    *,
    offset: int,
    max_records: int,
    max_bytes: int | None,
    timeout_ms: int,
    isolation: str,
) -> Response:
    """The batches of ``topic``-``partition`` from ``offset``, within the gateway's limits."""
    await partition_state(ctx, topic, partition)
    settings = ctx.settings
    result = await fetch_batches(
        ctx.cluster,
        topic,
        partition,
        offset,
        # A batch read is for bulk readers: the JSON read's record cap does not apply, only
        # the byte cap of one Fetch.
        max_records=max_records,
        max_bytes=settings.read_bytes(max_bytes),
        max_wait_ms=settings.read_wait_ms(timeout_ms),
        isolation=IsolationLevel.parse(isolation),
    )
    headers = {
        "Content-Length": str(result.size_bytes),
        NEXT_OFFSET: str(result.next_offset),
        HIGH_WATERMARK: str(result.high_watermark),
        LAST_STABLE_OFFSET: str(result.last_stable_offset),
        LOG_START_OFFSET: str(result.log_start_offset),
    }
    return ChunksResponse(result.chunks, headers)


class ChunksResponse(Response):
    """A body already in memory as views of the Fetch answer, sent as they are (no copy).

    Not a ``StreamingResponse``: that runs a task group per answer to listen for the client
    going away while it streams, which costs a small read more than all its other work; with
    every chunk in hand there is nothing to stop early (a send to a client that left is
    dropped)."""

    media_type = MEDIA_TYPE

    def __init__(self, chunks: list[memoryview], headers: Mapping[str, str]) -> None:
        self.chunks = chunks
        self.status_code = 200
        self.background = None
        self.init_headers(headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        last = len(self.chunks) - 1
        for i, chunk in enumerate(self.chunks):
            await send({"type": "http.response.body", "body": chunk, "more_body": i < last})
        if last < 0:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
