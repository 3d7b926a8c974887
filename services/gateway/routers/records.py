"""Producing and reading records: REST Proxy v2 produce, and stateless range reads.

``POST /topics/{t}`` and ``POST /topics/{t}/partitions/{p}`` write records (see
:mod:`services.gateway.produce` for where they go and what a 200 promises), once per
``Idempotency-Key`` when one is given (:mod:`services.gateway.idempotency`).
``GET /topics/{t}/partitions/{p}/records`` reads from an offset (long-polling up to
``timeout_ms``), ``GET .../offsets`` gives the readable range. Nothing is remembered between
requests: any gateway replica answers any of them.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from pafka.client.fetcher import fetch, offsets
from pafka.client.isolation import IsolationLevel
from pafka.errors import RestError
from services.gateway import batch_follow, batch_reads, idempotency
from services.gateway.column_produce import write_columns
from services.gateway.context import Ctx, GatewayContext, context
from services.gateway.formats import (
    INVALID_REQUEST,
    NDJSON,
    NOT_ACCEPTABLE,
    V2,
    V2_BINARY,
    V2_JSON,
    parse_produce,
    produce_format,
    range_format,
)
from services.gateway.produce import (
    ACKS,
    Result,
    answer,
    choose_partitions,
    keyless,
    previous_results,
    read_body,
    write,
)
from services.gateway.record_rendering import read_answer, read_lines
from services.gateway.routers.records_openapi import (
    LINES_SCHEMA,
    PRODUCE_BODY,
    PRODUCE_ERRORS,
    READ_ERRORS,
    READ_HEADERS,
    RECORDS_SCHEMA,
    OffsetsModel,
    ProduceResponse,
    RecordsModel,
)
from services.gateway.routers.topics import UNAVAILABLE, UNKNOWN, V2Response
from services.gateway.topic_metadata import partition_state, topic_info

MAX_OFFSET = 2**63 - 1
DEFAULT_MAX_RECORDS = 500

Isolation = Literal["read_uncommitted", "read_committed"]

router = APIRouter(tags=["records"])


async def _produce(
    ctx: GatewayContext,
    request: Request,
    topic: str,
    fixed: int | None,
    acks: str,
    key: str | None,
) -> Response:
    fmt = produce_format(request.headers.get("content-type"))
    if key is not None:
        idempotency.check_key(key)
    raw = await read_body(request, ctx.settings.max_body_bytes)
    body = parse_produce(raw, fmt, max_records=ctx.settings.max_records_per_request)
    named = {p for p in body.partitions if p is not None}
    if fixed is not None:
        named.add(fixed)
    for partition in sorted(named):
        await partition_state(ctx, topic, partition)
    count = len((await topic_info(ctx, topic, refresh=False)).partitions)
    columns = body.columns
    if key is None and columns is not None and (fixed is not None or columns.keys is None):
        return await write_columns(ctx, topic, columns, fixed, count, ACKS[acks])
    targets = choose_partitions(body, fixed, count, keyless.of(topic))
    if key is None:
        no_results: list[Result | None] = [None] * len(body.records)
        return answer(await write(ctx, topic, body.records, targets, ACKS[acks], no_results))

    store = idempotency.IdempotencyStore(ctx.zk, ctx.settings.request_timeout_ms)
    request_id = idempotency.fingerprint(request.url.path, acks, fmt, raw)
    claim = await store.claim(key, request_id)
    if isinstance(claim, dict):
        replay = JSONResponse(claim, media_type=V2)
        replay.headers["Idempotent-Replayed"] = "true"
        return replay
    done = previous_results(claim.previous, len(body.records))
    targets = [d.partition if d is not None else t for d, t in zip(done, targets, strict=True)]
    # Should this gateway die now, the claim stays pending until it is stale, then a retry
    # takes it over (see idempotency's module comment).
    results = await write(ctx, topic, body.records, targets, ACKS[acks], done)
    response = answer(results)
    stored: dict[str, Any] = {"key_schema_id": None, "value_schema_id": None}
    stored["offsets"] = [r.render() for r in results]
    await store.finish(claim, stored, complete=response.status_code == 200)
    _sweeper.maybe_start(ctx.zk)
    return response


_sweeper = idempotency.Sweeper()


# -- routes ------------------------------------------------------------------------------------


def acks_of(request: Request) -> str:
    """A produce request's ``acks``, refused as FastAPI refuses a bad parameter."""
    # Starlette's parse of a query string costs 5% of a small produce: most have none, or the
    # one plain parameter read here as Starlette reads it (escapes and lists go its way).
    query: bytes = request.scope["query_string"]
    if not query:
        acks = "all"
    elif b"&" in query or b"%" in query or b"+" in query:
        acks = request.query_params.get("acks", "all")
    else:
        name, _, value = query.partition(b"=")
        acks = value.decode("latin-1") if name == b"acks" else "all"
    if acks not in ACKS:
        raise RestError(INVALID_REQUEST, "query.acks: Input should be 'all', '-1' or '1'")
    return acks


def _options(request: Request) -> tuple[str, str | None]:
    """``acks`` and the idempotency key of a produce request. Read here rather than declared:
    FastAPI's parameter validation costs more than the rest of a one-record produce. The
    context is taken the same way, not as a dependency: FastAPI runs a plain-def dependency on
    a worker thread."""
    return acks_of(request), request.headers.get(idempotency.HEADER)


@router.post(
    "/topics/{topic}",
    response_model=ProduceResponse,
    summary="Produce records to a topic",
    description="Keyed records go to the partition Kafka's default partitioner picks; keyless "
    "ones go a batch at a time to the next partition in turn (a request's records together, "
    "as Kafka's sticky partitioner keeps them); a record may name its partition.",
    openapi_extra=PRODUCE_BODY,
    response_class=V2Response,
    responses=PRODUCE_ERRORS,
)
async def produce_to_topic(topic: str, request: Request) -> Response:
    return await _produce(context(request), request, topic, None, *_options(request))


@router.post(
    "/topics/{topic}/partitions/{partition}",
    response_model=ProduceResponse,
    summary="Produce records to one partition",
    openapi_extra=PRODUCE_BODY,
    response_class=V2Response,
    responses=PRODUCE_ERRORS,
)
async def produce_to_partition(topic: str, partition: int, request: Request) -> Response:
    return await _produce(context(request), request, topic, partition, *_options(request))


@router.get(
    "/topics/{topic}/partitions/{partition}/records",
    response_model=RecordsModel,
    summary="Read records from an offset (stateless)",
    description="Answers with what is there, or waits up to `timeout_ms` for the first record. "
    "`Accept: application/vnd.kafka.binary.v2+json` gives base64 keys and values; "
    "`Accept: application/x-ndjson` one JSON record a line, the next offset in the "
    f"`{batch_reads.NEXT_OFFSET}` header; "
    f"`Accept: {batch_reads.MEDIA_TYPE}` the record batches as stored (see the README).",
    responses={
        200: {
            "content": {
                V2_JSON: RECORDS_SCHEMA,
                V2_BINARY: RECORDS_SCHEMA,
                NDJSON: LINES_SCHEMA,
                **batch_reads.OPENAPI_CONTENT,
            },
            "headers": READ_HEADERS,
        },
        **READ_ERRORS,
    },
)
async def read_records(
    topic: str,
    partition: int,
    request: Request,
    offset: int = Query(ge=0, le=MAX_OFFSET, description="First offset to read"),
    max_records: int = Query(DEFAULT_MAX_RECORDS, ge=1, description="At most this many"),
    max_bytes: int | None = Query(None, ge=1, description="About this many bytes of batches"),
    timeout_ms: int = Query(0, ge=0, description="Wait this long for a first record"),
    isolation: Isolation = Query(
        "read_uncommitted",
        description="read_committed: only committed transactions' records (and records "
        "written outside transactions), up to the last stable offset",
    ),
    follow: bool = Query(
        False,
        description=f"With `Accept: {batch_reads.MEDIA_TYPE}` only: the answer stays open and "
        "each batch is written to it as it is appended, until `max_records` offsets (when "
        "given) or `timeout_ms` without a record (up to the gateway's longest poll when not "
        "given); see the README",
    ),
) -> Response:
    ctx = context(request)  # not a dependency: see _options
    batches = batch_reads.wants_batches(request.headers.get("accept"))
    if follow:
        if not batches:
            raise RestError(
                NOT_ACCEPTABLE,
                f"follow=true streams record batches: ask for Accept: {batch_reads.MEDIA_TYPE}",
            )
        given = request.query_params  # parsed only here: a follow read is made once, then goes on
        return await batch_follow.follow_batches(
            ctx,
            topic,
            partition,
            offset=offset,
            # The client's limits only: a follow read has none it was not given.
            max_records=max_records if "max_records" in given else None,
            max_bytes=max_bytes,
            timeout_ms=timeout_ms if "timeout_ms" in given else None,
            isolation=isolation,
        )
    if batches:
        return await batch_reads.read_batches(
            ctx,
            topic,
            partition,
            offset=offset,
            max_records=max_records,
            max_bytes=max_bytes,
            timeout_ms=timeout_ms,
            isolation=isolation,
        )
    fmt, lines = range_format(request.headers.get("accept"))
    await partition_state(ctx, topic, partition)
    settings = ctx.settings
    result = await fetch(
        ctx.cluster,
        topic,
        partition,
        offset,
        max_records=min(max_records, settings.max_records_per_request),
        max_bytes=settings.read_bytes(max_bytes),
        max_wait_ms=settings.read_wait_ms(timeout_ms),
        isolation=IsolationLevel.parse(isolation),
    )
    if lines:
        where = {
            batch_reads.NEXT_OFFSET: str(result.next_offset),
            batch_reads.HIGH_WATERMARK: str(result.high_watermark),
            batch_reads.LOG_START_OFFSET: str(result.log_start_offset),
        }
        return Response(read_lines(topic, partition, result), headers=where, media_type=NDJSON)
    return Response(read_answer(topic, partition, result, fmt), media_type=fmt.media_type)


@router.get(
    "/topics/{topic}/partitions/{partition}/offsets",
    response_model=OffsetsModel,
    summary="The partition's first and next offsets",
    response_class=V2Response,
    responses={**UNKNOWN, **UNAVAILABLE},
)
async def partition_offsets(
    topic: str,
    partition: int,
    ctx: Ctx,
    isolation: Isolation = Query(
        "read_uncommitted",
        description="read_committed: the end is the last stable offset, not the high watermark",
    ),
) -> JSONResponse:
    await partition_state(ctx, topic, partition)
    beginning, end = await offsets(ctx.cluster, topic, partition, IsolationLevel.parse(isolation))
    return JSONResponse({"beginning_offset": beginning, "end_offset": end}, media_type=V2)
