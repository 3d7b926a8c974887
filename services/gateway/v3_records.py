"""Confluent REST v3 produce: a request object in, a record out; an outcome in, a delivery
report out (pure).

A request is ``{"partition_id", "headers", "key", "value", "timestamp"}``, every field optional;
a key or value is ``{"type": "BINARY" | "JSON" | "STRING", "data": ...}`` (base64, any JSON, a
string). Schema Registry formats and schema fields are refused: there is no registry to encode
them with, and storing their data unencoded would corrupt the topic for schema-aware readers.
A report is ``{"error_code": 200, "cluster_id", "topic_name", "partition_id", "offset",
"timestamp", "key": {"type", "size"}, "value": {...}}``, or ``{"error_code", "message"}`` with
the REST error code (as every other route answers) when the record was not written.
"""

from __future__ import annotations

import datetime
import functools
from typing import Any, NamedTuple

import orjson

from pafka.client.producer import OutgoingRecord
from pafka.errors import PafkaError, RestError
from services.gateway import errors
from services.gateway.formats import (
    INVALID_KEY,
    INVALID_REQUEST,
    INVALID_VALUE,
    MAX_TIMESTAMP_MS,
    dump_json,
    parse_headers,
)
from services.gateway.plain_columns import decode_base64

MAX_PARTITION = 2**31 - 1
TYPES = ("BINARY", "JSON", "STRING")
SCHEMA_TYPES = ("AVRO", "JSONSCHEMA", "PROTOBUF")
SCHEMA_FIELDS = (
    "subject",
    "subject_name_strategy",
    "schema_id",
    "schema_version",
    "schema",
    "raw_schema",
)
Data = tuple[str, int] | None  # a key's or value's type and size in bytes, for the report


class V3Record(NamedTuple):
    """A request's record, where it asked to go, and its key's and value's type and size (a
    tuple: one is made per record of a stream)."""

    record: OutgoingRecord
    partition: int | None
    key: Data
    value: Data


_new_tuple = tuple.__new__  # a NamedTuple made without its Python-level __new__
_PLAIN_DATA = frozenset({"type", "data"})


def parse_request(item: Any) -> V3Record:
    """The record a request object asks for; :class:`RestError` naming the field at fault."""
    if type(item) is not dict:
        raise RestError(INVALID_REQUEST, "each record must be a JSON object")
    partition = item.get("partition_id")
    if partition is not None and (
        type(partition) is not int or not 0 <= partition <= MAX_PARTITION
    ):
        raise RestError(
            INVALID_REQUEST, f"partition_id must be an integer from 0 to {MAX_PARTITION}"
        )
    key, key_data = _data(item.get("key"), "key", INVALID_KEY)
    value, value_data = _data(item.get("value"), "value", INVALID_VALUE)
    headers = parse_headers(item["headers"], "record") if item.get("headers") is not None else ()
    stamp = item.get("timestamp")
    timestamp_ms = None if stamp is None else _timestamp_ms(stamp)
    record = _new_tuple(OutgoingRecord, (value, key, headers, timestamp_ms))
    return _new_tuple(V3Record, (record, partition, key_data, value_data))


def _data(field: Any, name: str, code: int) -> tuple[bytes | None, Data]:
    if field is None:
        return None, None
    if type(field) is not dict:
        raise RestError(code, f"{name} must be an object: {{'type': ..., 'data': ...}}")
    kind = field.get("type")
    schema = not field.keys() <= _PLAIN_DATA and any(
        field.get(f) is not None for f in SCHEMA_FIELDS
    )
    if schema or kind in SCHEMA_TYPES:
        raise RestError(code, f"{name}: schemas are not supported (no Schema Registry)")
    data = field.get("data")
    if kind is None:
        if data is None:
            return None, None
        raise RestError(code, f"{name}.type is required: one of {', '.join(TYPES)}")
    if kind not in TYPES:
        raise RestError(code, f"{name}.type must be one of {', '.join(TYPES)}")
    if data is None:
        return None, (kind, 0)
    if kind == "BINARY":
        if type(data) is not str:
            raise RestError(code, f"{name}.data must be a base64 string")
        try:
            stored = decode_base64(data)
        except ValueError:
            raise RestError(code, f"{name}.data is not valid base64") from None
    elif kind == "STRING":
        if type(data) is not str:
            raise RestError(code, f"{name}.data must be a string")
        try:
            stored = data.encode()
        except UnicodeEncodeError:
            raise RestError(code, f"{name}.data is not valid Unicode") from None
    else:
        try:
            stored = dump_json(data)
        except ValueError:  # 1e400 parses as infinity, which JSON cannot hold
            raise RestError(code, f"{name}.data holds a number out of JSON's range") from None
    return stored, (kind, len(stored))


def _timestamp_ms(value: Any) -> int:
    """An RFC 3339 instant (``2024-05-01T12:00:00.123Z``); one without an offset is UTC."""
    if type(value) is not str:
        raise RestError(INVALID_REQUEST, "timestamp must be an RFC 3339 date-time string")
    try:
        when = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise RestError(
            INVALID_REQUEST, f"timestamp {value!r} is not an RFC 3339 date-time"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    epoch_ms = (when - _EPOCH) // datetime.timedelta(milliseconds=1)
    if not 0 <= epoch_ms <= MAX_TIMESTAMP_MS:
        raise RestError(INVALID_REQUEST, f"timestamp {value!r} is before 1970")
    return epoch_ms


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@functools.lru_cache(maxsize=64)
def instant(timestamp_ms: int) -> str:
    """``2024-05-01T12:00:00.123Z``: a record's timestamp as the report gives it (cached: the
    records of one chunk mostly share their millisecond)."""
    when = _EPOCH + datetime.timedelta(milliseconds=timestamp_ms)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _described(data: Data) -> dict[str, Any] | None:
    return None if data is None else {"type": data[0], "size": data[1]}


def report(
    cluster_id: str, topic: str, parsed: V3Record, partition: int, offset: int, timestamp_ms: int
) -> bytes:
    """The delivery report of a record written at ``partition`` and ``offset``."""
    found: dict[str, Any] = {
        "error_code": 200,
        "cluster_id": cluster_id,
        "topic_name": topic,
        "partition_id": partition,
        "offset": offset,
        "timestamp": instant(timestamp_ms),
    }
    if parsed.key is not None:
        found["key"] = _described(parsed.key)
    if parsed.value is not None:
        found["value"] = _described(parsed.value)
    return orjson.dumps(found)


def error_report(error: PafkaError) -> bytes:
    """The report of a record not written: its REST error code and why."""
    _, code = errors.rest_code(error)
    return orjson.dumps({"error_code": code, "message": error.message})
