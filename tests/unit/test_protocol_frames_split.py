"""The frame decoder fed as a socket feeds it: any chunking, views into the chunks, bad sizes.

tests/unit/test_protocol_frames.py holds the golden bytes and the size limits; this module
checks what the broker's transport relies on: frames cut from one chunk are views of it
(no copy), views stay valid while later chunks arrive, and a bad size after good frames still
hands out the good ones first.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.errors import ProtocolError
from pafka.protocol.frames import FrameDecoder, encode_frame

LIMIT = 1 << 12

payload_lists = st.lists(st.binary(max_size=80), min_size=1, max_size=6)


def _drain(decoder: FrameDecoder) -> list[memoryview]:
    out = []
    while (frame := decoder.next_frame()) is not None:
        out.append(frame)
    return out


def _feed_in_chunks(stream: bytes, cuts: list[int]) -> tuple[list[memoryview], FrameDecoder]:
    decoder = FrameDecoder(LIMIT)
    views: list[memoryview] = []
    start = 0
    for cut in [*sorted(set(cuts)), len(stream)]:
        decoder.feed(stream[start:cut])
        views += _drain(decoder)
        start = cut
    return views, decoder


@given(payloads=payload_lists, data=st.data())
def test_any_chunking_gives_the_frames_of_the_whole_stream(
    payloads: list[bytes], data: st.DataObject
) -> None:
    stream = b"".join(encode_frame(p) for p in payloads)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=len(stream)), label="cuts")
    whole, _ = _feed_in_chunks(stream, [])
    views, decoder = _feed_in_chunks(stream, cuts)
    # Compared only now: views handed out early must survive every later feed unchanged.
    assert [bytes(v) for v in views] == [bytes(w) for w in whole] == payloads
    assert all(v.readonly for v in views)
    assert decoder.buffered_bytes == 0


@given(payloads=payload_lists)
def test_a_stream_fed_one_byte_at_a_time_gives_the_same_frames(payloads: list[bytes]) -> None:
    stream = b"".join(encode_frame(p) for p in payloads)
    views, decoder = _feed_in_chunks(stream, list(range(len(stream))))
    assert [bytes(v) for v in views] == payloads
    assert decoder.buffered_bytes == 0


@given(payloads=payload_lists, tail=st.binary(max_size=40))
def test_buffered_bytes_are_exactly_the_unframed_tail(payloads: list[bytes], tail: bytes) -> None:
    partial = encode_frame(tail + b"!")[: 4 + len(tail)]  # one byte short of a frame
    decoder = FrameDecoder(LIMIT)
    decoder.feed(b"".join(encode_frame(p) for p in payloads) + partial)
    assert [bytes(v) for v in _drain(decoder)] == payloads
    assert decoder.buffered_bytes == len(partial)
    decoder.feed(b"!")
    assert [bytes(v) for v in _drain(decoder)] == [tail + b"!"]
    assert decoder.buffered_bytes == 0


def test_frames_of_one_chunk_are_views_of_that_chunk() -> None:
    chunk = encode_frame(b"first") + encode_frame(b"second")
    decoder = FrameDecoder(LIMIT)
    decoder.feed(chunk)
    views = _drain(decoder)
    assert [bytes(v) for v in views] == [b"first", b"second"]
    assert all(v.obj is chunk for v in views)


@pytest.mark.parametrize("size", [-1, LIMIT + 1])
@given(payloads=payload_lists)
def test_a_bad_size_after_good_frames_is_refused_once_they_are_taken(
    size: int, payloads: list[bytes]
) -> None:
    decoder = FrameDecoder(LIMIT)
    decoder.feed(b"".join(encode_frame(p) for p in payloads) + struct.pack(">i", size))
    taken = [decoder.next_frame() for _ in payloads]
    assert [None if t is None else bytes(t) for t in taken] == payloads
    with pytest.raises(ProtocolError, match="frame size"):
        decoder.next_frame()
