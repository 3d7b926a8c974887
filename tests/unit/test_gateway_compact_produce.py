"""Compact keyless produce bodies cut into columns without a parse, against the parse: whatever
the cut takes, the parse reads the same; whatever the parse refuses, the cut leaves to it.
Binary bodies (base64 values) and JSON ones (string values, stored as JSON) alike."""

from __future__ import annotations

import base64

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.errors import RestError
from services.gateway.compact_produce import compact_columns, compact_json_strings
from services.gateway.formats import COLUMNS_FROM_RECORDS, EmbeddedFormat, parse_produce
from services.gateway.plain_columns import PlainColumns

MAX_RECORDS = 64


def _body(values: list[bytes]) -> bytes:
    texts = [base64.b64encode(value).decode() for value in values]
    return orjson.dumps({"records": [{"value": text} for text in texts]})


def _parsed(
    body: bytes, fmt: EmbeddedFormat = EmbeddedFormat.BINARY
) -> PlainColumns | RestError | None:
    """What the parse makes of ``body`` when the cut is not there to take it (a leading space
    is JSON, and not the compact form)."""
    try:
        found = parse_produce(b" " + body, fmt, max_records=MAX_RECORDS)
    except RestError as exc:
        return exc
    return found.columns


uniform_values = st.integers(0, 60).flatmap(
    lambda size: st.lists(st.binary(min_size=size, max_size=size), min_size=1, max_size=80)
)
any_values = uniform_values | st.lists(st.binary(max_size=60), min_size=1, max_size=80)


@given(any_values)
def test_a_compact_body_is_cut_as_the_parse_reads_it(values: list[bytes]) -> None:
    body = _body(values)
    cut = compact_columns(body, COLUMNS_FROM_RECORDS, MAX_RECORDS)
    if COLUMNS_FROM_RECORDS <= len(values) <= MAX_RECORDS:
        assert cut == PlainColumns(None, values)
    else:  # too few or too many records: the parse's to read or refuse
        assert cut is None
    assert cut is None or _parsed(body) == cut


# What JSON allows or a client may write between and inside the values, and damage.
INSERTS = st.sampled_from(
    [" ", "\n", "\\/", "\\u0041", '\\"', '"', ",", "=", "==", "A", "+", "}", "{", "é",
     '"},{"value":"', '","value":"', '","key":"AAAA', '"},{"value":null,"x":"', "\x00"]
)  # fmt: skip


@settings(max_examples=300)
@given(
    any_values,
    st.lists(st.tuples(st.integers(0, 10_000), INSERTS), max_size=3),
    st.tuples(st.integers(0, 60), INSERTS) | st.none(),
    st.integers(0, 6),
)
def test_whatever_the_cut_takes_the_parse_reads_the_same(
    values: list[bytes],
    inserts: list[tuple[int, str]],
    in_every_value: tuple[int, str] | None,
    cut_from_end: int,
) -> None:
    """Damage anywhere in the body, the same damage in every value (so that the values keep
    one size), and an end cut off or replaced."""
    texts = [base64.b64encode(value).decode() for value in values]
    if in_every_value is not None:
        at, text = in_every_value
        texts = [t[:at] + text + t[at:] for t in texts]
    body = b'{"records":[' + b",".join(b'{"value":"%s"}' % t.encode() for t in texts) + b"]}"
    for at, text in inserts:
        at %= len(body) + 1
        body = body[:at] + text.encode() + body[at:]
    if cut_from_end:
        body = body[:-cut_from_end] + b"A" * (cut_from_end % 3)
    cut = compact_columns(body, COLUMNS_FROM_RECORDS, MAX_RECORDS)
    if cut is not None:
        assert _parsed(body) == cut


def _records(record: bytes, count: int = 2 * COLUMNS_FROM_RECORDS) -> bytes:
    return b'{"records":[' + b",".join([record] * count) + b"]}"


@pytest.mark.parametrize(
    "body",
    [
        _records(b'{"value":"AAAA"}').replace(b":[", b": ["),  # spaces
        _records(b'{"value":"AAAA","key":"AAAA"}'),
        _records(b'{"value":"AA\\/A"}'),  # an escaped slash: JSON, not base64 as it stands
        _records(b'{"value":"AA\\u0041A"}'),
        _records(b'{"value":"AAAA","value":"BBBB"}'),
        _records(b'{"value":"AAAA"}') + b"\n",
        _records(b'{"value":"AAAA"}')[:-2] + b"}",
        _records(b'{"value":"AAAA"}')[:-4] + b'"}]]',  # not closed as it began
        _records(b'{"value":"A=AA"}'),
        _records(b'{"value":"\xc3\xa9AAA"}'),
        _records(b'{"value":"AAAA"}', MAX_RECORDS + 1),
    ],
)
def test_anything_but_the_plain_compact_form_is_left_to_the_parse(body: bytes) -> None:
    assert compact_columns(body, 1, MAX_RECORDS) is None


def test_the_plain_compact_form_is_taken() -> None:
    """The control for the cases above: the same records, plainly written, are cut."""
    body = _records(b'{"value":"AAAA"}')
    assert compact_columns(body, 1, MAX_RECORDS) == PlainColumns(None, [bytes(3)] * 16)
    two_paddings = _records(b'{"value":"AAA="}').replace(b"AAA=", b"AAAA", 1)
    assert compact_columns(two_paddings, 1, MAX_RECORDS) == PlainColumns(
        None, [bytes(3)] + [bytes(2)] * 15
    )
    two_sizes = body.replace(b"AAAA", b"AAAAAAAA", 1)
    assert compact_columns(two_sizes, 1, MAX_RECORDS) == PlainColumns(
        None, [bytes(6)] + [bytes(3)] * 15
    )


# -- JSON: string values stored as the body writes them ---------------------------------------


def _json_body(texts: list[str]) -> bytes:
    return orjson.dumps({"records": [{"value": text} for text in texts]})


def _json_cut(body: bytes) -> PlainColumns | None:
    return compact_json_strings(body, COLUMNS_FROM_RECORDS, MAX_RECORDS)


# Strings as clients send them, and those JSON must escape (quotes, backslashes, controls) or
# that look like the form's own punctuation.
json_texts = st.lists(
    st.text(max_size=30)
    | st.sampled_from(['"', "\\", "\n", "\x00", '"},{"value":"', "},{", "é", "\u2028", "\x7f"]),
    min_size=1,
    max_size=80,
)


@given(json_texts)
def test_a_compact_json_body_is_cut_as_the_parse_reads_it(texts: list[str]) -> None:
    """Taken whenever no value needs an escape; then the same columns as the parse."""
    body = _json_body(texts)
    cut = _json_cut(body)
    plain = all('"' not in t and "\\" not in t and min(t, default="a") >= " " for t in texts)
    if plain and COLUMNS_FROM_RECORDS <= len(texts) <= MAX_RECORDS:
        assert cut == PlainColumns(None, [orjson.dumps(t) for t in texts])
    else:
        assert cut is None
    assert cut is None or _parsed(body, EmbeddedFormat.JSON) == cut


JSON_INSERTS = st.sampled_from(
    [" ", "\n", "\\/", "\\u0041", '\\"', '"', ",", "}", "{", "]", "é", "\x00", "\x1f",
     '"},{"value":"', '","value":"', '","key":"k', '"},{"value":null,"x":"', '"},{"value":1,"x":"',
     '"}]},{"value":"', "\xff", "\xed\xa0\x80"]
)  # fmt: skip


@settings(max_examples=300)
@given(
    st.lists(st.text(alphabet="ab é", max_size=8), min_size=1, max_size=40),
    st.lists(st.tuples(st.integers(0, 10_000), JSON_INSERTS), max_size=3),
    st.integers(0, 6),
)
def test_whatever_the_json_cut_takes_the_parse_reads_the_same(
    texts: list[str], inserts: list[tuple[int, str]], cut_from_end: int
) -> None:
    """Damage anywhere in the body: quotes, escapes, other fields, bytes that are not UTF-8."""
    body = _json_body(texts)
    for at, text in inserts:
        at %= len(body) + 1
        raw = text.encode("latin-1") if text in ("\xff", "\xed\xa0\x80") else text.encode()
        body = body[:at] + raw + body[at:]
    if cut_from_end:
        body = body[:-cut_from_end] + b"a" * (cut_from_end % 3)
    cut = _json_cut(body)
    if cut is not None:
        assert _parsed(body, EmbeddedFormat.JSON) == cut


@pytest.mark.parametrize(
    "body",
    [
        _records(b'{"value":"ab"}').replace(b":[", b": ["),  # spaces
        _records(b'{"value":"ab","key":"k"}'),
        _records(b'{"value":"a\\/b"}'),  # an escape: stored as the parse decodes it
        _records(b'{"value":"a\\u0041b"}'),
        _records(b'{"value":"a\x1fb"}'),  # a control character JSON does not allow raw
        _records(b'{"value":"ab","value":"cd"}'),
        _records(b'{"value":"a"b"}'),
        # A quote moved across a cut: as many quotes, and a cut with a quote on one side only.
        _records(b'{"value":"ab"}').replace(b'"},{"value":"', b'""},{"value":', 1),
        _records(b'{"value":"ab"}') + b"\n",
        _records(b'{"value":"\xed\xa0\x80"}'),  # an encoded surrogate: not UTF-8
        _records(b'{"value":"ab"}', MAX_RECORDS + 1),
        _records(b'{"value":"ab"}', COLUMNS_FROM_RECORDS - 1),
    ],
)
def test_anything_but_the_plain_compact_json_form_is_left_to_the_parse(body: bytes) -> None:
    assert _json_cut(body) is None


def test_the_plain_compact_json_form_is_taken() -> None:
    """The control for the cases above: plain strings, non-ASCII and DEL included, each stored
    with its quotes as JSON writes it."""
    body = _records(b'{"value":"ab"}').replace(b'"ab"', '"é\x7f/"'.encode(), 1)
    expected = [orjson.dumps("é\x7f/")] + [b'"ab"'] * (2 * COLUMNS_FROM_RECORDS - 1)
    assert _json_cut(body) == PlainColumns(None, expected)
    assert _parsed(body, EmbeddedFormat.JSON) == PlainColumns(None, expected)
