"""orjson where it gives exactly what json gives, json everywhere else. Pure functions.

The gateway's answers and stored records were always json's (``JSONResponse``, compact UTF-8
values): orjson is several times faster but reads integers beyond 64 bits as floats, writes
floats in other forms (``1e-05`` as ``1e-5``), refuses lone surrogates, NaN and UTF-16. So each
shortcut here takes orjson only where that cannot happen and returns :data:`NOT_EXACT`
(or falls back to json) otherwise; the tests hold them to json's results.
"""

from __future__ import annotations

import json
from typing import Any, Final

import orjson

# 19 digits in a row may be an integer orjson would read as a float (beyond 64 bits). Found by
# a translation and a substring search, several times faster than a regular expression.
_DIGIT_RUN = b"0" * 19
_DIGITS_ONLY = bytes(ord("0") if 0x30 <= c <= 0x39 else ord(" ") for c in range(256))
# Values orjson reads as json does whatever the document: no float can hide in them.
_EXACT_TYPES = (str, int, bool, type(None))


class _NotExact:
    pass


NOT_EXACT: Final = _NotExact()


def has_long_number(data: bytes) -> bool:
    """Whether ``data`` may hold an integer orjson reads as a float (19 digits in a row)."""
    return len(data) >= len(_DIGIT_RUN) and _DIGIT_RUN in data.translate(_DIGITS_ONLY)


def _may_hold_float(data: bytes) -> bool:
    return b"." in data or b"e" in data or b"E" in data


def load(data: bytes, *, floats: bool = True) -> Any:
    """What json reads from ``data``, read by orjson; :data:`NOT_EXACT` where that might differ
    (or orjson refuses it: json decides). With ``floats=False`` a document that may hold a
    float is not taken either (a string or an integer always is)."""
    if has_long_number(data):
        return NOT_EXACT
    found = load_unchecked(data)
    if found is NOT_EXACT:
        return NOT_EXACT
    if floats or type(found) in _EXACT_TYPES or not _may_hold_float(data):
        return found
    return NOT_EXACT


def load_unchecked(data: bytes) -> Any:
    """What orjson reads from ``data`` (:data:`NOT_EXACT` where it refuses it), not checked for
    integers beyond 64 bits: json's reading when the result holds no float (such an integer
    becomes one) or :func:`has_long_number` is false."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return NOT_EXACT


def dump_scalar(value: str | int) -> bytes | _NotExact:
    """A string or a (non-bool) integer as compact json writes it, by orjson; NOT_EXACT for a
    lone surrogate or an integer beyond 64 bits."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return NOT_EXACT


def dumps(value: Any, *, has_floats: bool) -> bytes:
    """``value`` as ``JSONResponse`` writes it (json, compact, UTF-8), by orjson whenever that
    gives the same bytes: never with floats, whose forms differ."""
    if not has_floats:
        try:
            return orjson.dumps(value)
        except TypeError:  # an integer beyond 64 bits, a lone surrogate: json decides
            pass
    return json.dumps(
        value, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
    ).encode("utf-8")
