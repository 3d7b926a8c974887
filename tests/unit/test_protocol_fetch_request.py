"""The hand-written one-partition Fetch is the generic codec's request, byte for byte."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pafka.protocol.fetch_codec import decode_fetch_request
from pafka.protocol.fetch_request import VERSION, encode_fetch
from pafka.protocol.messages import encode_request, request_class
from pafka.protocol.versions import ApiKey

int32 = st.integers(-(2**31), 2**31 - 1)
topics = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)


@given(
    topics,
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**63 - 1),
    int32,
    st.integers(1, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.sampled_from([0, 1]),
    st.integers(0, 2**31 - 1),
    st.text(max_size=20),
)
def test_a_fetch_written_by_hand_is_the_generic_codecs(
    topic: str,
    partition: int,
    offset: int,
    leader_epoch: int,
    max_bytes: int,
    wait_ms: int,
    isolation: int,
    correlation_id: int,
    client_id: str,
) -> None:
    cls = request_class(ApiKey.FETCH)[VERSION]
    generic = cls(
        replica_id=-1,
        max_wait_ms=wait_ms,
        min_bytes=1,
        max_bytes=max_bytes,
        isolation_level=isolation,
        session_id=0,
        session_epoch=-1,
        topics=[
            cls.FetchTopic(
                topic=topic,
                partitions=[
                    cls.FetchTopic.FetchPartition(
                        partition=partition,
                        current_leader_epoch=leader_epoch,
                        fetch_offset=offset,
                        log_start_offset=-1,
                        partition_max_bytes=max_bytes,
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    body = encode_fetch(
        topic,
        partition,
        offset,
        leader_epoch=leader_epoch,
        max_bytes=max_bytes,
        max_wait_ms=wait_ms,
        isolation_level=isolation,
    )
    framed = encode_request(ApiKey.FETCH, VERSION, body, correlation_id, client_id)
    assert framed == encode_request(ApiKey.FETCH, VERSION, generic, correlation_id, client_id)

    # And the broker's own decoder reads it back.
    found_client, decoded = decode_fetch_request(memoryview(framed)[4:], VERSION)
    assert found_client == client_id
    [fetched] = decoded.topics
    assert (fetched.topic, decoded.max_wait_ms, decoded.isolation_level) == (
        topic,
        wait_ms,
        isolation,
    )
    [wanted] = fetched.partitions
    assert (wanted.partition, wanted.fetch_offset, wanted.current_leader_epoch) == (
        partition,
        offset,
        leader_epoch,
    )
