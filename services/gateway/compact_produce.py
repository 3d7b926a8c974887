"""The commonest produce body read without a JSON parse: keyless base64 values written as
compact JSON.

A program producing in bulk (the bench's producers, a script calling ``orjson.dumps`` or
``JSON.stringify``) posts ``{"records":[{"value":"..."},{"value":"..."}]}``, with no spaces.
Parsing that builds a dict and a string per record only for :mod:`plain_columns` to take the
strings back out; here the body's bytes are cut at the text between the values instead, and the
values decoded as the parse decodes its column (``plain_columns.decode_base64_column``, values
of one size in one call).

Nothing is read differently: the cut is taken only when every value then decodes as base64
(no quote, backslash or other character outside the alphabet can be inside one, so the body
is exactly that JSON), and anything else (spaces, keys, other fields, too few or too many
records, a refusal) is left to the parse, which words every refusal.
"""

from __future__ import annotations

from services.gateway.plain_columns import PlainColumns, decode_base64_column

_PREFIX = b'{"records":[{"value":"'
_SUFFIX = b'"}]}'
_BETWEEN = '"},{"value":"'


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
