"""``POST /v3/clusters/{cluster_id}/topics/{topic_name}/records``: Confluent REST v3 produce,
one record or a stream of them on one request.

The body is concatenated JSON, one request object per record (:mod:`services.gateway.
v3_records`). It is read as it arrives: with ``Transfer-Encoding: chunked`` a client keeps
one request open and writes records for as long as it likes, and each record's delivery
report comes back on the same response, in order, as soon as it is acknowledged (Confluent's
"streaming mode"). A body with a length is the same with an end. The status is 200 once the
cluster, topic and credentials are accepted; each report then says how its record fared
(``error_code`` 200, or the REST error code and a message), so a bad record is answered and the
stream goes on. Bytes that cannot begin a JSON value, or one value larger than
``PAFKA_GATEWAY_MAX_BODY_BYTES``, end it after a last report saying why.

Records read together (one chunk of the body) are written together, as one v2 request's are,
each acknowledged at ``acks`` (our extension, as on v2's routes; Confluent's proxy takes it
from its producer configuration). Each chunk's records are handed to the producer before the
next chunk is read, so a partition's records go out in the order of the body.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.types import Message, Receive, Scope, Send

from pafka.errors import PafkaError, RestError
from services.gateway import v3, v3_records
from services.gateway.context import GatewayContext, context
from services.gateway.errors import INTERNAL_ERROR
from services.gateway.formats import (
    BODY_TOO_LARGE,
    PLAIN_JSON,
    UNSUPPORTED_MEDIA_TYPE,
    ProduceBody,
    media_type,
)
from services.gateway.json_stream import JsonStream
from services.gateway.produce import ACKS, Result, choose_partitions, keyless, write_in_order
from services.gateway.routers.records import acks_of
from services.gateway.routers.records_openapi import HEADERS_SCHEMA, PRODUCE_BODY, PRODUCE_ERRORS
from services.gateway.topic_metadata import partition_state, topic_info
from services.gateway.v3_records import V3Record

log = logging.getLogger(__name__)

# Chunks whose reports are not yet sent: past it the body is read no further until the oldest
# is answered, so a client that writes faster than the cluster acknowledges is slowed, not
# buffered without bound.
MAX_PENDING_CHUNKS = 64

router = APIRouter(prefix="/v3/clusters/{cluster_id}", tags=["records (v3)"])

_DATA = {
    "type": "object",
    "properties": {
        "type": {"enum": list(v3_records.TYPES)},
        "data": {"description": "base64 (BINARY), any JSON (JSON) or a string (STRING)"},
    },
}
_REQUEST = {
    "type": "object",
    "properties": {
        "partition_id": {"type": "integer", "minimum": 0},
        "headers": HEADERS_SCHEMA,
        "key": _DATA,
        "value": _DATA,
        "timestamp": {"type": "string", "format": "date-time"},
    },
}
_REPORT = {
    "type": "object",
    "properties": {
        "error_code": {"type": "integer", "description": "200, or why the record was not written"},
        "message": {"type": "string"},
        "cluster_id": {"type": "string"},
        "topic_name": {"type": "string"},
        "partition_id": {"type": "integer"},
        "offset": {"type": "integer"},
        "timestamp": {"type": "string", "format": "date-time"},
        "key": {"type": "object"},
        "value": {"type": "object"},
    },
}
_ACKS_PARAMETER = next(
    p for p in PRODUCE_BODY["parameters"] if isinstance(p, dict) and p["name"] == "acks"
)
_EXAMPLE = {"partition_id": 0, "value": {"type": "JSON", "data": {"amount": 12}}}


@router.post(
    "/topics/{topic_name}/records",
    summary="Produce records (one, or a stream of them)",
    description="Concatenated JSON request objects; one delivery report per record, in order, "
    "streamed back as each is acknowledged. Send the body chunked to keep producing on one "
    "request (Confluent REST v3's streaming mode).",
    openapi_extra={
        "parameters": [_ACKS_PARAMETER],
        "requestBody": {
            "required": True,
            "content": {PLAIN_JSON: {"schema": _REQUEST, "example": _EXAMPLE}},
        },
    },
    responses={
        200: {"content": {PLAIN_JSON: {"schema": _REPORT}}, "description": "Delivery reports"},
        **{s: PRODUCE_ERRORS[s] for s in (404, 415)},
    },
)
async def produce_records(cluster_id: str, topic_name: str, request: Request) -> Response:
    ctx = context(request)
    acks = acks_of(request)
    if media_type(request.headers.get("content-type", PLAIN_JSON)) != PLAIN_JSON:
        raise RestError(UNSUPPORTED_MEDIA_TYPE, f"content type must be {PLAIN_JSON}")
    await v3.links(cluster_id, request, ctx)
    await topic_info(ctx, topic_name, refresh=False)  # an unknown topic is the request's 404
    return RecordStream(ctx, cluster_id, topic_name, ACKS[acks])


class RecordStream(Response):
    """The response of a produce stream: it reads the request's body itself, as it arrives,
    and writes a report per record while the body is still coming."""

    def __init__(self, ctx: GatewayContext, cluster_id: str, topic: str, acks: int) -> None:
        # Not Response.__init__: it would declare a content length, and this body has none.
        self.status_code = 200
        self.background = None
        self.raw_headers = [(b"content-type", PLAIN_JSON.encode())]
        self.ctx, self.cluster_id, self.topic, self.acks = ctx, cluster_id, topic, acks

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The body's first part before the answer's head: a client that sent "Expect:
        # 100-continue" is told to go on only by a read that comes before any answer.
        first = await receive()
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        reports: asyncio.Queue[asyncio.Future[bytes] | None] = asyncio.Queue(MAX_PENDING_CHUNKS)
        sender = asyncio.create_task(_send_reports(reports, send))
        try:
            await self._read(first, receive, reports)
        finally:
            await reports.put(None)
            await sender
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _read(
        self,
        message: Message,
        receive: Receive,
        reports: asyncio.Queue[asyncio.Future[bytes] | None],
    ) -> None:
        stream = JsonStream()
        limit = self.ctx.settings.max_body_bytes
        while True:
            if message["type"] != "http.request":
                return  # the client went away: what it sent is written, nothing is answered
            found: list[Any] = stream.feed(message.get("body", b""))
            ending = stream.broken is not None
            if stream.pending_bytes > limit:
                found.append(RestError(BODY_TOO_LARGE, f"a record exceeds {limit} bytes"))
                ending = True
            elif not message.get("more_body", False) and not ending:
                try:
                    stream.finish()
                except RestError as cut:
                    found.append(cut)
                ending = True
            if found:
                await reports.put(await self._written(found))
            if ending:
                return
            message = await receive()

    async def _written(self, found: list[Any]) -> asyncio.Future[bytes]:
        """The reports of these values, to come once their records are acknowledged. Partitions
        are chosen and the records handed to the producer here, in the body's order, so that
        records of one partition are written in the order they were read."""
        parsed: list[V3Record | PafkaError] = []
        for item in found:
            if isinstance(item, PafkaError):
                parsed.append(item)
                continue
            try:
                parsed.append(v3_records.parse_request(item))
            except RestError as refused:
                parsed.append(refused)
        try:
            count = await self._refuse_unknown_partitions(parsed)
        except PafkaError as error:  # the topic itself (deleted since): every record fails alike
            parsed = [p if isinstance(p, PafkaError) else error for p in parsed]
        good = [p for p in parsed if isinstance(p, V3Record)]
        if not good:
            return _done(_joined(parsed, []))
        body = ProduceBody([p.record for p in good], [p.partition for p in good])
        targets = choose_partitions(body, None, count, keyless.of(self.topic))
        sent = write_in_order(self.ctx, self.topic, body.records, targets, self.acks)
        return asyncio.ensure_future(self._reports(parsed, sent))

    async def _refuse_unknown_partitions(self, parsed: list[V3Record | PafkaError]) -> int:
        """Records naming a partition the topic lacks become their refusal (40402); the
        topic's partition count."""
        count = len((await topic_info(self.ctx, self.topic, refresh=False)).partitions)
        refused: dict[int, PafkaError | None] = {}
        for i, item in enumerate(parsed):
            if not isinstance(item, V3Record) or item.partition is None or item.partition < count:
                continue
            if item.partition not in refused:
                try:  # added since the metadata was read, or unknown
                    await partition_state(self.ctx, self.topic, item.partition)
                    refused[item.partition] = None
                except RestError as unknown:
                    refused[item.partition] = unknown
            error = refused[item.partition]
            if error is not None:
                parsed[i] = error
        return count

    async def _reports(
        self, parsed: list[V3Record | PafkaError], sent: Awaitable[list[Result]]
    ) -> bytes:
        try:
            results = await sent
        except Exception:
            log.exception("producing to %r failed", self.topic)
            failed = RestError(INTERNAL_ERROR, "internal error (the gateway's log has the details)")
            return _joined([failed if isinstance(p, V3Record) else p for p in parsed], [])
        return _joined(parsed, results, self.cluster_id, self.topic)


def _joined(
    parsed: list[V3Record | PafkaError],
    results: list[Result],
    cluster_id: str = "",
    topic: str = "",
) -> bytes:
    """Every record's report in order: its refusal, or its written record's outcome."""
    outcomes = iter(results)
    reports = []
    for item in parsed:
        if isinstance(item, PafkaError):
            reports.append(v3_records.error_report(item))
            continue
        result = next(outcomes)
        if result.error is not None:
            reports.append(v3_records.error_report(result.error))
        else:
            assert result.offset is not None and result.timestamp_ms is not None
            written = (result.partition, result.offset, result.timestamp_ms)
            reports.append(v3_records.report(cluster_id, topic, item, *written))
    return b"".join(reports)


def _done(body: bytes) -> asyncio.Future[bytes]:
    future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
    future.set_result(body)
    return future


async def _send_reports(reports: asyncio.Queue[asyncio.Future[bytes] | None], send: Send) -> None:
    """Each chunk's reports as soon as they and all before them are ready. Once the
    connection fails, the rest is taken and dropped, so the reader never waits on a full
    queue."""
    failed: BaseException | None = None
    while (pending := await reports.get()) is not None:
        body = await pending
        if failed is not None:
            continue
        try:
            await send({"type": "http.response.body", "body": body, "more_body": True})
        except OSError as exc:
            failed = exc
    if failed is not None:
        raise failed
