"""The record routes' OpenAPI: the models of what they answer and the documentation of what
they take (parameters read by hand, bodies, headers, errors), as FastAPI would write them.

Kept apart from :mod:`services.gateway.routers.records`, whose handlers take their requests
below FastAPI's validation (see its ``_options``) and so spell their documentation here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from services.gateway import batch_reads, idempotency
from services.gateway.formats import NDJSON, PLAIN_JSON, V2_BINARY, V2_JSON, ErrorBody
from services.gateway.produce import ACKS
from services.gateway.routers.topics import UNAVAILABLE, UNKNOWN


class RecordOffset(BaseModel):
    partition: int | None = Field(examples=[0])
    offset: int | None = Field(examples=[42])
    error_code: int | None = Field(
        None, description="null on success; 1 non-retriable, 2 retriable (send it again)"
    )
    error: str | None = None


class ProduceResponse(BaseModel):
    key_schema_id: None = None
    value_schema_id: None = None
    offsets: list[RecordOffset]


class HeaderModel(BaseModel):
    name: str = Field(examples=["trace-id"])
    value: str | None = Field(description="base64", examples=["YWJj"])


class RecordModel(BaseModel):
    topic: str = Field(examples=["orders"])
    partition: int = Field(examples=[0])
    offset: int = Field(examples=[42])
    timestamp: int = Field(examples=[1_700_000_000_000])
    timestamp_type: Literal["CREATE_TIME", "LOG_APPEND_TIME"]
    key: Any = Field(description="JSON, or base64 for the binary format", examples=["user-1"])
    value: Any = Field(examples=[{"amount": 12}])
    headers: list[HeaderModel]


class RecordsModel(BaseModel):
    topic: str = Field(examples=["orders"])
    partition: int = Field(examples=[0])
    records: list[RecordModel]
    next_offset: int = Field(description="Where the next read should start", examples=[43])
    high_watermark: int = Field(description="Offset after the last readable record")
    log_start_offset: int = Field(description="First offset still kept")


class OffsetsModel(BaseModel):
    beginning_offset: int = Field(examples=[0])
    end_offset: int = Field(description="Offset the next record will get", examples=[43])


# A record's headers, in v2 and v3 produce bodies alike: names, and values in base64.
HEADERS_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
    },
}
_RECORD_SCHEMA = {
    "type": "object",
    "properties": {
        "key": {"description": "JSON (json format) or base64 string (binary format); optional"},
        "value": {"description": "JSON (json format) or base64 string (binary format)"},
        "partition": {"type": "integer", "minimum": 0},
        "headers": HEADERS_SCHEMA,
        "timestamp": {"type": "integer", "description": "milliseconds since the epoch"},
    },
}
_PRODUCE_SCHEMA = {
    "type": "object",
    "required": ["records"],
    "properties": {"records": {"type": "array", "items": _RECORD_SCHEMA}},
}
_JSON_EXAMPLE = {"records": [{"key": "user-1", "value": {"amount": 12}}, {"value": [1, 2]}]}
_BINARY_EXAMPLE = {"records": [{"key": "dXNlci0x", "value": "aGVsbG8=", "partition": 0}]}
_ACKS_TEXT = "all (every in-sync replica, the default) or 1 (the leader)"
_KEY_TEXT = (
    "Retries with the same key (and the same request) write the records once: a finished "
    "request is answered again from its record (header `Idempotent-Replayed: true`), a partly "
    "failed one sends only the records not yet written. Keys are kept for 24 hours."
)
PRODUCE_BODY = {
    # The produce routes read these two themselves (see _options); documented as FastAPI would.
    "parameters": [
        {
            "name": "acks",
            "in": "query",
            "required": False,
            "schema": {
                "enum": list(ACKS),
                "type": "string",
                "description": _ACKS_TEXT,
                "default": "all",
                "title": "Acks",
            },
            "description": _ACKS_TEXT,
        },
        {
            "name": idempotency.HEADER,
            "in": "header",
            "required": False,
            "schema": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "description": _KEY_TEXT,
                "title": idempotency.HEADER,
            },
            "description": _KEY_TEXT,
        },
    ],
    "requestBody": {
        "required": True,
        "content": {
            V2_JSON: {"schema": _PRODUCE_SCHEMA, "example": _JSON_EXAMPLE},
            V2_BINARY: {"schema": _PRODUCE_SCHEMA, "example": _BINARY_EXAMPLE},
            PLAIN_JSON: {"schema": _PRODUCE_SCHEMA, "example": _JSON_EXAMPLE},
        },
    },
}
PRODUCE_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Malformed JSON (40001) or Idempotency-Key (40002)"},
    **UNKNOWN,
    409: {"model": ErrorBody, "description": "Idempotency-Key reused (40904) or in use (40905)"},
    413: {"model": ErrorBody, "description": "Body (41301) or record count (41302) too large"},
    415: {"model": ErrorBody, "description": "Unsupported content type (41501)"},
    422: {"model": ErrorBody, "description": "Invalid records (42200), key (42201), value (42202)"},
    503: {
        "model": ErrorBody,
        "description": "Some records not acknowledged (retriable); the body lists each record's "
        "outcome under `offsets`. Retry-After is set.",
    },
}
RECORDS_SCHEMA = {"schema": {"$ref": "#/components/schemas/RecordsModel"}}
# Where an NDJSON read goes on: its lines are records only, so headers say it, as they do for
# the batch format (the same names).
LINES_HEADERS = (batch_reads.NEXT_OFFSET, batch_reads.HIGH_WATERMARK, batch_reads.LOG_START_OFFSET)
LINES_SCHEMA = {
    "schema": {
        "type": "string",
        "description": "One record a line (each as in `records` of the JSON answer, keys and "
        "values as JSON), every line ending in a newline; where to read on is in the "
        f"`{batch_reads.NEXT_OFFSET}` header",
    }
}
READ_HEADERS = {
    name: {
        "description": f"{NDJSON} and {batch_reads.MEDIA_TYPE} only: {text}"
        if name in LINES_HEADERS
        else f"{batch_reads.MEDIA_TYPE} only: {text}",
        "schema": {"type": "integer"},
    }
    for name, text in batch_reads.HEADERS.items()
}
READ_ERRORS: dict[int | str, dict[str, Any]] = {
    **UNKNOWN,
    406: {"model": ErrorBody, "description": "Accept cannot be met, or a record is not JSON"},
    416: {"model": ErrorBody, "description": "Offset outside the partition's records (41601)"},
    422: {"model": ErrorBody, "description": "Invalid query parameters (42200)"},
    **UNAVAILABLE,
}
