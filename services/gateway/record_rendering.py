"""Records out: a range read's or a consumer's records rendered as REST Proxy v2 JSON (or one
record a line, NDJSON). Pure functions.

JSON-format values are stored as UTF-8 JSON and embedded as they are; binary-format keys and
values are base64. A stored value that is not JSON (written by a Kafka client) is refused with
40601, naming the record, never answered as a 500.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from typing import Any

from pafka.client.batch_reading import FetchedRecord
from pafka.client.fetcher import FetchResult
from pafka.errors import RestError
from services.gateway import exact_json
from services.gateway.formats import COMPACT_JSON, NOT_ACCEPTABLE, V2_BINARY, EmbeddedFormat


class _StoredJson:
    """Stored keys and values parsed as JSON (as ``json.loads`` does), noting whether any held
    a float: orjson writes some floats differently (``1e-05`` as ``0.00001``), so such answers
    go through json. ``NaN`` and ``Infinity``, which json reads but JSON has not (a Kafka client
    may write them), are refused: no JSON answer could carry them."""

    def __init__(self) -> None:
        self.inexact = False
        # Made when first needed: it refers back to this object (a reference cycle, left for
        # the garbage collector), and most answers never need it.
        self._decoder: json.JSONDecoder | None = None

    def _float(self, text: str) -> float:
        self.inexact = True
        return float(text)

    def loads(self, data: bytes) -> Any:
        found = exact_json.load(data, floats=False)  # a float read must set inexact
        if found is not exact_json.NOT_EXACT:
            return found  # orjson refuses lone surrogates: none is in what it read
        text = data.decode(json.detect_encoding(data), "surrogatepass")
        if self._decoder is None:
            self._decoder = json.JSONDecoder(parse_float=self._float, parse_constant=_not_json)
        found = self._decoder.decode(text)
        if _lone_surrogate(text, found):
            # No UTF-8 answer can carry it (a Kafka client may write any bytes).
            raise ValueError("a lone surrogate")
        return found


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# An escaped surrogate (of a pair, or alone); only then can a value read from ASCII hold one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(text: str, found: Any) -> bool:
    """Whether ``found`` (read from ``text``) holds a surrogate that is not half of a pair."""
    try:
        text.encode()  # a raw one, as "surrogatepass" lets UTF-8 bytes through
        if _SURROGATE_ESCAPE.search(text) is not None:
            COMPACT_JSON.encode(found).encode()
    except UnicodeEncodeError:
        return True
    return False


def _render(data: bytes, fmt: EmbeddedFormat, stored: _StoredJson, offset: int, what: str) -> Any:
    if fmt is EmbeddedFormat.BINARY:
        return binascii.b2a_base64(data, newline=False).decode()
    try:
        return stored.loads(data)
    except (ValueError, RecursionError):
        raise RestError(
            NOT_ACCEPTABLE,
            f"the {what} of the record at offset {offset} is not JSON; "
            f"read it with Accept: {V2_BINARY}",
        ) from None


def _render_all(
    topic: str,
    partition: int,
    records: Sequence[FetchedRecord],
    fmt: EmbeddedFormat,
    stored: _StoredJson,
) -> list[dict[str, Any]]:
    return [
        {
            "topic": topic,
            "partition": partition,
            "offset": r.offset,
            "timestamp": r.timestamp_ms,
            "timestamp_type": str(r.timestamp_type),
            "key": None if r.key is None else _render(r.key, fmt, stored, r.offset, "key"),
            "value": None if r.value is None else _render(r.value, fmt, stored, r.offset, "value"),
            "headers": [
                {"name": name, "value": None if v is None else base64.b64encode(v).decode()}
                for name, v in r.headers
            ]
            if r.headers
            else [],
        }
        for r in records
    ]


def render_records(
    topic: str, partition: int, records: Sequence[FetchedRecord], fmt: EmbeddedFormat
) -> list[dict[str, Any]]:
    """Records as REST Proxy v2 shows them, plus timestamps and headers (base64 values)."""
    return _render_all(topic, partition, records, fmt, _StoredJson())


def read_lines(topic: str, partition: int, result: FetchResult) -> bytes:
    """A range read as newline-delimited JSON: one record object a line (each as in
    :func:`read_answer`'s ``records``), every line ending in a newline."""
    stored = _StoredJson()
    rendered = _render_all(topic, partition, result.records, EmbeddedFormat.JSON, stored)
    if not rendered:
        return b""
    return b"".join([exact_json.dumps(r, has_floats=stored.inexact) + b"\n" for r in rendered])


def read_answer(topic: str, partition: int, result: FetchResult, fmt: EmbeddedFormat) -> bytes:
    """The body of a range read: its records (as :func:`render_records`) and where to read on,
    byte for byte as ``JSONResponse`` writes it (json, compact, UTF-8), by orjson, several times
    faster, whenever that gives the same bytes."""
    stored = _StoredJson()
    body = {
        "topic": topic,
        "partition": partition,
        "records": _render_all(topic, partition, result.records, fmt, stored),
        "next_offset": result.next_offset,
        "high_watermark": result.high_watermark,
        "log_start_offset": result.log_start_offset,
    }
    return exact_json.dumps(body, has_floats=stored.inexact)
