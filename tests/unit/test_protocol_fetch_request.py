"""The hand-written Fetch, of one partition or several, is the generic codec's request, byte
for byte."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pafka.protocol.fetch_codec import decode_fetch_request
from pafka.protocol.fetch_request import VERSION, FetchPosition, encode_fetch, encode_fetch_many
from pafka.protocol.messages import encode_request, request_class
from pafka.protocol.versions import ApiKey

int32 = st.integers(-(2**31), 2**31 - 1)
topics = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)


def generic_fetch(wanted: list[FetchPosition], max_bytes: int, wait_ms: int, isolation: int) -> Any:
    """The generic codec's Fetch of ``wanted``, a topic's partitions together in first-seen
    order."""
    cls = request_class(ApiKey.FETCH)[VERSION]
    by_topic: dict[str, list[FetchPosition]] = {}
    for p in wanted:
        by_topic.setdefault(p.topic, []).append(p)
    return cls(
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
                        partition=p.partition,
                        current_leader_epoch=p.leader_epoch,
                        fetch_offset=p.offset,
                        log_start_offset=-1,
                        partition_max_bytes=p.max_bytes,
                    )
                    for p in partitions
                ],
            )
            for topic, partitions in by_topic.items()
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


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
    generic = generic_fetch(
        [FetchPosition(topic, partition, offset, leader_epoch, max_bytes)],
        max_bytes,
        wait_ms,
        isolation,
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


positions = st.lists(
    st.builds(
        FetchPosition,
        topic=st.sampled_from(["a", "b", "ü-topic"]),
        partition=st.integers(0, 2**31 - 1),
        offset=st.integers(0, 2**63 - 1),
        leader_epoch=int32,
        max_bytes=st.integers(1, 2**31 - 1),
    ),
    min_size=1,
    max_size=8,
)


@given(positions, st.integers(1, 2**31 - 1), st.integers(0, 2**31 - 1), st.sampled_from([0, 1]))
def test_a_fetch_of_several_partitions_is_the_generic_codecs(
    wanted: list[FetchPosition], max_bytes: int, wait_ms: int, isolation: int
) -> None:
    generic = generic_fetch(wanted, max_bytes, wait_ms, isolation)
    body = encode_fetch_many(
        wanted, max_bytes=max_bytes, max_wait_ms=wait_ms, isolation_level=isolation
    )
    framed = encode_request(ApiKey.FETCH, VERSION, body, 9, "shared")
    assert framed == encode_request(ApiKey.FETCH, VERSION, generic, 9, "shared")
    _, decoded = decode_fetch_request(memoryview(framed)[4:], VERSION)
    read_back = [
        (t.topic, p.partition, p.fetch_offset, p.current_leader_epoch, p.partition_max_bytes)
        for t in decoded.topics
        for p in t.partitions
    ]
    assert sorted(read_back) == sorted(wanted)
