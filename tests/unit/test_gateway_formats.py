"""REST bodies: content negotiation, produce parsing (every refusal a RestError), rendering."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.client.batch_reading import FetchedRecord, TimestampType
from pafka.client.producer import OutgoingRecord
from pafka.errors import RestError
from services.gateway.formats import (
    EmbeddedFormat,
    ProduceBody,
    dump_json,
    parse_produce,
    produce_format,
    read_format,
)
from services.gateway.idempotency import (
    DONE,
    PARTIAL,
    PENDING,
    RECREATE,
    RETENTION_MS,
    TAKE_OVER,
    Outcome,
    check_key,
    decide,
    fingerprint,
)
from services.gateway.produce import (
    BATCH_TARGET_BYTES,
    Result,
    Turns,
    answer,
    batches,
    choose_partitions,
    previous_results,
)
from services.gateway.record_rendering import render_records

JSON, BINARY = EmbeddedFormat.JSON, EmbeddedFormat.BINARY


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def body(*records: object) -> bytes:
    return json.dumps({"records": list(records)}).encode()


def code_of(excinfo: pytest.ExceptionInfo[RestError]) -> int:
    return excinfo.value.rest_code


# -- content types -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("application/vnd.kafka.json.v2+json", JSON),
        ("application/vnd.kafka.binary.v2+json", BINARY),
        ("Application/VND.Kafka.Binary.v2+JSON; charset=utf-8", BINARY),
        ("application/json", JSON),
        ("application/vnd.kafka.v2+json", JSON),
        (None, JSON),
        ("", JSON),
    ],
)
def test_produce_format(content_type: str | None, expected: EmbeddedFormat) -> None:
    assert produce_format(content_type) is expected


@pytest.mark.parametrize(
    "content_type",
    [
        "application/vnd.kafka.avro.v2+json",
        "application/vnd.kafka.protobuf.v2+json",
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/vnd.kafka.json.v3+json",
    ],
)
def test_unsupported_content_types_are_415(content_type: str) -> None:
    with pytest.raises(RestError) as excinfo:
        produce_format(content_type)
    assert code_of(excinfo) == 41501
    assert excinfo.value.http_status == 415


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, JSON),
        ("*/*", JSON),
        ("application/vnd.kafka.binary.v2+json", BINARY),
        ("application/vnd.kafka.json.v2+json, */*;q=0.1", JSON),
        ("text/html, application/vnd.kafka.binary.v2+json", BINARY),
        ("application/vnd.kafka.json.v2+json;q=0.5, application/vnd.kafka.binary.v2+json", BINARY),
        ("application/vnd.kafka.avro.v2+json, application/json", JSON),
        ("application/vnd.kafka.binary.v2+json;q=0, application/*", JSON),
    ],
)
def test_read_format_from_accept(accept: str | None, expected: EmbeddedFormat) -> None:
    assert read_format(accept) is expected


@pytest.mark.parametrize("accept", ["text/html", "application/vnd.kafka.avro.v2+json", "a;q=x"])
def test_unacceptable_accept_is_406(accept: str) -> None:
    with pytest.raises(RestError) as excinfo:
        read_format(accept)
    assert code_of(excinfo) == 40601


# -- produce bodies ----------------------------------------------------------------------------


def test_json_records_become_compact_json_bytes() -> None:
    parsed = parse_produce(
        body(
            {"key": "k", "value": {"a": [1, 2.5, None]}, "partition": 2},
            {"value": "é"},
            {"key": None, "value": None, "timestamp": 1_700_000_000_000},
        ),
        JSON,
        max_records=10,
    )
    assert parsed.records == [
        OutgoingRecord(key=b'"k"', value=b'{"a":[1,2.5,null]}'),
        OutgoingRecord(key=None, value='"é"'.encode()),
        OutgoingRecord(key=None, value=None, timestamp_ms=1_700_000_000_000),
    ]
    assert parsed.partitions == [2, None, None]


def test_binary_records_are_base64_with_headers() -> None:
    parsed = parse_produce(
        body(
            {
                "key": b64(b"\x00\xff"),
                "value": b64(b"payload"),
                "headers": [{"name": "h", "value": b64(b"x")}, {"name": "n", "value": None}],
            }
        ),
        BINARY,
        max_records=10,
    )
    assert parsed.records == [
        OutgoingRecord(key=b"\x00\xff", value=b"payload", headers=(("h", b"x"), ("n", None)))
    ]


@pytest.mark.parametrize(
    ("record", "fmt", "code"),
    [
        ({"key": "not base64!", "value": b64(b"v")}, BINARY, 42201),
        ({"key": 5, "value": b64(b"v")}, BINARY, 42201),
        ({"value": "@@@"}, BINARY, 42202),
        ({"value": {"a": 1}}, BINARY, 42202),
        ({"value": "YQ"}, BINARY, 42202),  # missing padding
        ({"value": 1, "partition": -1}, JSON, 42200),
        ({"value": 1, "partition": "0"}, JSON, 42200),
        ({"value": 1, "partition": True}, JSON, 42200),
        ({"value": 1, "partition": 2**31}, JSON, 42200),
        ({"value": 1, "timestamp": -5}, JSON, 42200),
        ({"value": 1, "timestamp": 1.5}, JSON, 42200),
        ({"value": 1, "headers": {"a": "b"}}, JSON, 42200),
        ({"value": 1, "headers": [{"value": "eA=="}]}, JSON, 42200),
        ({"value": 1, "headers": [{"name": "h", "value": "%%"}]}, JSON, 42200),
        ({"value": 1, "headers": [{"name": "\ud800", "value": None}]}, JSON, 42200),
        ("just a string", JSON, 42200),
    ],
)
def test_bad_records_name_the_fault(record: object, fmt: EmbeddedFormat, code: int) -> None:
    with pytest.raises(RestError) as excinfo:
        parse_produce(body(record), fmt, max_records=10)
    assert code_of(excinfo) == code
    assert "records[0]" in excinfo.value.message or code == 42200


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{", 40001),
        (b"", 40001),
        (b"\xff\xfe\x00", 40001),
        (b'{"records": [{"value": NaN}]}', 40001),
        (b"[" * 100_000 + b"]" * 100_000, 40001),
        (b"[]", 42200),
        (b'{"records": {}}', 42200),
        (b'{"records": []}', 42200),
        (b'{"value": 1}', 42200),
        (b'{"records": [{"value": 1e400}]}', 42202),
        (b'{"records": [{"key": -1e400, "value": 1}]}', 42201),
    ],
)
def test_bad_bodies(raw: bytes, code: int) -> None:
    with pytest.raises(RestError) as excinfo:
        parse_produce(raw, JSON, max_records=10)
    assert code_of(excinfo) == code


def test_too_many_records_is_413() -> None:
    with pytest.raises(RestError) as excinfo:
        parse_produce(body(*[{"value": i} for i in range(11)]), JSON, max_records=10)
    assert code_of(excinfo) == 41302
    assert excinfo.value.http_status == 413


def test_lone_surrogates_stay_valid_json() -> None:
    stored = dump_json("\ud800x")
    assert json.loads(stored) == "\ud800x"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(json_values, json_values)
def test_json_round_trip(key: object, value: object) -> None:
    parsed = parse_produce(body({"key": key, "value": value}), JSON, max_records=1)
    record = parsed.records[0]
    fetched = FetchedRecord(7, 1, TimestampType.CREATE_TIME, record.key, record.value, ())
    (rendered,) = render_records("t", 0, [fetched], JSON)
    assert rendered["key"] == key
    assert rendered["value"] == value


@given(st.binary() | st.none(), st.binary() | st.none())
def test_binary_round_trip(key: bytes | None, value: bytes | None) -> None:
    raw = body(
        {"key": None if key is None else b64(key), "value": None if value is None else b64(value)}
    )
    record = parse_produce(raw, BINARY, max_records=1).records[0]
    assert (record.key, record.value) == (key, value)
    fetched = FetchedRecord(3, 1, TimestampType.LOG_APPEND_TIME, key, value, (("h", b"\x01"),))
    (rendered,) = render_records("t", 4, [fetched], BINARY)
    assert rendered == {
        "topic": "t",
        "partition": 4,
        "offset": 3,
        "timestamp": 1,
        "timestamp_type": "LOG_APPEND_TIME",
        "key": None if key is None else b64(key),
        "value": None if value is None else b64(value),
        "headers": [{"name": "h", "value": "AQ=="}],
    }


def test_rendering_non_json_as_json_is_406() -> None:
    fetched = FetchedRecord(9, 1, TimestampType.CREATE_TIME, None, b"\x00raw", ())
    with pytest.raises(RestError) as excinfo:
        render_records("t", 0, [fetched], JSON)
    assert code_of(excinfo) == 40601
    assert "offset 9" in excinfo.value.message


@pytest.mark.parametrize(
    "value",
    [
        b'"\\ud800"',  # escaped, as a JSON produce stores one
        b'{"k":["\\uDC00",1.5]}',  # inside a structure that json (not orjson) reads
        b'"\xed\xa0\x80"',  # raw surrogate bytes a Kafka client may write
    ],
)
def test_lone_surrogate_read_as_json_is_406(value: bytes) -> None:
    fetched = FetchedRecord(5, 1, TimestampType.CREATE_TIME, None, value, ())
    with pytest.raises(RestError) as excinfo:
        render_records("t", 0, [fetched], JSON)
    assert code_of(excinfo) == 40601
    assert "value of the record at offset 5" in excinfo.value.message


@pytest.mark.parametrize("value", [b"NaN", b"[1, Infinity]", b'{"x": -Infinity}'])
def test_nan_and_infinity_read_as_json_are_406(value: bytes) -> None:
    """json reads them, JSON has them not: refused, naming the record, as any non-JSON value."""
    fetched = FetchedRecord(7, 1, TimestampType.CREATE_TIME, None, value, ())
    with pytest.raises(RestError) as excinfo:
        render_records("t", 0, [fetched], JSON)
    assert code_of(excinfo) == 40601
    assert "value of the record at offset 7" in excinfo.value.message


def test_surrogate_pairs_read_as_json() -> None:
    fetched = FetchedRecord(5, 1, TimestampType.CREATE_TIME, b'"\\ud83d\\ude00"', b"1.5", ())
    (rendered,) = render_records("t", 0, [fetched], JSON)
    assert (rendered["key"], rendered["value"]) == ("\U0001f600", 1.5)


# -- partition choice and batches --------------------------------------------------------------


def produce_body(*records: tuple[bytes | None, int | None]) -> ProduceBody:
    return ProduceBody(
        [OutgoingRecord(value=b"v", key=k) for k, _ in records], [p for _, p in records]
    )


def test_partition_choice() -> None:
    from pafka.client.partitioner import partition_for_key

    turns = Turns(1)
    chosen = choose_partitions(
        produce_body((b"user-1", None), (None, 2), (None, None), (None, None), (b"x", 0)),
        None,
        3,
        turns,
    )
    # The keyless records, one batch, go to the next partition in turn; keyed and named
    # records take no turn.
    assert chosen == [partition_for_key(b"user-1", 3), 2, 1, 1, 0]
    assert turns.next == 2


def test_posted_partition_wins_unless_a_record_disagrees() -> None:
    turns = Turns()
    assert choose_partitions(produce_body((b"k", None), (None, 1)), 1, 3, turns) == [1, 1]
    with pytest.raises(RestError) as excinfo:
        choose_partitions(produce_body((None, 0)), 1, 3, turns)
    assert turns.next == 0
    assert code_of(excinfo) == 42200


def test_batches_stay_near_the_target_size() -> None:
    records = [OutgoingRecord(value=b"x" * (BATCH_TARGET_BYTES // 3)) for _ in range(7)]
    runs = batches(list(range(7)), records)
    assert [i for run in runs for i in run] == list(range(7))
    assert all(len(run) <= 2 for run in runs)
    big = [OutgoingRecord(value=b"x" * (BATCH_TARGET_BYTES * 2))]
    assert batches([0], big) == [[0]]


@given(
    st.lists(st.tuples(st.integers(0, 2), st.none() | st.integers(0, 2**63 - 1)), min_size=1)
    | st.builds(
        lambda p, base, n: [(p, base + i) for i in range(n)],
        st.integers(0, 2**31 - 1),
        st.integers(0, 2**40),
        st.integers(1, 300),
    )
)
def test_a_200_answer_is_what_json_response_writes(outcomes: list[tuple[int, int | None]]) -> None:
    results = [Result(p, offset) for p, offset in outcomes]
    expected = {
        "key_schema_id": None,
        "value_schema_id": None,
        "offsets": [r.render() for r in results],
    }
    assert answer(results).body == json.dumps(expected, separators=(",", ":")).encode()


def test_answer_is_200_only_when_everything_was_written() -> None:
    from pafka.errors import MessageTooLargeError, NotEnoughReplicasError

    ok = answer([Result(0, 5), Result(1, 9)])
    assert ok.status_code == 200
    assert json.loads(ok.body)["offsets"][1] == {
        "partition": 1,
        "offset": 9,
        "error_code": None,
        "error": None,
    }
    retriable = answer([Result(0, 5), Result(1, error=NotEnoughReplicasError(), retriable=True)])
    assert retriable.status_code == 503
    assert retriable.headers["retry-after"]
    payload = json.loads(retriable.body)
    assert payload["error_code"] == 50003
    assert payload["offsets"][1]["error_code"] == 2
    worst = answer(
        [
            Result(0, error=NotEnoughReplicasError(), retriable=True),
            Result(1, error=MessageTooLargeError("too big")),
        ]
    )
    assert worst.status_code == 413
    assert json.loads(worst.body)["offsets"][1]["error_code"] == 1


def test_previous_results_keep_only_written_records() -> None:
    response = {
        "offsets": [
            {"partition": 0, "offset": 4, "error_code": None, "error": None},
            {"partition": 1, "offset": None, "error_code": 2, "error": "later"},
        ]
    }
    assert previous_results(response, 2) == [Result(0, 4), None]
    assert previous_results(None, 2) == [None, None]


# -- idempotency decisions ---------------------------------------------------------------------


@pytest.mark.parametrize("key", ["", "a/b", ".", "..", "x" * 129, "sp ace", "é"])
def test_bad_idempotency_keys(key: str) -> None:
    with pytest.raises(RestError) as excinfo:
        check_key(key)
    assert code_of(excinfo) == 40002


def test_good_idempotency_keys() -> None:
    assert (
        check_key("0b6f8a2e-3c1d-4f7a-9e2b-5d8c7a6b4f3e") == "0b6f8a2e-3c1d-4f7a-9e2b-5d8c7a6b4f3e"
    )
    assert check_key("order:42.v1_x") == "order:42.v1_x"


def test_outcome_codec_round_trip() -> None:
    outcome = Outcome(PARTIAL, "abc", 1, 2, {"offsets": []})
    assert Outcome.decode(outcome.encode()) == outcome
    with pytest.raises(ValueError):
        Outcome.decode(b'{"version": 9, "state": "done"}')


def test_fingerprint_separates_parts() -> None:
    assert fingerprint("ab", b"c") != fingerprint("a", b"bc")
    assert fingerprint("a", b"b") == fingerprint("a", b"b")


def test_idempotency_decisions() -> None:
    now, stale = 10**12, 70_000
    done = Outcome(DONE, "r", now - 1000, now - 1000, {"offsets": [1]})
    assert decide(done, "r", now, stale) == {"offsets": [1]}
    assert decide(None, "r", now, stale) == RECREATE
    expired = Outcome(DONE, "r", now - RETENTION_MS - 1, now, {"offsets": []})
    assert decide(expired, "other", now, stale) == RECREATE
    assert decide(Outcome(PARTIAL, "r", now, now, {}), "r", now, stale) == TAKE_OVER
    abandoned = Outcome(PENDING, "r", now - stale - 1, now - stale - 1)
    assert decide(abandoned, "r", now, stale) == TAKE_OVER
    with pytest.raises(RestError) as excinfo:
        decide(Outcome(PENDING, "r", now, now), "r", now, stale)
    assert code_of(excinfo) == 40905
    with pytest.raises(RestError) as excinfo:
        decide(done, "other request", now, stale)
    assert code_of(excinfo) == 40904
