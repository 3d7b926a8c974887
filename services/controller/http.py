"""The controller's HTTP port: status, health and Prometheus metrics."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from services.controller.controller import Controller


def create_app(controller: Controller) -> FastAPI:
    app = FastAPI(title="pafka controller", docs_url=None, redoc_url=None)

    @app.get("/status")
    async def status() -> JSONResponse:
        return JSONResponse(controller.status())

    @app.get("/livez")
    async def livez() -> Response:
        return PlainTextResponse("ok")

    @app.get("/readyz")
    async def readyz() -> Response:
        # Ready means usable as active or standby: connected to ZooKeeper.
        if controller.connected:
            return PlainTextResponse("active" if controller.active else "standby")
        return PlainTextResponse("not connected to ZooKeeper", status_code=503)

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(
            generate_latest(controller.metrics.registry), media_type=CONTENT_TYPE_LATEST
        )

    return app
