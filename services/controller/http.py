"""The controller's HTTP port: status, health and Prometheus metrics."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from pafka.errors import PafkaError
from services.controller.controller import Controller


def create_app(controller: Controller) -> FastAPI:
    app = FastAPI(title="pafka controller", docs_url=None, redoc_url=None)

    @app.get("/status")
    async def status() -> JSONResponse:
        return JSONResponse(controller.status())

    @app.post("/controlled-shutdown")
    async def controlled_shutdown(request: Request) -> JSONResponse:
        try:
            body = await request.json()
            broker_id = int(body["broker_id"])
        except (ValueError, KeyError, TypeError):
            return JSONResponse(
                {"error_code": 42, "message": 'expected {"broker_id": <int>}'}, status_code=400
            )
        try:
            remaining = await controller.controlled_shutdown(broker_id, timeout_s=30)
        except PafkaError as exc:
            return JSONResponse(
                {"error_code": exc.code, "message": exc.message}, status_code=exc.http_status
            )
        except TimeoutError:
            return JSONResponse({"error_code": 7, "message": "timed out"}, status_code=504)
        return JSONResponse({"remaining": [[t, p] for t, p in remaining]})

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
