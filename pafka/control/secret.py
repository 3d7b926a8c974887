"""The shared secret that authenticates the control APIs (controller ↔ brokers over HTTP).

When a secret is configured, every request to a broker's or controller's HTTP port except the
probes and the scrape (``/livez``, ``/readyz``, ``/metrics``, ``/lag-history``) must carry
``Authorization: Bearer <secret>``; anything else is answered 401 before any handler runs, so
it changes nothing. The comparison takes constant time. Without a secret nothing is checked,
as before. The error body is the services' usual ``{"error_code", "message"}``, with Kafka's
CLUSTER_AUTHORIZATION_FAILED, which Kafka answers to an unauthorized LeaderAndIsr.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from pafka.errors import ClusterAuthorizationFailedError

# The controller's record of groups' lag is open as the scrape is: it tells what /metrics does.
LAG_HISTORY_PATH = "/lag-history"
OPEN_PATHS = frozenset({"/livez", "/readyz", "/metrics", LAG_HISTORY_PATH})
SCHEME = "bearer"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def bearer_headers(secret: str | None) -> dict[str, str]:
    """The headers a caller sends: none without a secret."""
    return {} if secret is None else {"Authorization": f"Bearer {secret}"}


def presented_secret(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (scheme case-insensitive)."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != SCHEME or not token:
        return None
    return token


def authorized(path: str, authorization: str | None, secret: str | None) -> bool:
    if secret is None or path in OPEN_PATHS:
        return True
    token = presented_secret(authorization)
    # compare_digest takes time independent of where the bytes differ; an absent token is
    # compared too, so its answer takes as long as a wrong one's.
    return hmac.compare_digest((token or "").encode(), secret.encode()) and token is not None


class RequireSecret:
    """ASGI middleware refusing requests without the secret (``app.add_middleware``)."""

    def __init__(self, app: AsgiApp, secret: str | None) -> None:
        self.app = app
        self.secret = secret

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or authorized(
            scope.get("path", ""), _header(scope, b"authorization"), self.secret
        ):
            await self.app(scope, receive, send)
            return
        error = ClusterAuthorizationFailedError("the control API needs its shared secret")
        body = json.dumps({"error_code": error.code, "message": error.message}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b"Bearer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None
