"""Varints read at many positions at once agree with the record decoder's one-at-a-time read:
the same values and sizes, or a refusal wherever one of them runs past the limit or is
overlong (one-, two- and longer-byte varints, next to the limit included)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.errors import CorruptMessageError
from pafka.records.encoding import read_varint, varint
from pafka.spark.varints import PAD_BYTES, read_varints


def _one_by_one(data: bytes, positions: list[int], limit: int) -> list[tuple[int, int]] | None:
    """Each varint's (value, size) read alone within ``limit``; None if any is refused."""
    found = []
    for pos in positions:
        if pos >= limit:
            return None
        try:
            value, after = read_varint(data[:limit], pos)
        except CorruptMessageError:
            return None
        if after - pos > 10:
            return None
        found.append((value, after - pos))
    return found


def _at_once(data: bytes, positions: list[int], limit: int) -> list[tuple[int, int]] | None:
    buf = np.frombuffer(data[:limit] + bytes(PAD_BYTES), np.uint8)
    try:
        values, sizes = read_varints(buf, np.array(positions, np.int64), limit)
    except CorruptMessageError:
        return None
    return list(zip(values.tolist(), sizes.tolist(), strict=True))


# Values across the one-, two- and three-byte boundaries, and arbitrary ones.
_VALUES = st.one_of(
    st.integers(-70, 70),
    st.integers(-8200, 8200),
    st.integers(-(2**63), 2**63 - 1),
)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(_VALUES, min_size=1, max_size=40), data=st.data())
def test_encoded_varints_read_alike(values: list[int], data: st.DataObject) -> None:
    encoded = [varint(v) for v in values]
    joined = b"".join(encoded)
    positions = np.cumsum([0] + [len(e) for e in encoded[:-1]]).tolist()
    # A limit anywhere: at the end, or cutting into the last varints.
    limit = data.draw(st.integers(0, len(joined)))
    expected = _one_by_one(joined, positions, limit)
    assert _at_once(joined, positions, limit) == expected
    if limit == len(joined):
        assert expected == [(v, len(e)) for v, e in zip(values, encoded, strict=True)]


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(min_size=1, max_size=64), data=st.data())
def test_arbitrary_bytes_read_alike(raw: bytes, data: st.DataObject) -> None:
    limit = data.draw(st.integers(1, len(raw)))
    positions = data.draw(st.lists(st.integers(0, limit - 1), min_size=1, max_size=12))
    assert _at_once(raw, positions, limit) == _one_by_one(raw, positions, limit)


def test_a_two_byte_varint_cut_by_the_limit_is_refused() -> None:
    data = varint(1) + varint(100)  # one byte, then two
    with pytest.raises(CorruptMessageError):
        read_varints(np.frombuffer(data[:2] + bytes(PAD_BYTES), np.uint8), np.array([0, 1]), 2)
