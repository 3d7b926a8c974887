"""The controller's HTTP port: status, health, Prometheus metrics and groups' lag history."""

from __future__ import annotations

from collections.abc import Awaitable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from pafka.cluster.elect_leaders import ElectionType
from pafka.control.secret import LAG_HISTORY_PATH, RequireSecret
from pafka.errors import PafkaError
from services.controller.admin_api import Outcome
from services.controller.context import TopicPartition
from services.controller.controller import Controller


def create_app(controller: Controller) -> FastAPI:
    app = FastAPI(title="pafka controller", docs_url=None, redoc_url=None)
    app.add_middleware(RequireSecret, secret=controller.settings.control_secret)

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

    @app.post("/elect-leaders")
    async def elect_leaders(request: Request) -> JSONResponse:
        """ElectLeaders forwarded by a broker: {"election_type", "partitions" (null: all),
        "timeout_ms"} -> {"results": [[topic, partition, error_code, message], ...]}."""
        try:
            body = await request.json()
            kind = ElectionType(int(body["election_type"]))
            partitions = _partitions(body["partitions"])
            timeout_s = int(body.get("timeout_ms", 60_000)) / 1000
        except (ValueError, KeyError, TypeError):
            return _bad_request("expected {election_type, partitions, timeout_ms}")
        return await _outcome(controller.elect_leaders(kind, partitions, timeout_s))

    @app.post("/reassignments")
    async def alter_reassignments(request: Request) -> JSONResponse:
        """AlterPartitionReassignments forwarded by a broker: {"partitions": [[topic,
        partition, replicas or null], ...], "timeout_ms"} -> {"results": [...]}."""
        try:
            body = await request.json()
            targets = {
                (str(t), int(p)): None if r is None else tuple(int(b) for b in r)
                for t, p, r in body["partitions"]
            }
            timeout_s = int(body.get("timeout_ms", 60_000)) / 1000
        except (ValueError, KeyError, TypeError):
            return _bad_request("expected {partitions: [[topic, partition, replicas]], ...}")
        return await _outcome(controller.alter_reassignments(targets, timeout_s))

    @app.post("/reassignments/list")
    async def list_reassignments(request: Request) -> JSONResponse:
        """ListPartitionReassignments: {"partitions": [[topic, partition], ...] or null}."""
        try:
            wanted = _partitions((await request.json())["partitions"])
        except (ValueError, KeyError, TypeError):
            return _bad_request("expected {partitions: [[topic, partition]] or null}")
        try:
            return JSONResponse({"reassignments": controller.list_reassignments(wanted)})
        except PafkaError as exc:
            return _error(exc)

    @app.get(LAG_HISTORY_PATH)
    async def lag_history(group: str) -> JSONResponse:
        """``?group=``: its total lag over the window, oldest first (empty on a standby).
        Open like ``/metrics``, which exports the same lags."""
        history = controller.cluster_view.history
        return JSONResponse(
            {
                "active": controller.active,
                "window_ms": history.window_ms,
                "interval_ms": history.interval_ms,
                "points": [[p.time_ms, p.total_lag] for p in history.points(group)],
            }
        )

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


def _partitions(raw: object) -> list[TopicPartition] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise TypeError("partitions must be a list or null")
    return [(str(t), int(p)) for t, p in raw]


def _bad_request(message: str) -> JSONResponse:
    return JSONResponse({"error_code": 42, "message": message}, status_code=400)


def _error(exc: PafkaError) -> JSONResponse:
    return JSONResponse(
        {"error_code": exc.code, "message": exc.message}, status_code=exc.http_status
    )


async def _outcome(work: Awaitable[Outcome]) -> JSONResponse:
    try:
        outcome = await work
    except PafkaError as exc:
        return _error(exc)
    except TimeoutError:
        return JSONResponse({"error_code": 7, "message": "timed out"}, status_code=504)
    results = [
        [t, p, exc.code if exc else 0, exc.message if exc else None]
        for (t, p), exc in sorted(outcome.items())
    ]
    return JSONResponse({"results": results})
