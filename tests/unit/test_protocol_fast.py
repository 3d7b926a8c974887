"""The hand-written hot-path codecs (Produce requests and responses, Fetch responses) against
the generic codec: the same bytes for random inputs, the same decoded fields, and bad bytes
refused with a protocol error only."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.errors import ProtocolError
from pafka.protocol.fetch_codec import (
    SEPARATE_RECORDS_BYTES,
    FetchableTopicResponse,
    FetchRequestBody,
    FetchResponseBody,
    PartitionData,
)
from pafka.protocol.messages import RequestHeader, decode_request, request_class, response_class
from pafka.protocol.produce_codec import (
    PartitionProduceResponse,
    ProduceRequestBody,
    ProduceResponseBody,
    TopicProduceResponse,
)
from pafka.protocol.versions import SUPPORTED, ApiKey

PRODUCE_VERSIONS = st.integers(*SUPPORTED[ApiKey.PRODUCE])
FETCH_VERSIONS = st.integers(*SUPPORTED[ApiKey.FETCH])
names = st.text(max_size=12)
int16s = st.integers(-(2**15), 2**15 - 1)
int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)
records = st.binary(max_size=200)


def _generic_encode(body: Any, version: int, correlation_id: int) -> bytes:
    body.API_VERSION = version
    body.with_header(correlation_id=correlation_id)
    return bytes(body.encode(header=True, framed=True))


# -- Produce requests -----------------------------------------------------------------------------

produce_topics = st.lists(
    st.tuples(names, st.lists(st.tuples(int32s, st.none() | records), max_size=4)),
    max_size=4,
)


def _produce_request_frame(
    version: int,
    client_id: str | None,
    transactional_id: str | None,
    acks: int,
    timeout_ms: int,
    topics: list[tuple[str, list[tuple[int, bytes | None]]]],
) -> bytes:
    cls = request_class(ApiKey.PRODUCE)[version]
    body = cls(
        transactional_id=transactional_id,
        acks=acks,
        timeout_ms=timeout_ms,
        topic_data=[
            cls.TopicProduceData(
                name=name,
                partition_data=[
                    cls.TopicProduceData.PartitionProduceData(index=i, records=r) for i, r in parts
                ],
            )
            for name, parts in topics
        ],
    )
    body.with_header(correlation_id=7, client_id=client_id)
    framed = bytes(body.encode(version=version, header=True, framed=True))
    return framed[4:]


def _plain(body: Any) -> tuple[Any, ...]:
    return (
        body.transactional_id,
        int(body.acks),
        int(body.timeout_ms),
        [
            (
                t.name,
                [
                    (p.index, None if p.records is None else bytes(p.records))
                    for p in t.partition_data
                ],
            )
            for t in body.topic_data
        ],
    )


@settings(max_examples=300)
@given(
    version=PRODUCE_VERSIONS,
    client_id=st.none() | names,
    transactional_id=st.none() | names,
    acks=int16s,
    timeout_ms=int32s,
    topics=produce_topics,
)
def test_produce_request_decodes_as_the_generic_codec_does(
    version: int,
    client_id: str | None,
    transactional_id: str | None,
    acks: int,
    timeout_ms: int,
    topics: list[tuple[str, list[tuple[int, bytes | None]]]],
) -> None:
    frame = _produce_request_frame(version, client_id, transactional_id, acks, timeout_ms, topics)
    fast = decode_request(frame)
    assert isinstance(fast.body, ProduceRequestBody)
    generic = request_class(ApiKey.PRODUCE).decode(frame, version=version, header=True)
    assert fast.header == RequestHeader(ApiKey.PRODUCE, version, 7, generic.header.client_id)
    assert fast.header.client_id == client_id
    assert _plain(fast.body) == _plain(generic)
    # The field arrived with v3 (transactions): older requests have none.
    sent_transactional_id = transactional_id if version >= 3 else None
    assert _plain(fast.body) == (sent_transactional_id, acks, timeout_ms, topics)


def test_produce_records_are_views_into_the_frame_not_copies() -> None:
    frame = _produce_request_frame(9, "c", None, 1, 1000, [("t", [(0, b"batch")])])
    body = decode_request(memoryview(frame)).body
    view = body.topic_data[0].partition_data[0].records
    assert isinstance(view, memoryview)
    assert view.obj is frame


@given(version=PRODUCE_VERSIONS, topics=produce_topics, data=st.data())
def test_truncated_or_extended_produce_requests_are_protocol_errors(
    version: int, topics: list[tuple[str, list[tuple[int, bytes | None]]]], data: st.DataObject
) -> None:
    frame = _produce_request_frame(version, "client", None, -1, 30_000, topics)
    cut = data.draw(st.integers(8, len(frame) - 1))
    with pytest.raises(ProtocolError):
        decode_request(frame[:cut])
    with pytest.raises(ProtocolError):
        decode_request(frame + data.draw(st.binary(min_size=1, max_size=8)))


@settings(max_examples=300)
@given(version=PRODUCE_VERSIONS, tail=st.binary(max_size=64))
def test_arbitrary_produce_bodies_decode_or_raise_protocol_errors(
    version: int, tail: bytes
) -> None:
    frame = b"\x00\x00" + version.to_bytes(2, "big") + b"\x00\x00\x00\x01" + tail
    with contextlib.suppress(ProtocolError):
        assert isinstance(decode_request(frame).body, ProduceRequestBody)


# -- Fetch requests -------------------------------------------------------------------------------

fetch_partition_fields = st.tuples(int32s, int32s, int64s, int32s, int64s, int32s)
fetch_topics = st.lists(st.tuples(names, st.lists(fetch_partition_fields, max_size=4)), max_size=4)
forgotten_topics = st.lists(st.tuples(names, st.lists(int32s, max_size=4)), max_size=3)


def _fetch_request_frame(version: int, client_id: str | None, values: dict[str, Any]) -> bytes:
    cls = request_class(ApiKey.FETCH)[version]
    topic_cls = cls.FetchTopic
    body = cls(
        replica_id=values["replica_id"],
        max_wait_ms=values["max_wait_ms"],
        min_bytes=values["min_bytes"],
        max_bytes=values["max_bytes"],
        isolation_level=values["isolation_level"],
        session_id=values["session_id"],
        session_epoch=values["session_epoch"],
        topics=[
            topic_cls(
                topic=name,
                partitions=[
                    topic_cls.FetchPartition(
                        partition=p[0],
                        current_leader_epoch=p[1],
                        fetch_offset=p[2],
                        last_fetched_epoch=p[3],
                        log_start_offset=p[4],
                        partition_max_bytes=p[5],
                    )
                    for p in parts
                ],
            )
            for name, parts in values["topics"]
        ],
        forgotten_topics_data=[
            cls.ForgottenTopic(topic=name, partitions=ids) for name, ids in values["forgotten"]
        ],
        rack_id=values["rack_id"],
    )
    body.with_header(correlation_id=11, client_id=client_id)
    return bytes(body.encode(version=version, header=True, framed=True))[4:]


def _plain_fetch(body: Any, version: int) -> tuple[Any, ...]:
    return (
        body.replica_id,
        body.max_wait_ms,
        body.min_bytes,
        body.max_bytes,
        body.isolation_level,
        body.session_id if version >= 7 else None,
        body.session_epoch if version >= 7 else None,
        [
            (
                t.topic,
                [
                    (
                        p.partition,
                        p.current_leader_epoch,
                        p.fetch_offset,
                        p.last_fetched_epoch,
                        p.log_start_offset,
                        p.partition_max_bytes,
                    )
                    for p in t.partitions
                ],
            )
            for t in body.topics
        ],
        [(f.topic, list(f.partitions)) for f in body.forgotten_topics_data or []],
        body.rack_id,
    )


@settings(max_examples=300)
@given(
    version=FETCH_VERSIONS,
    client_id=st.none() | names,
    values=st.fixed_dictionaries(
        {
            "replica_id": int32s,
            "max_wait_ms": int32s,
            "min_bytes": int32s,
            "max_bytes": int32s,
            "isolation_level": st.integers(-128, 127),
            "session_id": int32s,
            "session_epoch": int32s,
            "topics": fetch_topics,
            "forgotten": forgotten_topics,
            "rack_id": names,
        }
    ),
)
def test_fetch_request_decodes_as_the_generic_codec_does(
    version: int, client_id: str | None, values: dict[str, Any]
) -> None:
    frame = _fetch_request_frame(version, client_id, values)
    fast = decode_request(frame)
    assert isinstance(fast.body, FetchRequestBody)
    generic = request_class(ApiKey.FETCH).decode(frame, version=version, header=True)
    assert fast.header == RequestHeader(ApiKey.FETCH, version, 11, client_id)
    assert _plain_fetch(fast.body, version) == _plain_fetch(generic, version)
    assert fast.body.max_wait_ms == values["max_wait_ms"]


@given(version=FETCH_VERSIONS, topics=fetch_topics, data=st.data())
def test_truncated_or_extended_fetch_requests_are_protocol_errors(
    version: int, topics: list[Any], data: st.DataObject
) -> None:
    values = {
        "replica_id": -1,
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": topics,
        "forgotten": [],
        "rack_id": "",
    }
    frame = _fetch_request_frame(version, "client", values)
    cut = data.draw(st.integers(8, len(frame) - 1))
    with pytest.raises(ProtocolError):
        decode_request(frame[:cut])
    with pytest.raises(ProtocolError):
        decode_request(frame + data.draw(st.binary(min_size=1, max_size=8)))


# -- Produce responses ----------------------------------------------------------------------------

produce_partitions = st.builds(
    PartitionProduceResponse,
    index=int32s,
    error_code=int16s,
    base_offset=int64s,
    log_append_time_ms=int64s,
    log_start_offset=int64s,
    error_message=st.none() | names,
    record_errors=st.lists(st.tuples(int32s, st.none() | names), max_size=3).map(tuple),
)


@settings(max_examples=300)
@given(
    version=PRODUCE_VERSIONS,
    correlation_id=int32s,
    topics=st.lists(st.tuples(names, st.lists(produce_partitions, max_size=4)), max_size=4),
    throttle_time_ms=int32s,
)
def test_produce_response_bytes_equal_the_generic_codec(
    version: int,
    correlation_id: int,
    topics: list[tuple[str, list[PartitionProduceResponse]]],
    throttle_time_ms: int,
) -> None:
    fast = ProduceResponseBody(
        [TopicProduceResponse(name, parts) for name, parts in topics], throttle_time_ms
    )
    cls = response_class(ApiKey.PRODUCE, version)
    topic_cls = cls.TopicProduceResponse
    part_cls = topic_cls.PartitionProduceResponse
    generic = cls(
        responses=[
            topic_cls(
                name=name,
                partition_responses=[
                    part_cls(
                        index=p.index,
                        error_code=p.error_code,
                        base_offset=p.base_offset,
                        log_append_time_ms=p.log_append_time_ms,
                        log_start_offset=p.log_start_offset,
                        error_message=p.error_message,
                        record_errors=[
                            part_cls.BatchIndexAndErrorMessage(
                                batch_index=i, batch_index_error_message=reason
                            )
                            for i, reason in p.record_errors
                        ],
                    )
                    for p in parts
                ],
            )
            for name, parts in topics
        ],
        throttle_time_ms=throttle_time_ms,
    )
    expected = _generic_encode(generic, version, correlation_id)
    assert bytes(fast.encode_frame(version, correlation_id)) == expected


# -- Fetch responses ------------------------------------------------------------------------------

fetch_partitions = st.builds(
    PartitionData,
    partition_index=int32s,
    error_code=int16s,
    high_watermark=int64s,
    last_stable_offset=int64s,
    log_start_offset=int64s,
    records=records,
    preferred_read_replica=int32s,
    aborted_transactions=st.none() | st.lists(st.tuples(int64s, int64s), max_size=3).map(tuple),
)


@settings(max_examples=300)
@given(
    version=FETCH_VERSIONS,
    correlation_id=int32s,
    topics=st.lists(st.tuples(names, st.lists(fetch_partitions, max_size=4)), max_size=4),
    throttle_time_ms=int32s,
    error_code=int16s,
    session_id=int32s,
)
def test_fetch_response_bytes_equal_the_generic_codec(
    version: int,
    correlation_id: int,
    topics: list[tuple[str, list[PartitionData]]],
    throttle_time_ms: int,
    error_code: int,
    session_id: int,
) -> None:
    fast = FetchResponseBody(
        [FetchableTopicResponse(name, parts) for name, parts in topics],
        throttle_time_ms,
        error_code,
        session_id,
    )
    cls = response_class(ApiKey.FETCH, version)
    topic_cls = cls.FetchableTopicResponse
    part_cls = topic_cls.PartitionData
    generic = cls(
        throttle_time_ms=throttle_time_ms,
        error_code=error_code,
        session_id=session_id,
        responses=[
            topic_cls(
                topic=name,
                partitions=[
                    part_cls(
                        partition_index=p.partition_index,
                        error_code=p.error_code,
                        high_watermark=p.high_watermark,
                        last_stable_offset=p.last_stable_offset,
                        log_start_offset=p.log_start_offset,
                        aborted_transactions=None
                        if p.aborted_transactions is None
                        else [
                            part_cls.AbortedTransaction(producer_id=pid, first_offset=first)
                            for pid, first in p.aborted_transactions
                        ],
                        preferred_read_replica=p.preferred_read_replica,
                        records=bytes(p.records),
                    )
                    for p in parts
                ],
            )
            for name, parts in topics
        ],
    )
    expected = _generic_encode(generic, version, correlation_id)
    assert bytes(fast.encode_frame(version, correlation_id)) == expected


def test_golden_fetch_v4_response() -> None:
    body = FetchResponseBody(
        [FetchableTopicResponse("t", [PartitionData(0, 0, 5, 5, 0, b"xy")])], throttle_time_ms=0
    )
    expected_payload = (
        b"\x00\x00\x00\x09"  # correlation id
        + b"\x00\x00\x00\x00"  # throttle_time_ms
        + b"\x00\x00\x00\x01"  # one topic
        + b"\x00\x01t"
        + b"\x00\x00\x00\x01"  # one partition
        + b"\x00\x00\x00\x00"  # partition 0
        + b"\x00\x00"  # no error
        + b"\x00\x00\x00\x00\x00\x00\x00\x05"  # high watermark
        + b"\x00\x00\x00\x00\x00\x00\x00\x05"  # last stable offset
        + b"\xff\xff\xff\xff"  # aborted transactions: null
        + b"\x00\x00\x00\x02xy"  # records
    )
    encoded = body.encode_frame(4, 9)
    assert encoded == len(expected_payload).to_bytes(4, "big") + expected_payload


@pytest.mark.parametrize(
    "version", range(SUPPORTED[ApiKey.FETCH][0], SUPPORTED[ApiKey.FETCH][1] + 1)
)
def test_large_record_sets_are_separate_pieces_of_the_same_bytes(version: int) -> None:
    big = memoryview(bytes(range(256)) * 200)  # above SEPARATE_RECORDS_BYTES
    assert len(big) >= SEPARATE_RECORDS_BYTES
    parts = [PartitionData(0, 0, 9, 9, 0, big), PartitionData(1, 0, 3, 3, 0, b"small")]
    body = FetchResponseBody([FetchableTopicResponse("t", parts)])
    pieces = body.encode_parts(version, 5)
    assert any(piece is big for piece in pieces)
    cls = response_class(ApiKey.FETCH, version)
    topic_cls = cls.FetchableTopicResponse
    generic = cls(
        throttle_time_ms=0,
        error_code=0,
        session_id=0,
        responses=[
            topic_cls(
                topic="t",
                partitions=[
                    topic_cls.PartitionData(
                        partition_index=p.partition_index,
                        error_code=0,
                        high_watermark=p.high_watermark,
                        last_stable_offset=p.last_stable_offset,
                        log_start_offset=0,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        records=bytes(p.records),
                    )
                    for p in parts
                ],
            )
        ],
    )
    assert b"".join(pieces) == _generic_encode(generic, version, 5)
