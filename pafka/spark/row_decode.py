"""A few records decoded row by row into the Arrow batch :mod:`pafka.spark.batch_decode` makes.

The column-at-a-time decoding of ``batch_decode`` costs some sixty numpy and Arrow calls per
answer whatever its size: about 0.3 ms, more than Python spends on a few dozen records one by
one. A streaming reader that keeps up gets answers of a few records each, many times a second,
so answers of at most :data:`ROW_DECODE_MAX_RECORDS` records are decoded here instead: record
by record (:func:`pafka.records.encoding.body_records`, the JSON reads' decoder), then each
column made from its Python list. The rows and the schema are the same, and the tests hold
both ways to the record decoder. Records damaged under a valid CRC (a writer's bug) are refused
or read within their batch either way, though not always alike: this way checks each record's
length against its fields, and refuses bytes left after a batch's last record, as Kafka's
reader does, headers or not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from pafka.records.batch import BatchHeader
from pafka.records.encoding import Record, body_records
from pafka.spark.rows import COLUMNS, HEADERS

ROW_DECODE_MAX_RECORDS = 128  # where the two ways cost about the same
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def _binary(items: list[bytes | None]) -> pa.Array:
    # Arrow takes ten times longer over a list of nulls than to make one (keys mostly are).
    if items.count(None) == len(items):
        return pa.nulls(len(items), pa.binary())
    return pa.array(items, pa.binary())


def decode_rows(
    joined: bytes,
    headers: Sequence[BatchHeader],
    spans: Sequence[tuple[int, int]],
    *,
    topic: str,
    partition: int,
    start: int,
    until: int,
    include_headers: bool,
) -> pa.RecordBatch:
    """The records of the batches ``headers`` (bodies at ``spans`` of ``joined``) with offsets
    in ``[start, until)``, as Spark's Kafka rows."""
    kept: list[tuple[Record, int]] = []
    for header, (begin, end) in zip(headers, spans, strict=True):
        kind = 1 if header.log_append_time else 0
        for record in body_records(header, joined[begin:end]):
            if start <= record.offset < until:
                kept.append((record, kind))
    n = len(kept)
    columns: list[Any] = [
        _binary([r.key for r, _ in kept]),
        _binary([r.value for r, _ in kept]),
        pa.array([topic] * n, pa.string()),
        pa.array([partition] * n, pa.int32()),
        pa.array([r.offset for r, _ in kept], pa.int64()),
        pa.array([r.timestamp * 1000 for r, _ in kept], TIMESTAMP_TYPE),
        pa.array([kind for _, kind in kept], pa.int32()),
    ]
    names = list(COLUMNS)
    if include_headers:
        rows = [[{"key": k, "value": v} for k, v in r.headers] for r, _ in kept]
        columns.append(pa.array(rows, HEADER_TYPE))
        names.append(HEADERS)
    return pa.RecordBatch.from_arrays(columns, names=names)
