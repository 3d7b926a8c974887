"""Confluent v3 produce requests to records and outcomes to delivery reports (pure)."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.client.producer import OutgoingRecord
from pafka.errors import RestError, UnknownTopicOrPartitionError
from services.gateway.v3_records import error_report, instant, parse_request, report


def test_a_full_request_becomes_its_record() -> None:
    parsed = parse_request(
        {
            "partition_id": 3,
            "headers": [{"name": "h", "value": "AAE="}, {"name": "n", "value": None}],
            "key": {"type": "BINARY", "data": "a2V5"},
            "value": {"type": "JSON", "data": {"b": [1, 2.5, None]}},
            "timestamp": "2024-05-01T14:00:00.5+02:00",
        }
    )
    assert parsed.record == OutgoingRecord(
        b'{"b":[1,2.5,null]}', b"key", (("h", b"\x00\x01"), ("n", None)), 1714564800500
    )
    assert (parsed.partition, parsed.key, parsed.value) == (3, ("BINARY", 3), ("JSON", 18))


def test_an_empty_request_is_a_record_with_no_key_and_no_value() -> None:
    parsed = parse_request({})
    assert parsed.record == OutgoingRecord(None, None, (), None)
    assert (parsed.partition, parsed.key, parsed.value) == (None, None, None)


@given(st.text())
def test_a_string_is_stored_as_utf8(text: str) -> None:
    parsed = parse_request({"value": {"type": "STRING", "data": text}})
    assert parsed.record.value == text.encode()
    assert parsed.value == ("STRING", len(text.encode()))


@given(st.binary())
def test_binary_round_trips_through_base64(data: bytes) -> None:
    encoded = base64.b64encode(data).decode()
    assert parse_request({"key": {"type": "BINARY", "data": encoded}}).record.key == data


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        ([], 42200),
        ({"partition_id": -1}, 42200),
        ({"partition_id": True}, 42200),
        ({"partition_id": 2**31}, 42200),
        ({"key": "plain"}, 42201),
        ({"key": {"type": "BINARY", "data": "!!"}}, 42201),
        ({"key": {"type": "STRING", "data": 1}}, 42201),
        ({"value": {"type": "AVRO", "data": {}}}, 42202),
        ({"value": {"type": "JSON", "schema_id": 1, "data": {}}}, 42202),
        ({"value": {"type": "XML", "data": "<a/>"}}, 42202),
        ({"value": {"data": "untyped"}}, 42202),
        ({"value": {"type": "JSON", "data": float("inf")}}, 42202),
        ({"headers": {"name": "h"}}, 42200),
        ({"headers": [{"name": 1}]}, 42200),
        ({"headers": [{"name": "h", "value": "%%"}]}, 42200),
        ({"timestamp": 1714564800000}, 42200),
        ({"timestamp": "May 1st"}, 42200),
        ({"timestamp": "1969-12-31T23:59:59Z"}, 42200),
    ],
)
def test_bad_requests_are_refused_with_the_field_at_fault(request_: Any, code: int) -> None:
    with pytest.raises(RestError) as refused:
        parse_request(request_)
    assert refused.value.rest_code == code


def test_a_type_with_null_data_is_a_null_of_that_type() -> None:
    parsed = parse_request({"value": {"type": "JSON", "data": None}})
    assert parsed.record.value is None and parsed.value == ("JSON", 0)


def test_reports_carry_what_was_written_and_errors_their_code() -> None:
    parsed = parse_request({"value": {"type": "STRING", "data": "hi"}})
    assert orjson.loads(report("c1", "t", parsed, 2, 41, 1714564800123)) == {
        "error_code": 200,
        "cluster_id": "c1",
        "topic_name": "t",
        "partition_id": 2,
        "offset": 41,
        "timestamp": "2024-05-01T12:00:00.123Z",
        "value": {"type": "STRING", "size": 2},
    }
    assert orjson.loads(error_report(UnknownTopicOrPartitionError("gone"))) == {
        "error_code": 40401,
        "message": "gone",
    }


@given(st.integers(0, 253402300799999))
def test_instants_read_back_as_the_same_millisecond(timestamp_ms: int) -> None:
    stamped = parse_request({"timestamp": instant(timestamp_ms)}).record.timestamp_ms
    assert stamped == timestamp_ms
