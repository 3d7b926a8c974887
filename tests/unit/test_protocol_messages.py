"""The codec adapter: golden bytes, round trips, arbitrary bytes, version handling."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.metadata import MetadataRequest

from pafka.errors import InvalidRequestError, ProtocolError, UnsupportedVersionError
from pafka.protocol.messages import (
    RequestHeader,
    UnsupportedRequestError,
    decode_request,
    encode_response,
    request_class,
    response_class,
)
from pafka.protocol.versions import SUPPORTED, ApiKey, api_versions_response


def test_golden_api_versions_v0_request() -> None:
    # api_key=18, api_version=0, correlation_id=7, client_id="ab" (int16 length + bytes), no body
    frame = b"\x00\x12\x00\x00\x00\x00\x00\x07\x00\x02ab"
    request = decode_request(frame)
    assert request.header == RequestHeader(18, 0, 7, "ab")


def test_golden_metadata_v0_response() -> None:
    # size | correlation_id | brokers[1]{node_id=1, host="h", port=9092} | topics[0]
    body = response_class(ApiKey.METADATA, 0)(
        brokers=[
            response_class(ApiKey.METADATA, 0).MetadataResponseBroker(
                node_id=1, host="h", port=9092
            )
        ],
        topics=[],
    )
    expected_payload = (
        b"\x00\x00\x00\x05"  # correlation id
        + b"\x00\x00\x00\x01"  # one broker
        + b"\x00\x00\x00\x01"  # node id
        + b"\x00\x01h"  # host
        + b"\x00\x00\x23\x84"  # port 9092
        + b"\x00\x00\x00\x00"  # no topics
    )
    encoded = encode_response(RequestHeader(3, 0, 5), body)
    assert encoded == struct.pack(">i", len(expected_payload)) + expected_payload


def test_api_versions_response_header_is_never_flexible() -> None:
    body = api_versions_response(3, SUPPORTED)
    encoded = encode_response(RequestHeader(18, 3, 9), body)
    # size(4) correlation id(4) then error code directly: no tagged-field byte in the header
    assert encoded[4:8] == b"\x00\x00\x00\x09"
    assert encoded[8:10] == b"\x00\x00"


def _metadata_request(version: int) -> bytes:
    cls = MetadataRequest[version]
    kwargs = {"topics": [cls.MetadataRequestTopic(name="t")]}
    req = cls(**kwargs)
    req.with_header(correlation_id=11, client_id="c")
    return bytes(req.encode(header=True))


@pytest.mark.parametrize(
    "version", range(SUPPORTED[ApiKey.METADATA][0], SUPPORTED[ApiKey.METADATA][1] + 1)
)
def test_metadata_requests_round_trip_at_every_supported_version(version: int) -> None:
    request = decode_request(_metadata_request(version))
    assert request.header.api_version == version
    assert request.header.correlation_id == 11
    assert request.header.client_id == "c"
    assert [t.name for t in request.body.topics] == ["t"]


@pytest.mark.parametrize("key", list(SUPPORTED))
def test_every_supported_version_has_request_and_response_schemas(key: ApiKey) -> None:
    low, high = SUPPORTED[key]
    assert high <= request_class(key).max_version
    for version in range(low, high + 1):
        assert response_class(key, version) is not None


def test_unsupported_version_carries_the_header() -> None:
    frame = b"\x00\x12\x00\x63\x00\x00\x00\x07\x00\x00"
    with pytest.raises(UnsupportedRequestError) as info:
        decode_request(frame)
    assert info.value.header.correlation_id == 7
    assert info.value.header.api_key == ApiKey.API_VERSIONS


def test_unknown_api_key_is_unsupported() -> None:
    with pytest.raises(UnsupportedVersionError):
        decode_request(b"\x03\xe7\x00\x00\x00\x00\x00\x01\x00\x00")


def test_not_served_api_is_unsupported() -> None:
    frame = _metadata_request(1)
    with pytest.raises(UnsupportedVersionError):
        decode_request(frame, served=frozenset({ApiKey.API_VERSIONS}))


@settings(max_examples=400)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_decode_or_raise_a_protocol_error(data: bytes) -> None:
    with contextlib.suppress(ProtocolError, InvalidRequestError, UnsupportedVersionError):
        decode_request(data)


@settings(max_examples=300)
@given(key=st.sampled_from(list(SUPPORTED)), tail=st.binary(max_size=120), data=st.data())
def test_valid_headers_with_garbage_bodies_never_escape(
    key: ApiKey, tail: bytes, data: st.DataObject
) -> None:
    low, high = SUPPORTED[key]
    version = data.draw(st.integers(min_value=low, max_value=high))
    frame = struct.pack(">hhi", int(key), version, 1) + tail
    with contextlib.suppress(ProtocolError, UnsupportedVersionError):
        decode_request(frame)
