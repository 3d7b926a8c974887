"""Concatenated JSON split as it arrives: whatever the separators and wherever the chunks are
cut, the values come out as json reads them, in order; a bad value is refused alone; bytes
that start no value end the stream."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pafka.errors import RestError
from services.gateway.json_stream import JsonStream

scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
objects = st.dictionaries(st.text(max_size=6), values, max_size=4)
separators = st.sampled_from(["", " ", "\n", "\r\n", "\t ", " \n  "])


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


def _fed(stream: JsonStream, chunks: list[bytes]) -> list[Any]:
    found: list[Any] = []
    for chunk in chunks:
        found += stream.feed(chunk)
    return found


@given(
    st.lists(st.tuples(objects, separators, st.booleans()), max_size=8),
    st.lists(st.integers(0, 10_000), max_size=6),
)
def test_values_come_out_whole_and_in_order_however_the_chunks_are_cut(
    items: list[tuple[dict[str, Any], str, bool]], cuts: list[int]
) -> None:
    text = "".join(
        json.dumps(o, indent=1 if pretty else None, ensure_ascii=False) + sep
        for o, sep, pretty in items
    )
    stream = JsonStream()
    found = _fed(stream, _chunks(text.encode(), cuts))
    stream.finish()
    assert found == [o for o, _, _ in items]
    assert stream.broken is None


@given(st.lists(objects, min_size=1, max_size=5), st.integers(0, 4))
def test_an_invalid_value_is_refused_alone(items: list[dict[str, Any]], at: int) -> None:
    lines = [json.dumps(o) for o in items]
    at %= len(lines) + 1
    lines.insert(at, '{"key" 1, "x": "}{"}')
    found = JsonStream().feed(("\n".join(lines) + "\n").encode())
    assert isinstance(found[at], RestError) and found[at].rest_code == 40001
    assert found[:at] + found[at + 1 :] == items


def test_bytes_that_start_no_value_end_the_stream_after_the_values_before_them() -> None:
    stream = JsonStream()
    found = stream.feed(b'{"a": 1} {"b": 2}, {"c": 3}')
    assert found[:2] == [{"a": 1}, {"b": 2}] and isinstance(found[2], RestError)
    assert stream.broken is found[2] and "expected a JSON object" in found[2].message
    assert stream.feed(b'{"d": 4}') == []


def test_a_comma_between_lines_is_not_taken_for_a_boundary() -> None:
    stream = JsonStream()
    found = stream.feed(b'{"a": 1},\n{"b": 2}\n')
    assert found[0] == {"a": 1} and isinstance(found[1], RestError)


def test_a_value_cut_short_by_the_end_is_refused_and_pending_bytes_count_it() -> None:
    stream = JsonStream()
    assert stream.feed(b'{"a": "x\\"}{') == []
    assert stream.pending_bytes == len(b'{"a": "x\\"}{')
    try:
        stream.finish()
    except RestError as cut:
        assert cut.rest_code == 40001
    else:
        raise AssertionError("an unfinished value was accepted")


def test_braces_and_quotes_inside_strings_do_not_end_a_value() -> None:
    stream = JsonStream()
    text = '{"a": "}{\\"]["}  {"b": ["{", "}"]}\n'
    assert stream.feed(text[:9].encode()) == []
    assert stream.feed(text[9:].encode()) == [{"a": '}{"]['}, {"b": ["{", "}"]}]


def test_integers_beyond_64_bits_are_read_exactly() -> None:
    assert JsonStream().feed(b'{"n": 123456789012345678901234567890}\n') == [
        {"n": 123456789012345678901234567890}
    ]


def test_a_value_fed_a_byte_at_a_time_comes_out_once_escapes_and_all() -> None:
    value = {"s": 'a\\\\"}{\\"' * 50 + "\\", "n": [{"x": "]"}] * 20}
    data = json.dumps(value).encode() + b" " + json.dumps({"next": 1}).encode()
    stream = JsonStream()
    found = _fed(stream, [data[i : i + 1] for i in range(len(data))])
    assert found == [value, {"next": 1}]
    assert stream.pending_bytes == 0
