"""Plain produce bodies read and built as columns, against what they stand in for: base64
decoded value by value in strict mode, the record-by-record parse, and ``build_batch``."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.client.plain_batch import (
    UNIFORM_RECORDS_MAX,
    UNIFORM_VALUE_MAX_BYTES,
    build_plain_columns,
)
from pafka.records.encoding import build_batch
from services.gateway.formats import EmbeddedFormat, load_json, parse_items, parse_produce
from services.gateway.plain_columns import (
    UNIFORM_MIN_TEXTS,
    decode_base64_column,
    decode_uniform_column,
    read_columns,
)


def _strict_each(texts: list[str]) -> list[bytes] | None:
    try:
        return [binascii.a2b_base64(text, strict_mode=True) for text in texts]
    except (binascii.Error, ValueError):
        return None


valid_base64 = st.binary(max_size=40).map(lambda data: base64.b64encode(data).decode())


@st.composite
def damaged_base64(draw: st.DrawFn) -> str:
    """Valid base64 with a character put in, taken out or replaced, padding among them."""
    text = draw(valid_base64)
    at = draw(st.integers(0, len(text)))
    char = draw(st.sampled_from(["=", "==", "A", "+", "/", "-", "_", " ", "\n", "é", "\x00"]))
    how = draw(st.sampled_from(["insert", "remove", "replace"]))
    if how == "insert":
        return text[:at] + char + text[at:]
    if how == "remove":
        return text[:at] + text[at + 1 :]
    return text[:at] + char + text[at + len(char) :]


base64_texts = st.lists(valid_base64 | damaged_base64() | st.text(max_size=8), max_size=12)


@given(base64_texts)
def test_a_column_decodes_as_each_text_does(texts: list[str]) -> None:
    assert decode_base64_column(texts) == _strict_each(texts)


@st.composite
def uniform_columns(draw: st.DrawFn) -> list[str]:
    """Texts of one length (values of one size, the column the joined decode takes), some of
    them changed in place: a character replaced keeps the length, so the joined decode has to
    refuse what the text-by-text decode would, or give what it gives (the last data character
    before the padding replaced leaves bits a canonical encoder would not set)."""
    size = draw(st.integers(0, 20))
    datas = draw(st.lists(st.binary(min_size=size, max_size=size), min_size=1, max_size=30))
    texts = [base64.b64encode(data).decode() for data in datas]
    alphabet = "ABZaz09+/=-_ \né\x00"
    for _ in range(draw(st.integers(0, 3))):
        if not texts[0]:
            break
        which = draw(st.integers(0, len(texts) - 1))
        at = draw(st.integers(0, len(texts[which]) - 1))
        char = draw(st.sampled_from(alphabet))
        texts[which] = texts[which][:at] + char + texts[which][at + 1 :]
    return texts


@settings(max_examples=300)
@given(uniform_columns())
def test_a_column_of_one_length_decodes_as_each_text_does(texts: list[str]) -> None:
    assert decode_base64_column(texts) == _strict_each(texts)


def test_the_joined_decode_takes_a_column_of_one_size() -> None:
    texts = [base64.b64encode(bytes([i]) * 100).decode() for i in range(UNIFORM_MIN_TEXTS)]
    assert decode_uniform_column(texts) == [bytes([i]) * 100 for i in range(UNIFORM_MIN_TEXTS)]
    assert decode_uniform_column(texts[:-1]) is None  # too few to join
    assert decode_uniform_column([*texts[:-1], texts[-1][:-4]]) is None  # two lengths
    # The padding moved inside a text: as many "=" in the column, refused as binascii refuses.
    padded = [base64.b64encode(b"ab").decode()] * UNIFORM_MIN_TEXTS  # "YWI="
    moved = [*padded[:-1], "YW=I"]
    inner = [*padded[:-1], "Y=I="]  # its padding in place, one more "=" before it
    for refused in (moved, inner):
        assert decode_uniform_column(refused) is None
        assert decode_base64_column(refused) is None
    assert decode_uniform_column(padded) == [b"ab"] * UNIFORM_MIN_TEXTS


def _outcome(raw: bytes, fmt: EmbeddedFormat) -> Any:
    try:
        return parse_produce(raw, fmt, max_records=100)
    except Exception as exc:  # the refusal itself is compared
        return (type(exc), str(exc))


def _full(raw: bytes, fmt: EmbeddedFormat) -> Any:
    try:
        return parse_items(load_json(raw)["records"], fmt)
    except Exception as exc:
        return (type(exc), str(exc))


plain_items = st.lists(
    st.fixed_dictionaries(
        {"value": valid_base64 | damaged_base64() | st.text(max_size=6)},
        optional={"key": valid_base64 | st.none() | st.text(max_size=4)},
    ),
    min_size=1,
    max_size=20,
)


@given(plain_items, st.sampled_from(list(EmbeddedFormat)))
def test_plain_bodies_parse_as_record_by_record(items: list[Any], fmt: EmbeddedFormat) -> None:
    raw = json.dumps({"records": items}).encode()
    assert _outcome(raw, fmt) == _full(raw, fmt)


beside_records = st.dictionaries(
    st.sampled_from(["key_schema_id", "value_schema_id", "n"]),
    st.none()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.lists(st.integers(-(2**70), 2**70), max_size=2),
    max_size=2,
)


@given(plain_items, beside_records, st.sampled_from(list(EmbeddedFormat)))
def test_numbers_beside_the_records_change_nothing(
    items: list[Any], beside: dict[str, Any], fmt: EmbeddedFormat
) -> None:
    # Integers beyond 64 bits (orjson reads them as floats) anywhere but in the records.
    raw = json.dumps({**beside, "records": items}).encode()
    assert _outcome(raw, fmt) == _full(raw, fmt)


def test_a_long_digit_run_in_a_value_is_kept_as_written() -> None:
    digits = "1234567890" * 3
    items = [{"value": digits}] * 10
    for fmt in EmbeddedFormat:
        raw = json.dumps({"records": items}).encode()
        assert _outcome(raw, fmt) == _full(raw, fmt)
    parsed = parse_produce(
        json.dumps({"records": items}).encode(), EmbeddedFormat.JSON, max_records=100
    )
    assert (
        parsed.columns is not None and parsed.columns.values == [json.dumps(digits).encode()] * 10
    )


def test_columns_take_only_string_keys_and_values() -> None:
    value = base64.b64encode(b"v").decode()
    assert read_columns([{"value": value}], binary=True) is not None
    assert read_columns([{"value": value, "key": value}], binary=True) is not None
    assert read_columns([{"value": None}], binary=True) is None  # a tombstone
    assert read_columns([{"value": 1}], binary=False) is None
    assert read_columns([{"value": value, "partition": 0}], binary=True) is None
    assert read_columns([{"value": value}, [value]], binary=True) is None
    assert read_columns([{"value": value, "key": 5}], binary=False) is None
    assert read_columns([{"value": "\ud800"}], binary=False) is None  # orjson refuses it


columns = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        st.none() | st.lists(st.binary(max_size=30), min_size=n, max_size=n),
        st.lists(st.binary(max_size=30), min_size=n, max_size=n),
    )
)


@given(columns, st.integers(0, 2**62))
def test_column_batches_are_build_batch_bytes(
    keys_values: tuple[list[bytes] | None, list[bytes]], timestamp_ms: int
) -> None:
    keys, values = keys_values
    pairs = zip([None] * len(values) if keys is None else keys, values, strict=True)
    expected = build_batch(
        [(k, v, ()) for k, v in pairs], timestamps_ms=[timestamp_ms] * len(values)
    )
    assert build_plain_columns(keys, values, timestamp_ms) == expected


def _batch_of(keys: list[bytes | None] | None, values: list[bytes], timestamp_ms: int) -> bytes:
    pairs = zip([None] * len(values) if keys is None else keys, values, strict=True)
    return build_batch([(k, v, ()) for k, v in pairs], timestamps_ms=[timestamp_ms] * len(values))


# Keyless values of one size, in counts on both sides of a one-byte offset delta (64).
uniform_values = st.tuples(st.integers(0, 300), st.integers(1, 200)).flatmap(
    lambda size_count: st.lists(
        st.binary(min_size=size_count[0], max_size=size_count[0]),
        min_size=size_count[1],
        max_size=size_count[1],
    )
)


@settings(max_examples=50)
@given(uniform_values, st.integers(0, 2**62))
def test_keyless_values_of_one_size_are_build_batch_bytes(
    values: list[bytes], timestamp_ms: int
) -> None:
    assert build_plain_columns(None, values, timestamp_ms) == _batch_of(None, values, timestamp_ms)


def test_keyless_values_of_one_size_beyond_the_framing_table() -> None:
    for values in [
        [b"v" * 70] * (UNIFORM_RECORDS_MAX + 1),  # more records than the table holds
        [b"w" * (UNIFORM_VALUE_MAX_BYTES + 1)] * 3,  # a record size beyond the small varints
        [b"x" * UNIFORM_VALUE_MAX_BYTES] * 3,  # the largest value the table frames
        [b"y" * 5] * UNIFORM_RECORDS_MAX,  # the most records it frames
    ]:
        assert build_plain_columns(None, values, 11) == _batch_of(None, values, 11)


def test_column_batches_beyond_the_small_varints_and_column_limit() -> None:
    for keys, values in [
        (None, [b"v" * 9_000, b"w"]),  # a value length of two bytes and more
        ([b"k" * 8_190], [b"v"]),  # a record size beyond the small varints
        (None, [b"x"] * 9_000),  # more records than the column build's heads
        ([b"k", None], [b"a", b"b"]),  # null and other keys mixed
    ]:
        pairs = zip([None] * len(values) if keys is None else keys, values, strict=True)
        expected = build_batch([(k, v, ()) for k, v in pairs], timestamps_ms=[7] * len(values))
        assert build_plain_columns(keys, values, 7) == expected  # type: ignore[arg-type]
