"""The frame decoder: golden bytes, split streams, limits."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.errors import ProtocolError
from pafka.protocol.frames import FrameDecoder, encode_frame

LIMIT = 1 << 16


def _frames(decoder: FrameDecoder) -> list[bytes]:
    out = []
    while (frame := decoder.next_frame()) is not None:
        out.append(frame)
    return out


def test_golden_frame() -> None:
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"
    decoder = FrameDecoder(LIMIT)
    decoder.feed(b"\x00\x00\x00\x03abc\x00\x00\x00\x00")
    assert _frames(decoder) == [b"abc", b""]


@given(
    payloads=st.lists(st.binary(max_size=300), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=5000), max_size=20),
)
def test_any_split_of_a_stream_yields_the_same_frames(
    payloads: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(encode_frame(p) for p in payloads)
    decoder = FrameDecoder(LIMIT)
    got: list[bytes] = []
    start = 0
    for cut in sorted({min(c, len(stream)) for c in cuts} | {len(stream)}):
        decoder.feed(stream[start:cut])
        got.extend(_frames(decoder))
        start = cut
    assert got == payloads
    assert decoder.buffered_bytes == 0


def test_every_single_byte_split() -> None:
    payloads = [b"x" * n for n in (0, 1, 7, 64)]
    stream = b"".join(encode_frame(p) for p in payloads)
    decoder = FrameDecoder(LIMIT)
    got: list[bytes] = []
    for i in range(len(stream)):
        decoder.feed(stream[i : i + 1])
        got.extend(_frames(decoder))
    assert got == payloads


@pytest.mark.parametrize("size", [-1, -(2**31), LIMIT + 1, 2**31 - 1])
def test_bad_sizes_are_refused_before_the_body_arrives(size: int) -> None:
    decoder = FrameDecoder(LIMIT)
    with pytest.raises(ProtocolError):
        decoder.feed(struct.pack(">i", size))
    assert decoder.buffered_bytes == 4  # nothing beyond the size prefix was waited for


def test_size_prefix_split_across_feeds_is_checked_once_complete() -> None:
    decoder = FrameDecoder(LIMIT)
    decoder.feed(b"\xff\xff")
    with pytest.raises(ProtocolError):
        decoder.feed(b"\xff\xff")
