"""Old request and response versions (below Kafka 4's specs) through the generated classes.

The oracle is kafka-python's hand-written classes of those versions (``kafka/protocol/old``):
what one encodes the adapter must decode to the same values under the same attribute names, and
encode back to the same bytes; and the other way round.
"""

from __future__ import annotations

import struct
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.admin import DescribeLogDirsRequest, DescribeLogDirsResponse
from kafka.protocol.old import admin as old_admin
from kafka.protocol.old import commit as old_commit
from kafka.protocol.old import list_offsets as old_list_offsets
from kafka.protocol.old import offset_for_leader_epoch as old_epoch
from kafka.protocol.old.types import (
    Array,
    Boolean,
    Int8,
    Int16,
    Int32,
    Int64,
    Schema,
    String,
)

from pafka.protocol.messages import (
    BELOW_SPEC_VERSIONS,
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_class,
    response_class,
)
from pafka.protocol.versions import SUPPORTED, ApiKey

# The hand-written (request, response) classes of every version in BELOW_SPEC_VERSIONS but
# DescribeLogDirs v0, whose hand-written request is wrong (partitions an int32, not an array)
# and is checked by golden bytes below.
REFERENCES: list[tuple[Any, Any]] = [
    (old_list_offsets.ListOffsetsRequest_v0, old_list_offsets.ListOffsetsResponse_v0),
    (old_commit.OffsetCommitRequest_v0, old_commit.OffsetCommitResponse_v0),
    (old_commit.OffsetCommitRequest_v1, old_commit.OffsetCommitResponse_v1),
    (old_commit.OffsetFetchRequest_v0, old_commit.OffsetFetchResponse_v0),
    (old_admin.CreateTopicsRequest_v0, old_admin.CreateTopicsResponse_v0),
    (old_admin.CreateTopicsRequest_v1, old_admin.CreateTopicsResponse_v1),
    (old_admin.DeleteTopicsRequest_v0, old_admin.DeleteTopicsResponse_v0),
    (old_admin.DescribeConfigsRequest_v0, old_admin.DescribeConfigsResponse_v0),
    (old_epoch.OffsetForLeaderEpochRequest_v0, old_epoch.OffsetForLeaderEpochResponse_v0),
    (old_epoch.OffsetForLeaderEpochRequest_v1, old_epoch.OffsetForLeaderEpochResponse_v1),
    (old_admin.DescribeAclsRequest_v0, old_admin.DescribeAclsResponse_v0),
    (old_admin.CreateAclsRequest_v0, old_admin.CreateAclsResponse_v0),
    (old_admin.DeleteAclsRequest_v0, old_admin.DeleteAclsResponse_v0),
]
DESCRIBE_LOG_DIRS = 35
WRITE_TXN_MARKERS = 27
CORRELATION_ID = 1234567
CLIENT_ID = "old-client"

_INTS = {
    Int8: st.integers(-(2**7), 2**7 - 1),
    Int16: st.integers(-(2**15), 2**15 - 1),
    Int32: st.integers(-(2**31), 2**31 - 1),
    Int64: st.integers(-(2**63), 2**63 - 1),
}


def _values(kind: Any) -> st.SearchStrategy[Any]:
    """Values for one type of an old-style schema (strings and arrays never null)."""
    if isinstance(kind, Schema):
        return st.tuples(*(_values(field) for field in kind.fields))
    if isinstance(kind, Array):
        return st.lists(_values(kind.array_of), max_size=3)
    if isinstance(kind, String):
        return st.text(max_size=8)
    if kind is Boolean:
        return st.booleans()
    return _INTS[kind]


def _assert_same_fields(schema: Schema, expected: tuple[Any, ...], decoded: Any) -> None:
    """Every field of the old schema is an attribute of the decoded object, of equal value."""
    for name, kind, value in zip(schema.names, schema.fields, expected, strict=True):
        got = getattr(decoded, name)
        if isinstance(kind, Array) and isinstance(kind.array_of, Schema):
            assert len(got) == len(value), name
            for item, item_value in zip(got, value, strict=True):
                _assert_same_fields(kind.array_of, item_value, item)
        else:
            assert got == value, name


def _id(pair: tuple[Any, Any]) -> str:
    return pair[0].__name__.replace("Request", "")


def test_every_version_below_the_specs_has_a_reference() -> None:
    referenced = {(req.API_KEY, req.API_VERSION) for req, _ in REFERENCES}
    referenced.add((DESCRIBE_LOG_DIRS, 0))
    referenced.add((WRITE_TXN_MARKERS, 0))
    listed = {(key, v) for key, versions in BELOW_SPEC_VERSIONS.items() for v in versions}
    assert listed == referenced


@pytest.mark.parametrize("key", list(SUPPORTED))
def test_served_versions_below_the_specs_are_all_checked(key: ApiKey) -> None:
    if key in (ApiKey.PRODUCE, ApiKey.FETCH):
        return  # decoded by hand (produce_codec, fetch_codec), checked there
    spec_low = request_class(key)._valid_versions[0]
    low, _ = SUPPORTED[key]
    below = range(low, spec_low)
    assert all(v in BELOW_SPEC_VERSIONS.get(int(key), range(0)) for v in below)


@pytest.mark.parametrize("pair", REFERENCES, ids=_id)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_old_requests_decode_to_the_same_fields_and_bytes(
    pair: tuple[Any, Any], data: st.DataObject
) -> None:
    old_cls, _ = pair
    key, version = ApiKey(old_cls.API_KEY), old_cls.API_VERSION
    values = data.draw(_values(old_cls.SCHEMA))
    old = old_cls(*values)
    old.with_header(correlation_id=CORRELATION_ID, client_id=CLIENT_ID)
    frame = bytes(old.encode(header=True))
    # Whether a version is served is the versions table's business, not the codec's.
    with mock.patch.dict(SUPPORTED, {key: (0, SUPPORTED[key][1])}):
        request = decode_request(frame)
    assert request.header == RequestHeader(int(key), version, CORRELATION_ID, CLIENT_ID)
    _assert_same_fields(old_cls.SCHEMA, values, request.body)
    again = encode_request(key, version, request.body, CORRELATION_ID, CLIENT_ID)
    assert again == struct.pack(">i", len(frame)) + frame


@pytest.mark.parametrize("pair", REFERENCES, ids=_id)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_old_responses_encode_as_the_handwritten_classes(
    pair: tuple[Any, Any], data: st.DataObject
) -> None:
    _, old_cls = pair
    key, version = ApiKey(old_cls.API_KEY), old_cls.API_VERSION
    values = data.draw(_values(old_cls.SCHEMA))
    old = old_cls(*values)
    old.with_header(correlation_id=CORRELATION_ID)
    frame = bytes(old.encode(header=True, framed=True))
    body = decode_response(key, version, frame[4:])
    _assert_same_fields(old_cls.SCHEMA, values, body)
    body._header = None  # built afresh below, as a handler's response would be
    assert encode_response(RequestHeader(int(key), version, CORRELATION_ID), body) == frame


def test_golden_list_offsets_v0_response_built_as_a_handler_does() -> None:
    cls = response_class(ApiKey.LIST_OFFSETS, 0)
    topic = cls.ListOffsetsTopicResponse
    part = topic.ListOffsetsPartitionResponse
    body = cls(
        topics=[
            topic(
                name="t",
                partitions=[part(partition_index=2, error_code=0, old_style_offsets=[42, 0])],
            )
        ]
    )
    payload = (
        b"\x00\x00\x00\x05"  # correlation id
        + b"\x00\x00\x00\x01"  # one topic
        + b"\x00\x01t"  # name
        + b"\x00\x00\x00\x01"  # one partition
        + b"\x00\x00\x00\x02"  # partition index
        + b"\x00\x00"  # error code
        + b"\x00\x00\x00\x02"  # two offsets, newest first
        + struct.pack(">qq", 42, 0)
    )
    framed = struct.pack(">i", len(payload)) + payload
    assert encode_response(RequestHeader(2, 0, 5), body) == framed


def _describe_log_dirs_frame(payload: bytes) -> bytes:
    client = CLIENT_ID.encode()
    header = struct.pack(">hhih", DESCRIBE_LOG_DIRS, 0, CORRELATION_ID, len(client)) + client
    return header + payload


def test_golden_describe_log_dirs_v0_request() -> None:
    frame = _describe_log_dirs_frame(
        b"\x00\x00\x00\x01"  # one topic
        + b"\x00\x01t"  # name
        + b"\x00\x00\x00\x02"  # two partitions
        + struct.pack(">ii", 0, 3)
    )
    body = DescribeLogDirsRequest.decode(frame, version=0, header=True)
    assert [(t.topic, list(t.partitions)) for t in body.topics] == [("t", [0, 3])]
    assert bytes(body.encode(header=True)) == frame


def test_golden_describe_log_dirs_v0_request_for_every_partition() -> None:
    # A null topics array asks for every partition of every log dir.
    frame = _describe_log_dirs_frame(b"\xff\xff\xff\xff")
    body = DescribeLogDirsRequest.decode(frame, version=0, header=True)
    assert body.topics is None
    assert bytes(body.encode(header=True)) == frame


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_describe_log_dirs_v0_response_encodes_as_the_handwritten_class(
    data: st.DataObject,
) -> None:
    old_cls = old_admin.DescribeLogDirsResponse_v0
    values = data.draw(_values(old_cls.SCHEMA))
    old = old_cls(*values)
    old.with_header(correlation_id=CORRELATION_ID)
    frame = bytes(old.encode(header=True, framed=True))
    body = DescribeLogDirsResponse.decode(frame[4:], version=0, header=True)
    _assert_same_fields(old_cls.SCHEMA, values, body)
    body._header = None
    body.API_VERSION = 0
    body.with_header(correlation_id=CORRELATION_ID)
    assert bytes(body.encode(header=True, framed=True)) == frame


# WriteTxnMarkers v0 (Kafka 2.8: v0 classic, v1 flexible; Kafka 4 dropped v0, and kafka-python
# has no hand-written class of it): golden bytes laid out from Kafka 2.8's message spec.
WRITE_TXN_MARKERS_V0_REQUEST = (
    b"\x00\x00\x00\x01"  # one marker
    + struct.pack(">qh?", 42, 3, True)  # producer id, producer epoch, COMMIT
    + b"\x00\x00\x00\x01"  # one topic
    + b"\x00\x01t"
    + b"\x00\x00\x00\x02"  # two partitions
    + struct.pack(">ii", 0, 3)
    + struct.pack(">i", 7)  # coordinator epoch
)
WRITE_TXN_MARKERS_V0_RESPONSE = (
    b"\x00\x00\x00\x01"  # one marker result
    + struct.pack(">q", 42)
    + b"\x00\x00\x00\x01"  # one topic
    + b"\x00\x01t"
    + b"\x00\x00\x00\x01"  # one partition
    + struct.pack(">ih", 3, 47)  # partition 3: INVALID_PRODUCER_EPOCH
)


def test_golden_write_txn_markers_v0_request() -> None:
    client = CLIENT_ID.encode()
    header = struct.pack(">hhih", WRITE_TXN_MARKERS, 0, CORRELATION_ID, len(client)) + client
    frame = header + WRITE_TXN_MARKERS_V0_REQUEST
    request = decode_request(frame)
    assert request.header == RequestHeader(WRITE_TXN_MARKERS, 0, CORRELATION_ID, CLIENT_ID)
    (marker,) = request.body.markers
    assert (marker.producer_id, marker.producer_epoch, marker.transaction_result) == (42, 3, True)
    assert [(t.name, list(t.partition_indexes)) for t in marker.topics] == [("t", [0, 3])]
    assert marker.coordinator_epoch == 7
    again = encode_request(ApiKey.WRITE_TXN_MARKERS, 0, request.body, CORRELATION_ID, CLIENT_ID)
    assert again == struct.pack(">i", len(frame)) + frame


def test_golden_write_txn_markers_v0_response_built_as_the_handler_does() -> None:
    cls = response_class(WRITE_TXN_MARKERS, 0)
    body = cls(
        markers=[
            cls.WritableTxnMarkerResult(
                producer_id=42,
                topics=[
                    cls.WritableTxnMarkerResult.WritableTxnMarkerTopicResult(
                        name="t",
                        partitions=[
                            cls.WritableTxnMarkerResult.WritableTxnMarkerTopicResult.WritableTxnMarkerPartitionResult(
                                partition_index=3, error_code=47
                            )
                        ],
                    )
                ],
            )
        ]
    )
    frame = encode_response(RequestHeader(WRITE_TXN_MARKERS, 0, CORRELATION_ID), body)
    assert (
        bytes(frame)
        == struct.pack(">ii", 4 + len(WRITE_TXN_MARKERS_V0_RESPONSE), CORRELATION_ID)
        + WRITE_TXN_MARKERS_V0_RESPONSE
    )
