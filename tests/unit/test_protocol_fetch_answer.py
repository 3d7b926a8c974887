"""Fetch v11 answers read by hand agree with the generic codec, and keep records in place."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.errors import ProtocolError
from pafka.protocol import fetch_answer
from pafka.protocol.fetch_codec import FetchableTopicResponse, FetchResponseBody, PartitionData
from pafka.protocol.messages import decode_response
from pafka.protocol.versions import ApiKey

int64 = st.integers(-(2**63), 2**63 - 1)
partition = st.builds(
    PartitionData,
    partition_index=st.integers(0, 5),
    error_code=st.integers(-1, 100),
    high_watermark=int64,
    last_stable_offset=int64,
    log_start_offset=int64,
    records=st.binary(max_size=64),
    preferred_read_replica=st.integers(-1, 3),
    aborted_transactions=st.none() | st.lists(st.tuples(int64, int64), max_size=3).map(tuple),
)
topics = st.lists(
    st.builds(
        FetchableTopicResponse,
        topic=st.sampled_from(["a", "b", "ü"]),
        partitions=st.lists(partition, max_size=3),
    ),
    max_size=3,
)


def frame_of(body: FetchResponseBody) -> memoryview:
    return memoryview(bytes(body.encode_frame(fetch_answer.VERSION, 77)))[4:]


@given(topics, st.integers(-1, 100))
def test_every_partition_reads_as_the_generic_codec_does(
    responses: list[FetchableTopicResponse], error: int
) -> None:
    frame = frame_of(FetchResponseBody(responses, error_code=error, session_id=5))
    generic = decode_response(ApiKey.FETCH, fetch_answer.VERSION, frame)
    assert fetch_answer.session_error(frame) == generic.error_code == error
    first_seen: dict[tuple[str, int], object] = {}
    for t in generic.responses:
        for p in t.partitions:
            first_seen.setdefault((t.topic, p.partition_index), p)
    for (topic, index), p in first_seen.items():
        found = fetch_answer.find_partition(frame, topic, index)
        assert found is not None
        assert (found.error_code, found.high_watermark, found.last_stable_offset) == (
            p.error_code,  # type: ignore[attr-defined]
            p.high_watermark,  # type: ignore[attr-defined]
            p.last_stable_offset,  # type: ignore[attr-defined]
        )
        assert found.log_start_offset == p.log_start_offset  # type: ignore[attr-defined]
        aborted = p.aborted_transactions or ()  # type: ignore[attr-defined]
        assert found.aborted == tuple((a.producer_id, a.first_offset) for a in aborted)
        assert bytes(found.records) == bytes(p.records or b"")  # type: ignore[attr-defined]
        assert found.records.obj is frame.obj  # a view, not a copy
    assert fetch_answer.find_partition(frame, "absent", 0) is None
    # Read all at once (a Fetch shared by several readers), each is the one found alone.
    every = fetch_answer.all_partitions(frame)
    assert set(every) == set(first_seen)
    for (topic, index), answer in every.items():
        alone = fetch_answer.find_partition(frame, topic, index)
        assert alone is not None
        assert answer[:5] == alone[:5] and bytes(answer.records) == bytes(alone.records)


def test_truncated_answers_are_protocol_errors() -> None:
    body = FetchResponseBody([FetchableTopicResponse("a", [PartitionData(0, records=b"x" * 30)])])
    frame = frame_of(body)
    for cut in range(1, len(frame)):
        with pytest.raises(ProtocolError):
            fetch_answer.find_partition(frame[:-cut], "a", 0)
        with pytest.raises(ProtocolError):
            fetch_answer.all_partitions(frame[:-cut])
