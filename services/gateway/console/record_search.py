"""``GET /v3/clusters/{id}/topics/{t}/partitions/{p}/record-search``: records of one partition
whose key equals, value contains or header matches what is asked, searched by the gateway.

A request scans from an offset, forward or backward, at most ``max_scanned`` offsets and about
``MAX_SCAN_BYTES`` of records (so no request reads a whole 100 GB partition), and answers its
matches with how far it got and where the next request continues; the console asks again when
the person says "continue". Records are read with the gateway's own Fetch path
(:func:`pafka.client.fetcher.fetch`, the range read's), as a read_uncommitted consumer sees
them. The walk itself is :mod:`services.gateway.console.record_scan` (pure). Needs READ on the
topic, as a record read (``rest_acls.py``).
"""

from __future__ import annotations

import base64

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from pafka.client.batch_reading import FetchedRecord
from pafka.client.fetcher import fetch, offsets
from services.gateway.console.record_scan import (
    WINDOW_BYTES,
    Direction,
    RecordFilter,
    Window,
    exhausted,
    next_window,
    record_bytes,
    scan_window,
    trim,
)
from services.gateway.context import Ctx, GatewayContext
from services.gateway.topic_metadata import partition_state
from services.gateway.v3 import At

router = APIRouter(prefix="/v3/clusters/{cluster_id}", tags=["console views"])

DEFAULT_SCANNED = 10_000
MAX_SCANNED = 100_000
MAX_MATCHES = 500
MAX_FILTER_BYTES = 4096
# Bytes of records one request reads at most (whole windows: it may pass this by one window).
MAX_SCAN_BYTES = 64 * 1024 * 1024


class FoundHeader(BaseModel):
    name: str
    value: str | None = Field(description="base64, null for a null value")


class FoundRecord(BaseModel):
    offset: int
    timestamp: int = Field(description="Milliseconds since the epoch")
    key: str | None = Field(description="base64, null for a null key")
    value: str | None = Field(description="base64, null for a null value (a tombstone)")
    headers: list[FoundHeader]


class RecordSearch(BaseModel):
    topic_name: str
    partition_id: int
    direction: Direction
    matches: list[FoundRecord] = Field(description="In the order scanned")
    scanned: int = Field(description="Records looked at")
    reached_offset: int | None = Field(
        description="The last offset the scan covered (the lowest, backward); null if none"
    )
    next_offset: int = Field(
        description="Where to continue: forward the next offset to read, backward the offset "
        "below which to read"
    )
    exhausted: bool = Field(
        description="Nothing left in this direction (forward: at the log end, which may grow)"
    )
    log_start_offset: int
    log_end_offset: int


def _bytes(text: str | None) -> bytes | None:
    return None if text is None or text == "" else text.encode("utf-8")


@router.get(
    "/topics/{topic_name}/partitions/{partition_id}/record-search",
    response_model=RecordSearch,
    summary="Search a partition's records by key, value or header, a bounded scan at a time",
)
async def record_search(
    topic_name: str,
    partition_id: int,
    at: At,
    ctx: Ctx,
    offset: int | None = Query(
        None,
        ge=0,
        description="Where to start: forward the first offset, backward the offset "
        "below which; the log start or end when absent",
    ),
    direction: Direction = Query(Direction.BACKWARD, description="backward: newest first"),
    key: str | None = Query(None, max_length=MAX_FILTER_BYTES, description="The key equals"),
    value: str | None = Query(None, max_length=MAX_FILTER_BYTES, description="Value contains"),
    header: str | None = Query(None, max_length=MAX_FILTER_BYTES, description="Header name"),
    header_value: str | None = Query(
        None,
        max_length=MAX_FILTER_BYTES,
        description="That header's (or any header's) value contains",
    ),
    max_scanned: int = Query(DEFAULT_SCANNED, ge=1, le=MAX_SCANNED, description="Offsets scanned"),
    max_matches: int = Query(50, ge=1, le=MAX_MATCHES),
) -> RecordSearch:
    await partition_state(ctx, topic_name, partition_id)
    log_start, log_end = await offsets(ctx.cluster, topic_name, partition_id)
    record_filter = RecordFilter(
        key=_bytes(key),
        value_contains=_bytes(value),
        header_name=header or None,
        header_value_contains=_bytes(header_value),
    )
    forward = direction is Direction.FORWARD
    position = offset if offset is not None else (log_start if forward else log_end)
    # An offset outside the log starts at its nearer edge, as a reset consumer would.
    position = min(max(position, log_start), log_end)
    budget, bytes_left, scanned, reached = max_scanned, MAX_SCAN_BYTES, 0, None
    found: list[FetchedRecord] = []
    while (window := next_window(direction, position, log_start, log_end, budget)) is not None:
        window, records = await _read(ctx, topic_name, partition_id, direction, window)
        step = scan_window(direction, window, records, record_filter, max_matches - len(found))
        found += step.matches
        scanned += step.scanned
        budget -= window.size
        bytes_left -= sum(record_bytes(r) for r in records)
        position = step.resume
        reached = position - 1 if forward else position
        if step.full or bytes_left <= 0:
            break
    return RecordSearch(
        topic_name=topic_name,
        partition_id=partition_id,
        direction=direction,
        matches=[_found(r) for r in found],
        scanned=scanned,
        reached_offset=reached,
        next_offset=position,
        exhausted=exhausted(direction, position, log_start, log_end),
        log_start_offset=log_start,
        log_end_offset=log_end,
    )


async def _read(
    ctx: GatewayContext, topic: str, partition: int, direction: Direction, window: Window
) -> tuple[Window, list[FetchedRecord]]:
    """The records of ``window``, oldest first (several Fetches when they take more bytes
    than one answer holds), the window cut to the records that fit a step (``trim``)."""
    records: list[FetchedRecord] = []
    at = window.start
    while at < window.stop:
        got = await fetch(
            ctx.cluster,
            topic,
            partition,
            at,
            max_records=window.stop - at,
            max_bytes=ctx.settings.max_fetch_bytes,
            max_wait_ms=0,
        )
        records += [r for r in got.records if r.offset < window.stop]
        window, records = trim(direction, window, records, WINDOW_BYTES)
        if got.next_offset <= at:
            break
        at = got.next_offset
    return window, records


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _found(record: FetchedRecord) -> FoundRecord:
    return FoundRecord(
        offset=record.offset,
        timestamp=record.timestamp_ms,
        key=_b64(record.key),
        value=_b64(record.value),
        headers=[FoundHeader(name=n, value=_b64(v)) for n, v in record.headers],
    )
