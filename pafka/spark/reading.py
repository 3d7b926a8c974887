"""Reading one offset range through the gateway's stateless range endpoint (no pyspark here).

A range ``[start, until)`` was planned from offsets the gateway reported, so its records exist
unless retention deleted them since (the start is below the log start: 41601) or the log was
truncated below ``until`` (an unclean leader election). Either is data loss: an error, or with
``failOnDataLoss=false`` a warning and the records that are left. Gaps inside the range (a
compacted topic) are not loss. The same range always gives the same records, so a micro-batch
run again after a failure or a restart reads exactly what it read before.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pafka.spark.errors import DataLossError
from pafka.spark.gateway import BatchesUnsupported, GatewayClient, OffsetOutOfRange
from pafka.spark.planning import OffsetRange
from pafka.spark.rows import to_arrow, to_row

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)
T = TypeVar("T")

# How long a range end above the high watermark is waited for (the HWM of a new leader may lag
# one replication round behind what the old one reported) before it counts as lost.
BEHIND_WAIT_S = 5.0


def read_range(
    client: GatewayClient, r: OffsetRange, *, include_headers: bool, fail_on_data_loss: bool
) -> Iterator[tuple[Any, ...]]:
    """The rows of the range, in offset order."""
    for page in read_pages(client, r, fail_on_data_loss=fail_on_data_loss):
        for record in page:
            yield to_row(record, include_headers)


def read_pages(
    client: GatewayClient, r: OffsetRange, *, fail_on_data_loss: bool
) -> Iterator[list[dict[str, Any]]]:
    """The records of the range as the gateway renders them (JSON), one list per non-empty
    answer."""
    return _walk(client, r, partial(_json_step, client, r), fail_on_data_loss)


def _json_step(client: GatewayClient, r: OffsetRange, offset: int) -> _Step[list[dict[str, Any]]]:
    wanted = min(client.options.max_records_per_request, r.until - offset)
    page = client.read(r.topic, r.partition, offset, wanted)
    records = [x for x in page.records if offset <= x["offset"] < r.until]
    return _Step(records or None, page.next_offset, page.high_watermark)


def read_arrow(
    client: GatewayClient, r: OffsetRange, *, include_headers: bool, fail_on_data_loss: bool
) -> Iterator[pa.RecordBatch]:
    """The records of the range as Arrow record batches of Spark's Kafka schema, one per
    non-empty answer: the gateway sends record batches as stored, decoded here
    (:mod:`pafka.spark.batch_decode`). Each read asks for the rest of the range (or
    ``maxRecordsPerRequest`` records when that option is given); the gateway's byte cap of
    one read bounds it. A gateway that predates the format (a rolling upgrade) is read in
    JSON pages instead."""

    # numpy and pyarrow only where records are read: not on the driver planning the query.
    from pafka.spark.batch_decode import decode_batches

    def step(offset: int) -> _Step[pa.RecordBatch]:
        wanted = r.until - offset
        if client.options.read_records_per_request:
            wanted = min(wanted, client.options.read_records_per_request)
        try:
            page = client.read_batches(r.topic, r.partition, offset, wanted)
        except BatchesUnsupported:
            json_page = _json_step(client, r, offset)
            found = None if json_page.rows is None else to_arrow(json_page.rows, include_headers)
            return _Step(found, json_page.next_offset, json_page.high_watermark)
        rows = decode_batches(
            page.data,
            topic=r.topic,
            partition=r.partition,
            start=offset,
            until=r.until,
            include_headers=include_headers,
        )
        return _Step(rows if rows.num_rows else None, page.next_offset, page.high_watermark)

    return _walk(client, r, step, fail_on_data_loss)


@dataclass(frozen=True)
class _Step(Generic[T]):
    """One answer: its rows within the range (None when none), where to read on, the end."""

    rows: T | None
    next_offset: int
    high_watermark: int


def _walk(
    client: GatewayClient,
    r: OffsetRange,
    read: Callable[[int], _Step[T]],
    fail_on_data_loss: bool,
) -> Iterator[T]:
    offset = r.start
    behind_since: float | None = None
    while offset < r.until:
        try:
            page = read(offset)
        except OffsetOutOfRange as exc:
            beginning, end = client.bounds([(r.topic, r.partition)])[(r.topic, r.partition)]
            if offset < beginning:
                skip_to = min(beginning, r.until)
                _lost(r, offset, skip_to, f"deleted (log starts at {beginning})", fail_on_data_loss)
                offset = skip_to
                continue
            if _behind(behind_since):
                _lost(
                    r, offset, r.until, f"not in the log (ends at {end}): {exc}", fail_on_data_loss
                )
                return
            behind_since = behind_since or time.monotonic()
            time.sleep(0.1)
            continue
        if page.rows is not None:
            yield page.rows
        if page.next_offset > offset:
            offset, behind_since = page.next_offset, None
        elif _behind(behind_since):
            _lost(
                r,
                offset,
                r.until,
                f"not in the log (high watermark {page.high_watermark})",
                fail_on_data_loss,
            )
            return
        else:
            behind_since = behind_since or time.monotonic()
            time.sleep(0.1)


def _behind(since: float | None) -> bool:
    return since is not None and time.monotonic() - since > BEHIND_WAIT_S


def _lost(r: OffsetRange, start: int, until: int, why: str, fail: bool) -> None:
    what = f"offsets {start} to {until - 1} of {r.topic}-{r.partition}"
    if fail:
        raise DataLossError(f"{what} are {why}; set failOnDataLoss=false to skip them")
    log.warning("skipping %s: %s", what, why)
