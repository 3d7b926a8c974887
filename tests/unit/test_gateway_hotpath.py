"""The hot path's shortcuts against the implementations they stand in for: produce bodies read
by orjson and in one pass, plain batches built in one pass, stored JSON read by orjson, NDJSON
lines, and which requests the raw ASGI path takes (only those FastAPI reads the same way)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from pafka.client.batch_reading import FetchedRecord, TimestampType
from pafka.client.fetcher import FetchResult
from pafka.client.plain_batch import build_plain_batch
from pafka.errors import RestError
from pafka.records.encoding import build_batch
from services.gateway.formats import (
    EmbeddedFormat,
    load_json,
    parse_items,
    parse_produce,
    range_format,
)
from services.gateway.hotpath import (
    PRODUCE_PARTITION,
    PRODUCE_TOPIC,
    READ_RANGE,
    match,
    read_params,
)
from services.gateway.record_rendering import read_answer, read_lines

JSON, BINARY = EmbeddedFormat.JSON, EmbeddedFormat.BINARY

# Values orjson and json read or write differently: floats in exponent form, integers beyond
# 64 bits, lone surrogates, NaN.
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**62, max_value=2**70)
    | st.integers(min_value=-(2**70), max_value=-(2**62))
    | st.text()
    | st.sampled_from(["\ud800", "a\udfffb", "\x00\x1f\x7f\u2028"])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e-05, 1e16, 1e400, -0.0, 0.1]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
records = st.lists(
    st.fixed_dictionaries({}, optional={"key": json_values, "value": json_values})
    | st.fixed_dictionaries(
        {"value": json_values},
        optional={"partition": st.integers(-1, 3), "timestamp": st.integers(-1, 5)},
    )
    | json_values,
    min_size=1,
    max_size=5,
)


def _outcome(parse: Any) -> Any:
    try:
        return parse()
    except RestError as exc:
        return (exc.rest_code, exc.message)


@given(records, st.booleans())
def test_produce_bodies_parse_as_the_full_json_parse(items: list[Any], ascii_only: bool) -> None:
    # json writes what hypothesis made (NaN, Infinity and lone surrogates included).
    raw = json.dumps({"records": items}, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    expected = _outcome(lambda: parse_items(load_json(raw)["records"], JSON))
    assert _outcome(lambda: parse_produce(raw, JSON, max_records=100)) == expected


@given(
    st.lists(
        st.fixed_dictionaries(
            {}, optional={"key": st.text(max_size=8) | st.none(), "value": st.text(max_size=8)}
        ),
        min_size=1,
        max_size=5,
    )
)
def test_binary_bodies_parse_as_the_full_parse(items: list[Any]) -> None:
    # Arbitrary text is mostly not base64: refusals must match too.
    raw = json.dumps({"records": items}).encode()
    expected = _outcome(lambda: parse_items(load_json(raw)["records"], BINARY))
    assert _outcome(lambda: parse_produce(raw, BINARY, max_records=100)) == expected


@given(
    st.lists(st.tuples(st.binary() | st.none(), st.binary() | st.none()), min_size=1),
    st.integers(0, 2**62),
)
def test_plain_batches_are_build_batch_bytes(pairs: list[Any], timestamp_ms: int) -> None:
    expected = build_batch(
        [(k, v, ()) for k, v in pairs], timestamps_ms=[timestamp_ms] * len(pairs)
    )
    assert build_plain_batch(pairs, timestamp_ms) == expected


def test_plain_batches_with_long_records_and_many_offsets() -> None:
    pairs = [(None, b"v" * 20_000)] + [(b"k", b"")] * 9_000
    assert build_plain_batch(pairs, 5) == build_batch(
        [(k, v, ()) for k, v in pairs], timestamps_ms=[5] * len(pairs)
    )


def _stored(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )


stored_data = json_values.map(_stored) | st.binary(max_size=12) | st.just(b'"\xef\xbb\xbf1"')


def _fetched(data: list[tuple[bytes | None, bytes | None]]) -> FetchResult:
    found = [
        FetchedRecord(i, 1_700_000_000_000, TimestampType.CREATE_TIME, k, v, (("h", b"\x00"),))
        for i, (k, v) in enumerate(data)
    ]
    return FetchResult(found, len(found) + 3, 0, len(found), len(found))


def _reference(result: FetchResult) -> bytes:
    """What a range read answered before orjson read stored JSON: json throughout."""

    def shown(data: bytes | None) -> Any:
        return None if data is None else json.loads(data)

    body = {
        "topic": "t",
        "partition": 2,
        "records": [
            {
                "topic": "t",
                "partition": 2,
                "offset": r.offset,
                "timestamp": r.timestamp_ms,
                "timestamp_type": "CREATE_TIME",
                "key": shown(r.key),
                "value": shown(r.value),
                "headers": [{"name": "h", "value": "AA=="}],
            }
            for r in result.records
        ],
        "next_offset": result.next_offset,
        "high_watermark": result.high_watermark,
        "log_start_offset": result.log_start_offset,
    }
    return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


@given(st.lists(st.tuples(stored_data | st.none(), stored_data | st.none()), max_size=4))
def test_json_reads_answer_as_json_does(data: list[tuple[bytes | None, bytes | None]]) -> None:
    result = _fetched(data)
    expected: Any
    try:
        expected = _reference(result)
    except (ValueError, RecursionError):  # not JSON (406), or NaN stored (json cannot answer)
        expected = "refused"
    try:
        got: Any = read_answer("t", 2, result, JSON)
    except RestError as exc:
        got = "refused" if exc.http_status == 406 else exc.message
    except ValueError:
        got = "refused"
    assert got == expected


@given(st.lists(st.tuples(st.none(), json_values.map(_stored)), max_size=4))
def test_ndjson_lines_are_the_json_answers_records(data: list[Any]) -> None:
    result = _fetched(data)
    try:
        whole = json.loads(read_answer("t", 2, result, JSON))
    except (ValueError, RestError):  # NaN, Infinity or a lone surrogate: neither answer can
        return
    lines = read_lines("t", 2, result)
    assert lines.endswith(b"\n") or not lines
    assert [json.loads(line) for line in lines.splitlines()] == whole["records"]


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, (JSON, False)),
        ("application/x-ndjson", (JSON, True)),
        ("text/csv, application/x-ndjson;q=0.9", (JSON, True)),
        ("application/json, application/x-ndjson", (JSON, False)),
        ("application/x-ndjson;q=0.5, application/vnd.kafka.binary.v2+json", (BINARY, False)),
        ("*/*, application/x-ndjson", (JSON, False)),
    ],
)
def test_ndjson_is_negotiated_in_the_clients_order(
    accept: str | None, expected: tuple[EmbeddedFormat, bool]
) -> None:
    assert range_format(accept) == expected


def test_hot_requests_are_matched() -> None:
    assert match("POST", "/topics/t") == (PRODUCE_TOPIC, {"topic": "t"})
    assert match("POST", "/topics/t/partitions/07") == (
        PRODUCE_PARTITION,
        {"topic": "t", "partition": 7},
    )
    assert match("GET", "/topics/t/partitions/1/records") == (
        READ_RANGE,
        {"topic": "t", "partition": 1},
    )
    for method, path in [
        ("GET", "/topics/t"),
        ("POST", "/topics/"),
        ("POST", "/topics/t/"),
        ("POST", "/topics/t/partitions/-1"),
        ("POST", "/topics/t/partitions/+1"),
        ("POST", "/topics/t/partitions/\u0663"),
        ("GET", "/topics/t/partitions/1/offsets"),
        ("POST", "/topics/t/partitions/1/records"),
        ("GET", "/topics//partitions/1/records"),
        ("GET", "/topicsx/t"),
    ]:
        assert match(method, path) is None, (method, path)


def test_only_plainly_valid_reads_are_taken() -> None:
    assert read_params(b"offset=5&max_records=10&offset=6") == {"offset": 6, "max_records": 10}
    assert read_params(b"offset=0&isolation=read_committed&other=x") == {
        "offset": 0,
        "isolation": "read_committed",
    }
    for query in [
        b"",
        b"max_records=1",
        b"offset=-1",
        b"offset=%2B1",
        b"offset=1.0",
        b"offset= 1",
        b"offset=9223372036854775808",
        b"offset=1&max_records=0",
        b"offset=1&max_bytes=0",
        b"offset=1&timeout_ms=",
        b"offset=1&isolation=READ_COMMITTED",
        b"offset=1&follow=1",
        b"offset=1&follow=True",
        b"offset=1&follow=",
    ]:
        assert read_params(query) is None, query


def test_follow_is_taken_as_true_or_false_as_fastapi_reads_those() -> None:
    for text in ("true", "false"):
        params = read_params(f"offset=3&follow={text}".encode())
        assert params == {"offset": 3, "follow": TypeAdapter(bool).validate_python(text)}


@given(st.text(alphabet="0123456789+-. _\u0663e", max_size=20))
def test_numbers_taken_are_read_as_fastapi_reads_them(text: str) -> None:
    params = read_params(f"offset={text}".encode())
    if params is None:
        return
    try:
        assert TypeAdapter(int).validate_python(text) == params["offset"]
    except ValidationError:
        pytest.fail(f"{text!r} taken but refused by FastAPI")
