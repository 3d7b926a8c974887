"""The commonest produce bodies read without a JSON parse: keyless string values written as
compact JSON.

A program producing in bulk (the bench's producers, a script calling ``orjson.dumps`` or
``JSON.stringify``) posts ``{"records":[{"value":"..."},{"value":"..."}]}``, with no spaces.
Parsing that builds a dict and a string per record only for :mod:`plain_columns` to take the
strings back out (and, for the JSON format, to write each one back as JSON); here the body's
bytes are cut at the text between the values instead.

Nothing is read differently, and anything else (spaces, keys, other fields, too few or too
many records, a refusal) is left to the parse, which words every refusal:

* binary (:func:`compact_columns`): the cut is taken only when every value then decodes as
  base64 (no quote, backslash or other character outside the alphabet can be inside one, so
  the body is exactly that JSON), values of one size decoded in one call as the parse decodes
  its column (``plain_columns.decode_base64_column``);
* JSON (:func:`compact_json_strings`): a JSON value is stored as compact JSON, and a string
  with no escape, control character or quote inside is stored as the body holds it, quotes
  included: the values are the body's own slices. The cut is taken only when the text is valid
  UTF-8 with no backslash or control character anywhere, and every quote in it is one of the
  form's own, so the body is exactly that JSON.
"""

from __future__ import annotations

from services.gateway.plain_columns import PlainColumns, decode_base64_column

_PREFIX = b'{"records":[{"value":"'
_SUFFIX = b'"}]}'
_BETWEEN = '"},{"value":"'

# The JSON cut keeps each value's quotes: the text from the first value's opening quote to the
# last one's closing quote, cut at what lies between one closing quote and the next opening one.
_VALUES_FROM = len(_PREFIX) - 1
_VALUES_TO = -(len(_SUFFIX) - 1)
_BETWEEN_QUOTED = b'},{"value":'
_BETWEEN_WHOLE = _BETWEEN.encode()
_QUOTES_BETWEEN = _BETWEEN_WHOLE.count(b'"')
# Every byte a string must escape (a control character) read as the escape's backslash: one
# translation and one search find both.
_ESCAPES_AS_BACKSLASH = bytes(92 if byte < 0x20 else byte for byte in range(256))


def compact_columns(body: bytes, min_records: int, max_records: int) -> PlainColumns | None:
    """The columns of ``body`` when it is the compact keyless form of ``min_records`` to
    ``max_records`` base64 values; None for the parse to read it."""
    if not (body.startswith(_PREFIX) and body.endswith(_SUFFIX)):
        return None
    try:
        texts = body[len(_PREFIX) : -len(_SUFFIX)].decode("ascii").split(_BETWEEN)
    except UnicodeDecodeError:
        return None
    if not min_records <= len(texts) <= max_records:
        return None
    values = decode_base64_column(texts)
    return None if values is None else PlainColumns(None, values)


def compact_json_strings(body: bytes, min_records: int, max_records: int) -> PlainColumns | None:
    """The columns of ``body`` when it is the compact keyless form of ``min_records`` to
    ``max_records`` string values needing no escape, each stored as the body writes it;
    None for the parse to read it."""
    if not (body.startswith(_PREFIX) and body.endswith(_SUFFIX)):
        return None
    quoted = body[_VALUES_FROM:_VALUES_TO]
    values = quoted.split(_BETWEEN_QUOTED)
    count = len(values)
    if not min_records <= count <= max_records:
        return None  # first: a one-record body costs the split alone
    if b"\\" in quoted.translate(_ESCAPES_AS_BACKSLASH):
        return None
    if not quoted.isascii():
        try:
            quoted.decode("utf-8")  # as the parse refuses it: no surrogate, no overlong form
        except UnicodeDecodeError:
            return None
    # Each cut lies between a closing and an opening quote, and the only quotes are those
    # (the first value's opening one and the last one's closing one besides): no value holds
    # a quote, so none ends early and the cuts are the form's own.
    between = count - 1
    if (
        quoted.count(_BETWEEN_WHOLE) != between
        or quoted.count(b'"') != 2 + between * _QUOTES_BETWEEN
    ):
        return None
    return PlainColumns(None, values)
