"""REST Proxy v2 bodies: content types and produce requests in. Pure functions (records out
are rendered by :mod:`services.gateway.record_rendering`).

Two embedded formats, named by the media type (REST Proxy's convention)::

    application/vnd.kafka.json.v2+json     keys and values are JSON; stored as compact UTF-8 JSON
    application/vnd.kafka.binary.v2+json   keys and values are base64 strings; stored as bytes
    application/json                       taken as the JSON format

A produce body is ``{"records": [{"key", "value", "partition", "headers", "timestamp"}]}``;
only ``value`` matters to most callers (absent means null). Header values are base64 in both
formats, because headers are bytes whatever the record format. Every refusal is a
:class:`RestError` naming the record at fault, so a caller never sees a 500 for bad input.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from typing import Any

import orjson
from pydantic import BaseModel, Field

from pafka.client.producer import OutgoingRecord
from pafka.errors import RestError
from services.gateway import exact_json
from services.gateway.compact_produce import compact_columns, compact_json_strings
from services.gateway.plain_columns import PlainColumns, decode_base64, read_columns

V2 = "application/vnd.kafka.v2+json"
V2_JSON = "application/vnd.kafka.json.v2+json"
V2_BINARY = "application/vnd.kafka.binary.v2+json"
PLAIN_JSON = "application/json"
NDJSON = "application/x-ndjson"
UNSUPPORTED_EMBEDDED = ("avro", "protobuf", "jsonschema")

MALFORMED_BODY = 40001
INVALID_REQUEST = 42200
INVALID_KEY = 42201
INVALID_VALUE = 42202
NOT_ACCEPTABLE = 40601
BODY_TOO_LARGE = 41301
TOO_MANY_RECORDS = 41302
UNSUPPORTED_MEDIA_TYPE = 41501
MAX_TIMESTAMP_MS = 2**63 - 1
# Requests of fewer records are read record by record: the column calls cost a small request
# more than they save (a one-record request measured 10% slower by columns).
COLUMNS_FROM_RECORDS = 8


class EmbeddedFormat(enum.StrEnum):
    JSON = "json"
    BINARY = "binary"

    @property
    def media_type(self) -> str:
        return V2_JSON if self is EmbeddedFormat.JSON else V2_BINARY


class ErrorBody(BaseModel):
    """Every error the gateway answers."""

    error_code: int = Field(examples=[40401])
    message: str = Field(examples=["topic 'orders' does not exist"])


class ProduceBody:
    """A parsed produce request: the records, and the partition each one named (or None).

    A body of plain records (string keys and values, nothing else) is held as :attr:`columns`
    too, which the common write takes without a tuple per record; its :attr:`records` are made
    only when something asks for them."""

    def __init__(
        self,
        records: list[OutgoingRecord] | None,
        partitions: list[int | None] | None,
        columns: PlainColumns | None = None,
    ) -> None:
        assert records is not None or columns is not None
        self._records = records
        self._partitions = partitions
        self.columns = columns

    @property
    def records(self) -> list[OutgoingRecord]:
        if self._records is None:
            assert self.columns is not None
            self._records = self.columns.records()
        return self._records

    @property
    def partitions(self) -> list[int | None]:
        if self._partitions is None:
            count = len(self.columns.values if self.columns is not None else self.records)
            self._partitions = [None] * count
        return self._partitions

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProduceBody):
            return NotImplemented
        return (self.records, self.partitions) == (other.records, other.partitions)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ProduceBody({self.records!r}, {self.partitions!r})"


# -- content negotiation -----------------------------------------------------------------------


def media_type(value: str) -> str:
    """A ``Content-Type``'s media type, parameters dropped, in lower case."""
    return value.split(";", 1)[0].strip().lower()


def _embedded(media: str) -> EmbeddedFormat | str | None:
    """The format a media type names; the format's name if it is one we do not serve."""
    if media in (V2_JSON, PLAIN_JSON, V2):
        return EmbeddedFormat.JSON
    if media == V2_BINARY:
        return EmbeddedFormat.BINARY
    prefix, suffix = "application/vnd.kafka.", ".v2+json"
    if media.startswith(prefix) and media.endswith(suffix):
        return media[len(prefix) : -len(suffix)]
    return None


def produce_format(content_type: str | None) -> EmbeddedFormat:
    """The format of a produce body from its ``Content-Type`` (none given: JSON)."""
    if not content_type or not content_type.strip():
        return EmbeddedFormat.JSON
    found = _embedded(media_type(content_type))
    if isinstance(found, EmbeddedFormat):
        return found
    if isinstance(found, str):
        raise RestError(
            UNSUPPORTED_MEDIA_TYPE,
            f"embedded format {found!r} is not supported; use {V2_JSON} or {V2_BINARY}",
        )
    raise RestError(
        UNSUPPORTED_MEDIA_TYPE,
        f"content type {content_type!r} is not supported; use {V2_JSON}, {V2_BINARY} "
        f"or {PLAIN_JSON}",
    )


def _accepted(accept: str) -> list[tuple[float, int, str]]:
    ranked = []
    for i, part in enumerate(accept.split(",")):
        media, *params = (p.strip() for p in part.split(";"))
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if media and quality > 0:
            ranked.append((-quality, i, media.lower()))
    return sorted(ranked)


def read_format(accept: str | None) -> EmbeddedFormat:
    """The format to render records in, from the ``Accept`` header (none given: JSON)."""
    if not accept or not accept.strip():
        return EmbeddedFormat.JSON
    for _, _, media in _accepted(accept):
        if media in ("*/*", "application/*"):
            return EmbeddedFormat.JSON
        found = _embedded(media)
        if isinstance(found, EmbeddedFormat):
            return found
    raise RestError(
        NOT_ACCEPTABLE,
        f"cannot answer with any of {accept!r}; records are served as {V2_JSON} or {V2_BINARY}",
    )


def range_format(accept: str | None) -> tuple[EmbeddedFormat, bool]:
    """A range read's answer from its ``Accept``: the records' format, and whether they come
    as newline-delimited JSON (:data:`NDJSON`, JSON keys and values) rather than one document.
    The first acceptable media type in the client's order wins, as in :func:`read_format`."""
    if accept and NDJSON in accept.lower():
        for _, _, media in _accepted(accept):
            if media == NDJSON:
                return EmbeddedFormat.JSON, True
            if media in ("*/*", "application/*") or isinstance(_embedded(media), EmbeddedFormat):
                break
    return read_format(accept), False


# -- produce bodies ----------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# Built once: ``json.loads``/``json.dumps`` with options build a new decoder or encoder per call,
# which costs more than encoding a short value. Parsed JSON holds no cycles to check for.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
COMPACT_JSON = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, allow_nan=False, check_circular=False
)
_COMPACT_ASCII = json.JSONEncoder(separators=(",", ":"), allow_nan=False, check_circular=False)
_quote = json.encoder.encode_basestring  # what COMPACT_JSON does with a string


def load_json(body: bytes) -> Any:
    """Strict JSON (no NaN or Infinity, which could not be stored back as JSON)."""
    try:
        # What json.loads does with bytes: UTF-8, -16 or -32, told by the first bytes.
        return _DECODER.decode(body.decode(json.detect_encoding(body), "surrogatepass"))
    except (ValueError, RecursionError) as exc:
        raise RestError(MALFORMED_BODY, f"the body is not valid JSON: {exc}") from None


def load_body(body: bytes) -> Any:
    """What :func:`load_json` reads, by orjson (several times faster) for the common body:
    UTF-8 without integers beyond 64 bits. What orjson refuses, json decides and words."""
    found = exact_json.load(body)
    return load_json(body) if found is exact_json.NOT_EXACT else found


def dump_json(value: Any) -> bytes:
    """Compact UTF-8 JSON; escaped ASCII when a string holds a lone surrogate (which JSON's
    ``\\ud800`` escapes allow but UTF-8 cannot carry)."""
    kind = type(value)
    if kind is str or kind is int:
        found = exact_json.dump_scalar(value)
        if isinstance(found, bytes):
            return found
    try:
        # A string is quoted as JSONEncoder.encode would, one call less.
        text = _quote(value) if kind is str else COMPACT_JSON.encode(value)
        return text.encode()
    except UnicodeEncodeError:
        return _COMPACT_ASCII.encode(value).encode()


def _b64(value: Any, code: int, what: str) -> bytes:
    if not isinstance(value, str):
        raise RestError(code, f"{what} must be a base64 string or null")
    try:
        return decode_base64(value)
    except ValueError:  # binascii.Error included
        raise RestError(code, f"{what} is not valid base64") from None


def _data(value: Any, fmt: EmbeddedFormat, code: int, index: int, field: str) -> bytes:
    """A key or value (not null) as stored; ``records[index].field`` is named only in a
    refusal."""
    if fmt is EmbeddedFormat.BINARY:
        return _b64(value, code, f"records[{index}].{field}")
    try:
        return dump_json(value)
    except ValueError:  # a number like 1e400 parses as infinity, which JSON cannot hold
        raise RestError(
            code, f"records[{index}].{field} holds a number out of JSON's range"
        ) from None


def _int(value: Any, what: str, *, maximum: int) -> int:
    # bool is an int in Python but never a partition or a timestamp.
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= maximum:
        raise RestError(INVALID_REQUEST, f"{what} must be an integer from 0 to {maximum}")
    return value


def parse_headers(value: Any, where: str) -> tuple[tuple[str, bytes | None], ...]:
    if not isinstance(value, list):
        raise RestError(INVALID_REQUEST, f"{where}.headers must be a list")
    found = []
    for j, header in enumerate(value):
        at = f"{where}.headers[{j}]"
        if not isinstance(header, dict) or not isinstance(header.get("name"), str):
            raise RestError(INVALID_REQUEST, f"{at} must be {{'name': str, 'value': base64}}")
        try:
            header["name"].encode()
        except UnicodeEncodeError:
            raise RestError(INVALID_REQUEST, f"{at}.name is not valid Unicode") from None
        raw = header.get("value")
        found.append(
            (header["name"], None if raw is None else _b64(raw, INVALID_REQUEST, f"{at}.value"))
        )
    return tuple(found)


_PLAIN_FIELDS = frozenset({"key", "value"})
_new_tuple = tuple.__new__


def _stored(value: Any) -> bytes:
    """A JSON key or value as stored, refused without naming it (see _plain_records)."""
    return dump_json(value)


def _plain_records(items: list[Any], fmt: EmbeddedFormat) -> list[OutgoingRecord] | None:
    """The records when each item holds at most a key and a value (most requests), in one pass
    with no per-field detour; None when any item is more (or is refused: the full parse then
    finds and names the first fault)."""
    if not all([type(item) is dict and item.keys() <= _PLAIN_FIELDS for item in items]):
        return None
    string: Callable[[Any], bytes]
    if fmt is EmbeddedFormat.BINARY:
        stored = string = decode_base64
    else:
        # A JSON string (the common value) as dump_json writes it, without its detour; a lone
        # surrogate makes orjson raise, and the full parse then decides.
        stored, string = _stored, orjson.dumps
    try:
        return [
            # What OutgoingRecord(value, key) makes, without its Python-level __new__ (a
            # sixth of a 100-record request's parse).
            _new_tuple(
                OutgoingRecord,
                (
                    None
                    if (value := item.get("value")) is None
                    else string(value)
                    if type(value) is str
                    else stored(value),
                    None if (key := item.get("key")) is None else stored(key),
                    (),
                    None,
                ),
            )
            for item in items
        ]
    except (RestError, ValueError, TypeError):
        return None


def parse_produce(body: bytes, fmt: EmbeddedFormat, *, max_records: int) -> ProduceBody:
    """The records of a produce body, or the :class:`RestError` that says what is wrong.

    Runs for every produce request: the common request (string keys and values only) is read as
    columns (:mod:`services.gateway.plain_columns`), one of keys and values of other JSON types
    in one pass (:func:`_plain_records`), any other record field by field
    (:func:`parse_items`), the text naming a record built only for a refusal. The commonest
    body of all (compact, keyless, string values) is cut into its columns without a parse
    (:mod:`services.gateway.compact_produce`)."""
    cut = compact_columns if fmt is EmbeddedFormat.BINARY else compact_json_strings
    compact = cut(body, COLUMNS_FROM_RECORDS, max_records)
    if compact is not None:
        return ProduceBody(None, None, compact)
    loaded = exact_json.load_unchecked(body)
    columns = _plain_columns(loaded, fmt, max_records)
    if columns is not None:
        return ProduceBody(None, None, columns)
    if loaded is exact_json.NOT_EXACT or exact_json.has_long_number(body):
        loaded = load_json(body)  # as load_body: json decides where orjson may differ
    if not isinstance(loaded, dict) or not isinstance(loaded.get("records"), list):
        raise RestError(INVALID_REQUEST, 'the body must be {"records": [...]}')
    items = loaded["records"]
    if not items:
        raise RestError(INVALID_REQUEST, "records must not be empty")
    if len(items) > max_records:
        raise RestError(
            TOO_MANY_RECORDS, f"{len(items)} records in one request; the limit is {max_records}"
        )
    plain = _plain_records(items, fmt)
    if plain is not None:
        return ProduceBody(plain, [None] * len(plain))
    return parse_items(items, fmt)


def _plain_columns(loaded: Any, fmt: EmbeddedFormat, max_records: int) -> PlainColumns | None:
    """The columns of the common body, records of string keys and values only, as orjson read
    it. Nothing but those strings is taken from the body, so an integer orjson reads otherwise
    than json (one beyond 64 bits, read as a float) changes nothing taken, and the search for
    one (a pass over the whole body) is not needed."""
    if type(loaded) is not dict:
        return None
    items = loaded.get("records")
    if type(items) is not list or not COLUMNS_FROM_RECORDS <= len(items) <= max_records:
        return None
    return read_columns(items, binary=fmt is EmbeddedFormat.BINARY)


def parse_items(items: list[Any], fmt: EmbeddedFormat) -> ProduceBody:
    """Every field of every record checked in order, the first fault named: what the shortcuts
    of :func:`parse_produce` must agree with (the tests hold them to it)."""
    records, partitions = [], []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise RestError(INVALID_REQUEST, f"records[{i}] must be an object")
        key, value = item.get("key"), item.get("value")
        headers, timestamp = item.get("headers"), item.get("timestamp")
        partition = item.get("partition")
        # Checked in this order (key, value, headers, timestamp, partition): the first fault
        # found is the one named.
        key_bytes = None if key is None else _data(key, fmt, INVALID_KEY, i, "key")
        records.append(
            OutgoingRecord(
                None if value is None else _data(value, fmt, INVALID_VALUE, i, "value"),
                key_bytes,
                () if headers is None else parse_headers(headers, f"records[{i}]"),
                None
                if timestamp is None
                else _int(timestamp, f"records[{i}].timestamp", maximum=MAX_TIMESTAMP_MS),
            )
        )
        partitions.append(
            None
            if partition is None
            else _int(partition, f"records[{i}].partition", maximum=2**31 - 1)
        )
    return ProduceBody(records, partitions)
