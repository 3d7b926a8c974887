"""Records between the gateway's JSON and Spark's Kafka rows (no pyspark here).

Reading: a record of the binary v2 range answer (base64 key, value and header values) becomes
the tuple of Spark's Kafka schema, ``(key, value, topic, partition, offset, timestamp,
timestampType[, headers])``. Writing: a row's key, value, partition and headers become a record
of a binary v2 produce body. Keys and values may be binary or strings (UTF-8), as in Spark's
Kafka sink; a null key or value stays null.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pafka.spark.errors import ConnectorError

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
TIMESTAMP_TYPES = {"CREATE_TIME": 0, "LOG_APPEND_TIME": 1}
# The Kafka schema of a read, with and without headers (Spark DDL).
READ_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
HEADERS_FIELD = "headers array<struct<key: string, value: binary>>"
COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
HEADERS = "headers"


def read_schema(include_headers: bool) -> str:
    return f"{READ_SCHEMA}, {HEADERS_FIELD}" if include_headers else READ_SCHEMA


def to_row(record: dict[str, Any], include_headers: bool) -> tuple[Any, ...]:
    row: tuple[Any, ...] = (
        _unb64(record.get("key")),
        _unb64(record.get("value")),
        record["topic"],
        int(record["partition"]),
        int(record["offset"]),
        EPOCH + timedelta(milliseconds=int(record["timestamp"])),
        TIMESTAMP_TYPES.get(record.get("timestamp_type", "CREATE_TIME"), 0),
    )
    if include_headers:
        headers = [(h["name"], _unb64(h.get("value"))) for h in record.get("headers") or ()]
        row += (headers,)
    return row


def to_record(
    key: bytes | str | None,
    value: bytes | str | None,
    partition: int | None = None,
    headers: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """A binary v2 produce record. ``headers`` are (key, value) pairs or rows of two fields."""
    record: dict[str, Any] = {"key": _b64(key), "value": _b64(value)}
    if partition is not None:
        if partition < 0:
            raise ConnectorError(f"partition column holds {partition}: must be >= 0")
        record["partition"] = int(partition)
    if headers:
        record["headers"] = [{"name": str(h[0]), "value": _b64(h[1])} for h in headers]
    return record


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _b64(data: bytes | bytearray | str | None) -> str | None:
    if data is None:
        return None
    raw = data.encode() if isinstance(data, str) else bytes(data)
    return base64.b64encode(raw).decode("ascii")


def to_arrow(records: list[dict[str, Any]], include_headers: bool) -> Any:
    """The records as one pyarrow ``RecordBatch`` of the read schema: what Spark takes from a
    Python data source without converting row by row."""
    import pyarrow as pa

    columns = [
        pa.array([_unb64(r.get("key")) for r in records], pa.binary()),
        pa.array([_unb64(r.get("value")) for r in records], pa.binary()),
        pa.array([r["topic"] for r in records], pa.string()),
        pa.array([r["partition"] for r in records], pa.int32()),
        pa.array([r["offset"] for r in records], pa.int64()),
        pa.array([r["timestamp"] * 1000 for r in records], pa.timestamp("us", tz="UTC")),
        pa.array(
            [TIMESTAMP_TYPES.get(r.get("timestamp_type", "CREATE_TIME"), 0) for r in records],
            pa.int32(),
        ),
    ]
    names = list(COLUMNS)
    if include_headers:
        header = pa.struct([("key", pa.string()), ("value", pa.binary())])
        headers = [
            [{"key": h["name"], "value": _unb64(h.get("value"))} for h in r.get("headers") or ()]
            for r in records
        ]
        columns.append(pa.array(headers, pa.list_(header)))
        names.append(HEADERS)
    return pa.RecordBatch.from_arrays(columns, names=names)
