"""Concatenated JSON split into its values as the bytes arrive (sans-I/O, pure).

A streaming produce body is JSON objects back to back, whitespace between them or not
(Confluent's "concatenated JSON"). :class:`JsonStream` takes the body's chunks as they come and
hands back each complete value, parsed as every other gateway body is (:func:`load_body`: orjson
where it reads exactly what json reads). A value that is not valid JSON is handed back as its
:class:`RestError`, so one bad record is answered as such and the stream goes on; only bytes
that cannot start a value end the stream, as nothing after them can be told apart.

Most clients write one value a line. A newline cannot occur inside a JSON string, and between
values of an object or an array ``}`` and ``{`` are always parted by a comma, so in the part of
the buffer up to its last newline each ``}`` + whitespace holding a newline + ``{`` is a
boundary: that part is read in one call as an array. Anything else (values parted by spaces
only, a value spanning lines, a value orjson cannot read exactly) is split by a scan of the
strings and brackets.
"""

from __future__ import annotations

import re
from typing import Any

from pafka.errors import RestError
from services.gateway import exact_json
from services.gateway.formats import MALFORMED_BODY, load_body

_LINE_BOUNDARY = re.compile(rb"}[ \t\r]*\n[ \t\n\r]*{")
# A complete string (escapes included), an opening quote whose string has not all arrived, or
# a bracket: everything the scan needs to find where a value ends.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|"|[{}\[\]]')
_OPENERS = frozenset(b"{[")
_CLOSERS = frozenset(b"}]")
_NOT_WHITESPACE = re.compile(rb"[^ \t\n\r]")
_WHITESPACE = b" \t\n\r"

_QUOTE = ord('"')

Parsed = Any | RestError  # a value, or why its bytes are not one


class _Broken(RestError):
    """Bytes no value can start with: the stream ends here."""


class JsonStream:
    """Feed chunks, take values. :attr:`pending_bytes` is what waits for its value's end (the
    caller bounds it); :meth:`finish` refuses a value cut short by the end of the body. After
    bytes that cannot start a value, the last item :meth:`feed` gives is that refusal and
    :attr:`broken` holds it: nothing more is read."""

    def __init__(self) -> None:
        self._buffer = b""
        self.broken: RestError | None = None

    @property
    def pending_bytes(self) -> int:
        return len(self._buffer)

    def feed(self, chunk: bytes) -> list[Parsed]:
        """The values completed by ``chunk``, in order."""
        if self.broken is not None:
            return []
        buffer = self._buffer + chunk if self._buffer else chunk
        found: list[Parsed] = []
        end = buffer.rfind(b"\n")
        if end > 0:
            lines = buffer[:end].strip(_WHITESPACE)
            if lines[:1] == b"{" and lines[-1:] == b"}":
                joined, boundaries = _LINE_BOUNDARY.subn(b"},{", lines)
                values = exact_json.load(b"[" + joined + b"]")
                # As many values as boundaries found: no comma stood between two of them.
                if type(values) is list and len(values) == boundaries + 1:
                    found, buffer = values, buffer[end + 1 :]
        self._buffer, more = _split(buffer)
        found.extend(more)
        if more and isinstance(more[-1], _Broken):
            self.broken = more[-1]
            self._buffer = b""
        return found

    def finish(self) -> None:
        """The body ended: raises :class:`RestError` if a value was left unfinished."""
        if self._buffer.strip(_WHITESPACE):
            raise RestError(MALFORMED_BODY, "the body ends inside a JSON value")


def _split(buffer: bytes) -> tuple[bytes, list[Parsed]]:
    """The complete values at the start of ``buffer``, and the rest of it (a value begun)."""
    values: list[Parsed] = []
    start = depth = position = 0
    while True:
        if depth == 0:
            # Between values only whitespace may come, then an object (or an array).
            opening = _NOT_WHITESPACE.search(buffer, position)
            if opening is None:
                return b"", values
            position = start = opening.start()
            if buffer[position] not in _OPENERS:
                snippet = buffer[position : position + 20]
                values.append(_Broken(MALFORMED_BODY, f"expected a JSON object, found {snippet!r}"))
                return b"", values
        match = _TOKEN.search(buffer, position)
        if match is None or (match.end() - match.start() == 1 and buffer[match.start()] == _QUOTE):
            return buffer[start:], values  # the value goes on in a later chunk
        position = match.end()
        token = buffer[match.start()]
        if token in _OPENERS:
            depth += 1
        elif token in _CLOSERS:
            depth -= 1
            if depth == 0:
                values.append(_parse(buffer[start:position]))


def _parse(value: bytes) -> Parsed:
    try:
        return load_body(value)
    except RestError as refused:
        return refused
