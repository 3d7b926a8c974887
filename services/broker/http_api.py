"""The broker's HTTP port: the controller's control API, health and Prometheus metrics.

Errors are mapped to HTTP once, here: a :class:`PafkaError` becomes its ``http_status`` with
``{"error_code", "message"}``; a stale controller epoch is 409 with error code 11.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from pafka.control import messages as control
from pafka.control.secret import RequireSecret
from pafka.errors import InvalidRequestError, PafkaError

log = logging.getLogger(__name__)


class ControlHandler(Protocol):
    """What the HTTP layer needs from the broker (implemented by ``Broker``)."""

    async def on_leader_and_isr(self, request: control.LeaderAndIsr) -> dict[str, int]: ...

    async def on_update_metadata(self, request: control.UpdateMetadata) -> dict[str, int]: ...

    async def on_stop_replica(self, request: control.StopReplica) -> dict[str, int]: ...

    def is_live(self) -> bool: ...

    def readiness(self) -> tuple[bool, str]: ...

    def status(self) -> dict[str, Any]: ...


async def _body(request: Request) -> dict[str, Any]:
    try:
        payload = json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidRequestError(f"control request is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise InvalidRequestError("control request must be a JSON object")
    return payload


def create_app(handler: ControlHandler, registry: Any, secret: str | None = None) -> FastAPI:
    """``secret``: every route but the probes and metrics needs it (``pafka.control.secret``)."""
    app = FastAPI(title="pafka broker", docs_url=None, redoc_url=None)
    app.add_middleware(RequireSecret, secret=secret)

    @app.exception_handler(PafkaError)
    async def pafka_error(_: Request, exc: PafkaError) -> JSONResponse:
        return JSONResponse(
            {"error_code": exc.code, "message": exc.message}, status_code=exc.http_status
        )

    def route(
        decode: Callable[[dict[str, Any]], Any],
        call: Callable[[Any], Awaitable[dict[str, int]]],
    ) -> Callable[[Request], Awaitable[JSONResponse]]:
        async def endpoint(request: Request) -> JSONResponse:
            errors = await call(decode(await _body(request)))
            body = control.encode(control.ControlResponse(partition_errors=errors))
            return JSONResponse(body)

        return endpoint

    app.add_api_route(
        control.LEADER_AND_ISR,
        route(control.decode_leader_and_isr, handler.on_leader_and_isr),
        methods=["POST"],
    )
    app.add_api_route(
        control.UPDATE_METADATA,
        route(control.decode_update_metadata, handler.on_update_metadata),
        methods=["POST"],
    )
    app.add_api_route(
        control.STOP_REPLICA,
        route(control.decode_stop_replica, handler.on_stop_replica),
        methods=["POST"],
    )

    @app.get("/livez")
    async def livez() -> Response:
        ok = handler.is_live()
        return PlainTextResponse("ok" if ok else "not live", status_code=200 if ok else 503)

    @app.get("/readyz")
    async def readyz() -> Response:
        ok, why = handler.readiness()
        return PlainTextResponse(why, status_code=200 if ok else 503)

    @app.get("/status")
    async def status() -> JSONResponse:
        return JSONResponse(handler.status())

    @app.get("/metrics")
    async def metrics(request: Request) -> Response:
        # ``?name[]=...`` selects series by name, as prometheus_client's own exposition does:
        # a reader of a few counters need not make a broker render every partition's series.
        names = request.query_params.getlist("name[]")
        chosen = registry.restricted_registry(names) if names else registry
        return Response(generate_latest(chosen), media_type=CONTENT_TYPE_LATEST)

    return app
