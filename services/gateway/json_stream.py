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
# What the scan looks for: a quote or a bracket. Inside a string, the rest of it up to its
# closing quote (escapes skipped).
_TOKEN = re.compile(rb'["{}\[\]]')
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_WHITESPACE = re.compile(rb"[^ \t\n\r]")
_WHITESPACE = b" \t\n\r"
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_OPENERS = frozenset(b"{[")

Parsed = Any | RestError  # a value, or why its bytes are not one


class _Broken(RestError):
    """Bytes no value can start with: the stream ends here."""


class JsonStream:
    """Feed chunks, take values. :attr:`pending_bytes` is what waits for its value's end (the
    caller bounds it); :meth:`finish` refuses a value cut short by the end of the body. After
    bytes that cannot start a value, the last item :meth:`feed` gives is that refusal and
    :attr:`broken` holds it: nothing more is read.

    The scan of a value that spans chunks resumes where the last chunk left it (depth, and
    whether it is inside a string), so a value sent a byte at a time costs its length once,
    never its length per chunk."""

    def __init__(self) -> None:
        self._buffer = bytearray()  # from the start of the value in progress
        self._scanned = 0  # how far the value in progress was scanned
        self._depth = 0
        self._in_string = False
        self.broken: RestError | None = None

    @property
    def pending_bytes(self) -> int:
        return len(self._buffer)

    def feed(self, chunk: bytes) -> list[Parsed]:
        """The values completed by ``chunk``, in order."""
        if self.broken is not None:
            return []
        self._buffer += chunk
        found: list[Parsed] = []
        if self._scanned == 0:  # no value in progress: try the whole lines at once
            found = self._lines()
        found += self._scan()
        if found and isinstance(found[-1], _Broken):
            self.broken = found[-1]
            self._buffer.clear()
        return found

    def finish(self) -> None:
        """The body ended: raises :class:`RestError` if a value was left unfinished."""
        if self._buffer.strip(_WHITESPACE):
            raise RestError(MALFORMED_BODY, "the body ends inside a JSON value")

    def _lines(self) -> list[Parsed]:
        buffer = self._buffer
        end = buffer.rfind(b"\n")
        if end <= 0:
            return []
        lines = bytes(buffer[:end]).strip(_WHITESPACE)
        if lines[:1] != b"{" or lines[-1:] != b"}":
            return []
        joined, boundaries = _LINE_BOUNDARY.subn(b"},{", lines)
        values = exact_json.load(b"[" + joined + b"]")
        # As many values as boundaries found: no comma stood between two of them.
        if type(values) is not list or len(values) != boundaries + 1:
            return []
        del buffer[: end + 1]
        return values

    def _scan(self) -> list[Parsed]:
        """The values completed in the buffer; the scan state of the one in progress is kept,
        and the buffer cut to start with it."""
        buffer = self._buffer
        values: list[Parsed] = []
        start, position = 0, self._scanned  # the value in progress begins at ``start``
        while True:
            if self._in_string:
                closing = _STRING_REST.match(buffer, position)
                if closing is None:
                    # Resume at the last backslash of an odd run: its escape is incomplete.
                    tail = 0
                    while position + tail < len(buffer) and buffer[-1 - tail] == _BACKSLASH:
                        tail += 1
                    position = len(buffer) - (tail % 2)
                    break
                position, self._in_string = closing.end(), False
                continue
            if self._depth == 0:
                # Between values only whitespace may come, then an object (or an array).
                opening = _NOT_WHITESPACE.search(buffer, position)
                if opening is None:
                    start = position = len(buffer)
                    break
                start = opening.start()
                if buffer[start] not in _OPENERS:
                    snippet = bytes(buffer[start : start + 20])
                    values.append(
                        _Broken(MALFORMED_BODY, f"expected a JSON object, found {snippet!r}")
                    )
                    return values
                position = start
            token = _TOKEN.search(buffer, position)
            if token is None:
                position = len(buffer)
                break
            position = token.end()
            kind = buffer[token.start()]
            if kind == _QUOTE:
                self._in_string = True
            elif kind in _OPENERS:
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth == 0:
                    values.append(_parse(bytes(buffer[start:position])))
                    start = position
        del buffer[:start]
        self._scanned = position - start
        return values


def _parse(value: bytes) -> Parsed:
    try:
        return load_body(value)
    except RestError as refused:
        return refused
