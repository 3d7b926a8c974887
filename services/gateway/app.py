"""The gateway app factory: ``create_app(settings)`` wires routers, errors, metrics and health.

The lifespan opens the ZooKeeper session and the broker client and closes them; routers are one
module per resource under ``routers/`` and take what they need through ``Depends(context)``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.types import Receive, Scope, Send

from services.gateway import access, auth, console, docs, errors
from services.gateway.context import GatewayContext, open_context
from services.gateway.formats import ErrorBody
from services.gateway.hotpath import HotPath
from services.gateway.metrics import GatewayMetrics
from services.gateway.routers import ROUTERS
from services.gateway.settings import GatewaySettings

DESCRIPTION = """REST access to pafka: produce and read records, consumer groups, administration.

Compatible with Confluent REST Proxy v2 (content types `application/vnd.kafka.json.v2+json`,
`application/vnd.kafka.binary.v2+json`, and plain `application/json`), plus stateless range
reads and native group membership. Any gateway replica serves any request: nothing about a
consumer is kept in a gateway's memory. Errors are `{"error_code": ..., "message": ...}`.
"""


class GatewayApp(FastAPI):
    """FastAPI with the record routes' hot path (``hotpath.py``) in front of its stack."""

    hot: HotPath | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.hot is not None and self.hot.wants(scope):
            await self.hot.serve(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def create_app(settings: GatewaySettings, ctx: GatewayContext | None = None) -> GatewayApp:
    """The app; with ``ctx`` (already open, closed by the caller) the lifespan opens nothing."""
    metrics = GatewayMetrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        opened = ctx if ctx is not None else await open_context(settings)
        app.state.ctx = opened
        try:
            yield
        finally:
            if ctx is None:
                await opened.close()

    # Credentials and rights, when configured, guard every route but health, metrics and docs.
    tokens = auth.load_tokens(settings)
    guarded = tokens is not None or settings.basic_auth or bool(settings.authorizer)

    def opened_context() -> GatewayContext | None:
        return getattr(app.state, "ctx", None)

    guard = access.request_guard(
        tokens,
        lambda: c.basic if (c := opened_context()) else None,
        lambda: c.authorizer if (c := opened_context()) else None,
    )
    app = GatewayApp(
        title="pafka gateway",
        description=DESCRIPTION,
        lifespan=lifespan,
        # Served by docs.install with assets of the package's own, not a CDN's.
        docs_url=None,
        redoc_url=None,
        dependencies=[Depends(guard)] if guarded else [],
        responses={
            401: {"model": ErrorBody, "description": "No or unknown credentials (40101)"},
            403: {"model": ErrorBody, "description": "Not allowed by the ACLs or token (40301)"},
        }
        if guarded
        else {},
    )
    if ctx is not None:
        # The service runs uvicorn without lifespan events (it owns start-up and shutdown).
        app.state.ctx = ctx
    errors.install(app)
    metrics.install(app)
    app.state.metrics = metrics  # for answers that measure themselves (follow reads)
    docs.install(app)
    console.install(app)
    for router in ROUTERS:
        app.include_router(router)

    @app.get("/livez", include_in_schema=False)
    async def livez() -> PlainTextResponse:
        return PlainTextResponse("ok")

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> JSONResponse:
        opened: GatewayContext | None = getattr(app.state, "ctx", None)
        if opened is None or not opened.cluster.brokers:
            return JSONResponse({"ready": False, "reason": "no broker known"}, 503)
        return JSONResponse({"ready": True, "brokers": sorted(opened.cluster.brokers)})

    @app.get("/metrics", include_in_schema=False)
    async def prometheus() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    app.hot = HotPath(app, guard if guarded else None, metrics)
    return app
