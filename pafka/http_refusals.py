"""Requests the HTTP parser refuses, answered with the error body of every other refusal.

uvicorn answers a request httptools cannot parse with a plain-text 400 ("Invalid HTTP request
received.") and closes the connection, so a REST client that reads ``error_code`` from every
error got no body it could read. And one refusal is not about a malformed request at all: a URL
longer than httptools parses (64 KiB; a query naming many topics reaches it) is too long, 414
URI Too Long, as Jetty (Kafka REST Proxy's server) answers a request line over its limit.

:class:`RefusalAnsweringProtocol` answers both as the services answer any refusal, a JSON
``{"error_code": status * 100, "message": ...}`` (``connection: close``, since the rest of the
stream cannot be trusted), and stops reading a URL as soon as it is too long, instead of
buffering it whole first.
"""

from __future__ import annotations

import json

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

MAX_URL_BYTES = 65_535  # what httptools.parse_url accepts
URI_TOO_LONG = 414
BAD_REQUEST = 400


class UrlTooLong(Exception):
    """Raised from the parser's URL callback: httptools then stops and reports a parse error."""


def refusal(status: int, message: str, headers: list[tuple[bytes, bytes]]) -> bytes:
    """The whole HTTP answer to a refused request: status, the server's default ``headers``,
    a JSON error body, and close."""
    body = json.dumps({"error_code": status * 100, "message": message}).encode()
    return b"".join(
        [
            STATUS_LINE[status],
            *(b"%s: %s\r\n" % header for header in headers),
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
            body,
        ]
    )


class RefusalAnsweringProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, answering parse refusals with an error body."""

    _refused_status = BAD_REQUEST

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > MAX_URL_BYTES:
            self._refused_status = URI_TOO_LONG
            raise UrlTooLong

    def send_400_response(self, msg: str) -> None:
        status = self._refused_status
        if status == URI_TOO_LONG:
            message = f"the request URL is longer than {MAX_URL_BYTES} bytes"
        else:
            message = "malformed HTTP request (the HTTP parser refused it)"
        self.transport.write(refusal(status, message, self.server_state.default_headers))
        self.transport.close()
