"""How a follow read joins one answer's batches into body chunks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from services.gateway.batch_follow import PIECE_BYTES, _pieces

sizes = st.lists(st.integers(min_value=1, max_value=PIECE_BYTES + 10), max_size=12)


@given(sizes)
def test_pieces_keep_every_byte_in_order_and_stay_within_the_limit(lengths: list[int]) -> None:
    chunks = [memoryview(bytes([i % 256]) * n) for i, n in enumerate(lengths)]
    pieces = [bytes(p) for p in _pieces(chunks)]
    assert b"".join(pieces) == b"".join(bytes(c) for c in chunks)
    # Joined only while the limit allows; a batch larger than it goes alone.
    for piece in pieces:
        assert len(piece) <= PIECE_BYTES or len(piece) in lengths
    if lengths:
        assert len(pieces) <= len(lengths)


def test_small_batches_of_one_answer_go_out_as_one_chunk() -> None:
    chunks = [memoryview(b"a" * 100), memoryview(b"b" * 200), memoryview(b"c" * 300)]
    assert [bytes(p) for p in _pieces(chunks)] == [b"a" * 100 + b"b" * 200 + b"c" * 300]
    assert list(_pieces([])) == []


def test_batches_beyond_the_limit_start_a_new_chunk() -> None:
    half = PIECE_BYTES // 2
    chunks = [memoryview(b"x" * half), memoryview(b"y" * half), memoryview(b"z")]
    assert [len(p) for p in _pieces(chunks)] == [2 * half, 1]
