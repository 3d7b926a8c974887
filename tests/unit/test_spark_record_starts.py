"""Where records start, found by guessing every batch's runs together, is where walking each
batch's length prefixes one by one finds them: for runs of one size, sizes that keep changing,
many batches or few, and bodies damaged anywhere (then both refuse)."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.errors import CorruptMessageError
from pafka.records.batch import HEADER_SIZE
from pafka.records.encoding import build_batch, read_varint
from pafka.spark import record_starts as rs
from pafka.spark.varints import PAD_BYTES

Answer = tuple[bytes, list[int], list[tuple[int, int]]]


def walked(raw: bytes, counts: list[int], spans: list[tuple[int, int]]) -> list[int]:
    """The reference: each batch's records walked one by one."""
    starts = []
    for count, (pos, end) in zip(counts, spans, strict=True):
        for _ in range(count):
            if pos >= end:
                raise CorruptMessageError("past the batch")
            starts.append(pos)
            length, pos = read_varint(raw, pos)
            if length < 0:
                raise CorruptMessageError("negative length")
            pos += length
        if pos != end:
            raise CorruptMessageError("records disagree with their batch's length")
    return starts


def found(raw: bytes, counts: list[int], spans: list[tuple[int, int]]) -> list[int] | str:
    buf = np.frombuffer(raw + bytes(PAD_BYTES), np.uint8)
    try:
        return rs.record_starts(raw, buf, counts, spans, len(raw)).tolist()
    except CorruptMessageError:
        return "refused"


def reference(raw: bytes, counts: list[int], spans: list[tuple[int, int]]) -> list[int] | str:
    try:
        return walked(raw, counts, spans)
    except (CorruptMessageError, IndexError):
        return "refused"


def answer(batches: list[list[int]]) -> Answer:
    """Joined bodies of batches of records with values of the sizes given."""
    bodies, counts, spans, at = [], [], [], 0
    for sizes in batches:
        body = build_batch([(None, b"v" * n, []) for n in sizes])[HEADER_SIZE:]
        bodies.append(body)
        counts.append(len(sizes))
        spans.append((at, at + len(body)))
        at += len(body)
    return b"".join(bodies), counts, spans


# Runs of one size (long and short), sizes across the one/two-byte length boundary, and
# sizes that change every record.
_SIZES = st.one_of(
    st.tuples(st.integers(0, 200), st.integers(1, 300)).map(lambda t: [t[0]] * t[1]),
    st.lists(st.sampled_from([60, 61, 63, 64, 100]), min_size=1, max_size=80),
    st.lists(st.integers(0, 150), min_size=1, max_size=40),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_SIZES, min_size=1, max_size=12))
def test_starts_are_where_walking_finds_them(batches: list[list[int]]) -> None:
    raw, counts, spans = answer(batches)
    assert found(raw, counts, spans) == walked(raw, counts, spans)


@settings(max_examples=300, deadline=None)
@given(st.lists(_SIZES, min_size=1, max_size=8), st.binary(min_size=1, max_size=40), st.data())
def test_damaged_bodies_are_refused_alike(
    batches: list[list[int]], noise: bytes, data: st.DataObject
) -> None:
    raw, counts, spans = answer(batches)
    at = data.draw(st.integers(0, len(raw) - 1))
    damaged = raw[:at] + noise[: len(raw) - at] + raw[at + len(noise) :]
    assert found(damaged, counts, spans) == reference(damaged, counts, spans)


@pytest.mark.parametrize("rounds", [0, 1, rs.LOCKSTEP_ROUNDS])
def test_walking_takes_over_after_any_round(rounds: int) -> None:
    raw, counts, spans = answer([[10] * 20 + [70] * 5 + list(range(30))] * 6)
    with patch.object(rs, "LOCKSTEP_ROUNDS", rounds):
        assert found(raw, counts, spans) == walked(raw, counts, spans)


def test_a_count_beyond_the_records_is_refused() -> None:
    raw, _, spans = answer([[5] * 20] * 5)
    assert found(raw, [20, 20, 21, 20, 20], spans) == "refused"
    assert found(raw, [20, 20, 19, 20, 20], spans) == "refused"
