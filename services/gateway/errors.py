"""Errors to HTTP, once: every failure becomes a status and ``{"error_code", "message"}``.

The codes are Confluent REST Proxy's, which users' scripts already match on: the first three
digits are the HTTP status (40101 no or an unknown bearer token, 40301 a token without rights to
a topic, 40401 unknown topic, 40402 unknown partition, 40403 unknown consumer instance, 40601
format mismatch, 40901/40902 conflicts, 42201/42202 invalid key/value, 50000 a bug, 50002 a
Kafka error, 50003 a retriable one). A retriable failure is 503 with ``Retry-After``; a 401 carries
``WWW-Authenticate: Bearer``.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pafka.errors import (
    BrokerConnectionError,
    CoordinationError,
    KafkaApiError,
    PafkaError,
    RestError,
    UnknownTopicOrPartitionError,
)

log = logging.getLogger("pafka.gateway")

UNAUTHORIZED = 40101
FORBIDDEN = 40301
UNKNOWN_TOPIC = 40401
UNKNOWN_PARTITION = 40402
UNKNOWN_CONSUMER_INSTANCE = 40403
FORMAT_MISMATCH = 40601
CONSUMER_ALREADY_EXISTS = 40901
ILLEGAL_STATE = 40902
INVALID_KEY = 42201
INVALID_VALUE = 42202
INVALID_CONSUMER_CONFIG = 42204
INTERNAL_ERROR = 50000
ZOOKEEPER_ERROR = 50001
KAFKA_ERROR = 50002
KAFKA_RETRIABLE_ERROR = 50003
RETRY_AFTER_S = 1


def rest_code(exc: PafkaError) -> tuple[int, int]:
    """The HTTP status and REST error code of a domain error."""
    if isinstance(exc, RestError):
        return exc.http_status, exc.rest_code
    if isinstance(exc, UnknownTopicOrPartitionError):
        return 404, UNKNOWN_TOPIC
    if isinstance(exc, BrokerConnectionError):
        return 503, KAFKA_RETRIABLE_ERROR
    if isinstance(exc, CoordinationError):
        return 503, ZOOKEEPER_ERROR
    if isinstance(exc, KafkaApiError):
        if exc.retriable:
            return 503, KAFKA_RETRIABLE_ERROR
        if exc.http_status >= 500:
            return exc.http_status, KAFKA_ERROR
        return exc.http_status, exc.http_status * 100 + 1
    return exc.http_status, exc.http_status * 100


def error_response(status: int, code: int, message: str) -> JSONResponse:
    headers = None
    if status == 503:
        headers = {"Retry-After": str(RETRY_AFTER_S)}
    elif status == 401:
        headers = {"WWW-Authenticate": "Bearer"}
    return JSONResponse({"error_code": code, "message": message}, status, headers=headers)


def install(app: FastAPI) -> None:
    @app.exception_handler(PafkaError)
    async def domain(_: Request, exc: PafkaError) -> JSONResponse:
        status, code = rest_code(exc)
        return error_response(status, code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, 42200, _describe(exc.errors()))

    @app.exception_handler(HTTPException)
    async def http(_: Request, exc: HTTPException) -> JSONResponse:
        return error_response(exc.status_code, exc.status_code * 100, str(exc.detail))

    app.add_middleware(AnswerBugs)


class AnswerBugs:
    """An exception no handler took (a bug) is logged and answered with a 500 error body.

    Handled here rather than by Starlette's outermost handler, which re-raises to the server:
    uvicorn then closes the connection, and a client's next request on it fails.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception:
            if started:
                log.exception("bug answering %s %s", scope.get("method"), scope.get("path"))
                raise
            await bug_response(scope)(scope, receive, send)


def bug_response(scope: Scope) -> JSONResponse:
    """The 500 answer to a request whose answering failed with an exception no handler took
    (a bug), logged with its traceback: call it in the ``except`` block."""
    log.exception("bug answering %s %s", scope.get("method"), scope.get("path"))
    return error_response(500, INTERNAL_ERROR, "internal error (the gateway's log has the details)")


def _describe(errors: Any) -> str:
    parts = []
    for error in errors:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
        parts.append(f"{where}: {error.get('msg', 'invalid')}" if where else error.get("msg", ""))
    return "; ".join(parts) or "invalid request"
