"""Bulk reads over the standard library's ``http.client``: a large answer read in one piece.

A range read in the batch format brings up to the gateway's byte cap of one read (8 MiB by
default) at once. httpx passes such a body through h11 64 KiB at a time, copying every piece
twice, at about six times the CPU of ``http.client``, which reads the declared length straight
into one buffer; in a Spark task that difference was a seventh of the read. Everything else
the connector asks (metadata, JSON pages, produce) stays on httpx: small bodies.

Answers are returned as ``httpx.Response`` and failures to reach a gateway raised as
``httpx.TransportError``, so the caller's retries, failover and error mapping are the same for
both transports. TLS uses httpx's default context (the same trust store and ``SSL_CERT_FILE``).
"""

from __future__ import annotations

import http.client
import socket
import ssl
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import urlencode, urlsplit

import httpx

# How a kept connection the gateway closed while it was idle fails, at once: the GET changes
# nothing, so it goes again, once, on a new connection.
_STALE = (ConnectionResetError, BrokenPipeError)


class BulkHttp:
    """GET requests over one kept-alive connection per gateway (not thread-safe: one per
    Spark task, like the :class:`~pafka.spark.gateway.GatewayClient` that holds it)."""

    def __init__(
        self, *, timeout_s: float, connect_timeout_s: float, headers: Mapping[str, str]
    ) -> None:
        self._timeout_s = timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._headers = dict(headers)
        self._connections: dict[str, http.client.HTTPConnection] = {}
        self._tls: ssl.SSLContext | None = None

    def get(
        self, url: str, *, params: Mapping[str, Any], headers: Mapping[str, str]
    ) -> httpx.Response:
        split = urlsplit(url)
        origin = f"{split.scheme}://{split.netloc}"
        target = f"{split.path or '/'}?{urlencode(params)}"
        sent = {**self._headers, **headers}
        reused = origin in self._connections
        while True:
            connection = self._connection(origin, split.scheme, split.hostname, split.port)
            try:
                if connection.sock is None:
                    # A gateway that does not answer is given up on (and the next one tried)
                    # sooner than one slow to send a large answer.
                    connection.connect()
                    cast(socket.socket, connection.sock).settimeout(self._timeout_s)
                connection.request("GET", target, headers=sent)
                answer = connection.getresponse()
                body = answer.read()
            except (OSError, http.client.HTTPException) as exc:
                self._drop(origin)
                if reused and isinstance(exc, _STALE):
                    reused = False
                    continue
                raise httpx.TransportError(f"GET {url}: {type(exc).__name__}: {exc}") from exc
            if answer.will_close:
                self._drop(origin)
            return httpx.Response(
                answer.status,
                headers=answer.getheaders(),
                content=body,
                request=httpx.Request("GET", url),
            )

    def _connection(
        self, origin: str, scheme: str, host: str | None, port: int | None
    ) -> http.client.HTTPConnection:
        connection = self._connections.get(origin)
        if connection is None:
            if scheme == "https":
                if self._tls is None:
                    self._tls = httpx.create_ssl_context()
                connection = http.client.HTTPSConnection(
                    host or "", port, timeout=self._connect_timeout_s, context=self._tls
                )
            else:
                connection = http.client.HTTPConnection(
                    host or "", port, timeout=self._connect_timeout_s
                )
            self._connections[origin] = connection
        return connection

    def _drop(self, origin: str) -> None:
        connection = self._connections.pop(origin, None)
        if connection is not None:
            connection.close()

    def close(self) -> None:
        for origin in list(self._connections):
            self._drop(origin)
