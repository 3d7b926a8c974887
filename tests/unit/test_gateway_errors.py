"""The gateway's error answers: every failure, a bug included, is a status and an error body."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest
from fastapi import FastAPI

from pafka.errors import NotCoordinatorError, RestError
from services.gateway import errors


def answers(*paths: str) -> list[httpx.Response]:
    app = FastAPI()
    errors.install(app)

    @app.get("/bug")
    async def bug() -> None:
        raise RuntimeError("a bug")

    @app.get("/unauthorized")
    async def unauthorized() -> None:
        raise RestError(errors.UNAUTHORIZED, "a bearer token is required")

    @app.get("/retriable")
    async def retriable() -> None:
        raise NotCoordinatorError()

    async def run() -> list[httpx.Response]:
        # The default transport re-raises what escapes the app: nothing may.
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
            return [await client.get(path) for path in paths]

    return asyncio.run(run())


def test_a_bug_is_a_500_error_body_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="pafka.gateway"):
        (got,) = answers("/bug")
    assert got.status_code == 500
    assert got.json()["error_code"] == errors.INTERNAL_ERROR
    assert "a bug" not in got.text
    assert any(r.exc_info and "GET /bug" in r.getMessage() for r in caplog.records)


def test_statuses_carry_their_headers() -> None:
    unauthorized, retriable, missing = answers("/unauthorized", "/retriable", "/missing")
    assert unauthorized.status_code == 401
    assert unauthorized.headers["WWW-Authenticate"] == "Bearer"
    assert unauthorized.json() == {"error_code": 40101, "message": "a bearer token is required"}
    assert retriable.status_code == 503 and retriable.headers["Retry-After"] == "1"
    assert retriable.json()["error_code"] == errors.KAFKA_RETRIABLE_ERROR
    assert missing.status_code == 404 and missing.json()["error_code"] == 40400
