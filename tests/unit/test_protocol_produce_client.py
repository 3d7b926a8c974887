"""The producer's hand-written Produce v8: its request is the generic codec's, byte for byte, and
reads back whole through the broker's decoder; its answer reader gets back every field the
broker's encoder (and the generic codec) wrote, and refuses cut or padded frames."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.errors import ProtocolError
from pafka.protocol.messages import decode_request, encode_request, response_class
from pafka.protocol.produce_answer import decode_produce_answer
from pafka.protocol.produce_codec import (
    ProduceRequestBody,
    ProduceResponseBody,
    TopicProduceResponse,
)
from pafka.protocol.produce_request import VERSION, encode_produce
from pafka.protocol.versions import ApiKey
from tests.unit.test_protocol_fast import (
    _plain,
    _produce_request_frame,
    int16s,
    int32s,
    names,
    produce_partitions,
    produce_topics,
)

answers = st.builds(
    ProduceResponseBody,
    st.lists(
        st.builds(TopicProduceResponse, names, st.lists(produce_partitions, max_size=4)), max_size=4
    ),
    int32s,
)


@settings(max_examples=300)
@given(
    transactional_id=st.none() | names,
    acks=int16s,
    timeout_ms=int32s,
    topics=produce_topics,
)
def test_a_produce_written_by_hand_is_the_generic_codecs_and_the_broker_reads_it_back(
    transactional_id: str | None,
    acks: int,
    timeout_ms: int,
    topics: list[tuple[str, list[tuple[int, bytes | None]]]],
) -> None:
    body = encode_produce(transactional_id, acks, timeout_ms, topics)
    # The generic frame's correlation id is 7.
    frame = encode_request(ApiKey.PRODUCE, VERSION, body, 7, "client")[4:]
    assert frame == _produce_request_frame(
        VERSION, "client", transactional_id, acks, timeout_ms, topics
    )
    read = decode_request(frame).body
    assert isinstance(read, ProduceRequestBody)
    assert _plain(read) == (transactional_id, acks, timeout_ms, topics)


@settings(max_examples=300)
@given(answer=answers, correlation_id=int32s)
def test_an_answer_reads_back_every_field_the_broker_wrote(
    answer: ProduceResponseBody, correlation_id: int
) -> None:
    frame = memoryview(bytes(answer.encode_frame(VERSION, correlation_id)))[4:]
    assert decode_produce_answer(frame) == answer


@given(answer=answers)
def test_an_answer_reads_as_the_generic_codec_reads_it(answer: ProduceResponseBody) -> None:
    frame = memoryview(bytes(answer.encode_frame(VERSION, 1)))[4:]
    generic = response_class(ApiKey.PRODUCE, VERSION).decode(
        bytes(frame), version=VERSION, header=True
    )
    read = decode_produce_answer(frame)
    assert read.throttle_time_ms == generic.throttle_time_ms
    assert _fields(read) == _fields(generic)


def _fields(answer: Any) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Every partition's fields, whichever codec read them (the generic one's refused records
    are objects, the hand reader's are pairs)."""

    def refused(e: Any) -> tuple[int, str | None]:
        return e if isinstance(e, tuple) else (e.batch_index, e.batch_index_error_message)

    return [
        (
            t.name,
            [
                (
                    p.index,
                    p.error_code,
                    p.base_offset,
                    p.log_append_time_ms,
                    p.log_start_offset,
                    p.error_message,
                    tuple(map(refused, p.record_errors)),
                )
                for p in t.partition_responses
            ],
        )
        for t in answer.responses
    ]


@given(answer=answers, data=st.data())
def test_a_cut_or_padded_answer_is_a_protocol_error(
    answer: ProduceResponseBody, data: st.DataObject
) -> None:
    whole = bytes(answer.encode_frame(VERSION, 1))[4:]
    cut = data.draw(st.integers(0, len(whole) - 1))
    with pytest.raises(ProtocolError):
        decode_produce_answer(memoryview(whole[:cut]))
    padding = data.draw(st.binary(min_size=1, max_size=8))
    with pytest.raises(ProtocolError):
        decode_produce_answer(memoryview(whole + padding))
