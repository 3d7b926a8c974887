"""Plain produce bodies read as columns: a list of keys and a list of values, never a tuple per
record.

Most produce requests hold nothing but keys and values. For them the work per record is what
limits a gateway process, so this module reads them with as little Python per record as can
be: every check and lookup is a ``map`` over a column, run in C, and a value is only decoded
(base64, or written as compact JSON). The common write (:mod:`services.gateway.column_produce`)
then takes the columns as they are, and the batch is built from them
(:func:`pafka.client.plain_batch.build_plain_columns`).

Whatever this module does not take (a record with other fields, a value that is not a string,
anything refused) is left to the record-by-record parse of :mod:`services.gateway.formats`,
which decides and words every refusal; so a request is accepted or refused exactly as before,
and stored as the same bytes.
"""

from __future__ import annotations

import binascii
import functools
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import orjson
import pybase64

from pafka.client.producer import OutgoingRecord

_PLAIN_FIELDS = frozenset({"key", "value"})
_DICTS = {dict}
_STRINGS = {str}
_NONES = {type(None)}
_ONE_FIELD = {1}
# Columns shorter than this are decoded text by text: joining them saves less than it costs.
UNIFORM_MIN_TEXTS = 8


@dataclass(frozen=True)
class PlainColumns:
    """The records of a plain produce body: ``values[i]`` with ``keys[i]`` (every key null when
    ``keys`` is None). No value is null: a tombstone goes the record-by-record way."""

    keys: list[bytes] | None
    values: list[bytes]

    def records(self) -> list[OutgoingRecord]:
        keys = repeat(None, len(self.values)) if self.keys is None else self.keys
        return [OutgoingRecord(value, key) for key, value in zip(keys, self.values, strict=True)]


def decode_base64(value: Any) -> bytes:
    """A binary key or value as stored: what ``base64.b64decode(value, validate=True)`` gives,
    without its Python wrapper (a third of the decoding). Anything but an ASCII string raises
    TypeError or ValueError, bad base64 binascii.Error (a ValueError), as the wrapper would."""
    return binascii.a2b_base64(value, strict_mode=True)


def decode_base64_column(texts: Sequence[str]) -> list[bytes] | None:
    """Each text as :func:`decode_base64` decodes it, or None when it would refuse any (the
    caller then finds and names the first)."""
    uniform = decode_uniform_column(texts)
    if uniform is not None:
        return uniform
    try:
        return list(map(decode_base64, texts))
    except ValueError:  # binascii.Error included
        return None


def decode_uniform_column(texts: Sequence[str]) -> list[bytes] | None:
    """A column of texts of one length and one padding (a producer's values of one size, the
    usual body) decoded in one call, or None when it is not such a column or that call refuses.

    binascii decodes a character at a time, a tenth of a gateway's CPU on small records;
    pybase64 decodes with SIMD, but a call per text costs as much as binascii's decode. So the
    texts are joined, each one's padding read as ``A`` (its last group of three bytes then
    decodes whole, its first bytes as they would have), decoded at once and cut back into
    values. Anything else, or any text that would be refused, is left to the text-by-text
    decode, which decides and refuses exactly as before."""
    count = len(texts)
    if count < UNIFORM_MIN_TEXTS:
        return None
    size = len(texts[0])
    if not size or size % 4 or set(map(len, texts)) != {size}:
        return None
    pad = size - len(texts[0].rstrip("="))
    if pad > 2:
        return None
    joined = "".join(texts)
    # Every text ends in the same padding (its last characters, read a text apart) and the
    # column holds no other "=": the decode below sees none.
    tails = (joined[size - k :: size] for k in range(1, pad + 1))
    if any(tail != "=" * count for tail in tails) or joined.count("=") != pad * count:
        return None
    try:
        data = pybase64.b64decode(joined.replace("=", "A") if pad else joined, validate=True)
    except ValueError:  # binascii.Error included: a character outside the alphabet
        return None
    group = size // 4 * 3
    return list(_cutter(group - pad, pad, count).unpack(data))


@functools.lru_cache(maxsize=64)
def _cutter(keep: int, skip: int, count: int) -> struct.Struct:
    """Cuts ``count`` decoded texts back apart: each text's ``keep`` bytes, then the ``skip``
    bytes its padding decoded to. One call in C, not a slice per value."""
    return struct.Struct(f"{keep}s{skip}x" * count)  # "0x": no bytes to skip


def _stored_strings(texts: list[Any], binary: bool) -> list[bytes] | None:
    """A column of strings as stored: base64-decoded, or as compact JSON."""
    if binary:
        return decode_base64_column(texts)
    try:
        # A JSON string stored as compact JSON: what orjson writes (a lone surrogate raises).
        return list(map(orjson.dumps, texts))
    except orjson.JSONEncodeError:
        return None


def read_columns(items: list[Any], *, binary: bool) -> PlainColumns | None:
    """The columns of ``items`` (a produce body's ``records``) when each holds a string value and
    at most a string key, nothing else; None otherwise."""
    if set(map(type, items)) != _DICTS:
        return None
    texts = list(map(dict.get, items, repeat("value")))
    if set(map(type, texts)) != _STRINGS:
        return None
    keys = None
    # Records of one field, that value (a string, found above): the usual body, keyless.
    if set(map(len, items)) != _ONE_FIELD:
        if not all(map(_PLAIN_FIELDS.issuperset, items)):
            return None
        key_texts = list(map(dict.get, items, repeat("key")))
        key_types = set(map(type, key_texts))
        if key_types != _NONES and (
            key_types != _STRINGS or (keys := _stored_strings(key_texts, binary)) is None
        ):
            return None
    values = _stored_strings(texts, binary)
    if values is None:
        return None
    return PlainColumns(keys, values)
