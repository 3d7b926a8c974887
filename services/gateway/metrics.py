"""The gateway's Prometheus metrics: requests by route template, method and status, and their
latency in seconds (the names dashboards for HTTP services already use)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version

from fastapi import FastAPI, Request, Response
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class GatewayMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "http_requests",
            "HTTP requests answered",
            ["handler", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "http_request_duration_seconds",
            "Time to answer an HTTP request",
            ["handler", "method"],
            registry=self.registry,
        )
        Gauge(
            "pafka_build_info", "pafka build", ["service", "version"], registry=self.registry
        ).labels("gateway", version("pafka")).set(1)

    def install(self, app: FastAPI) -> None:
        @app.middleware("http")
        async def measure(
            request: Request, call_next: Callable[[Request], Awaitable[Response]]
        ) -> Response:
            started = time.perf_counter()
            response = await call_next(request)
            route = request.scope.get("route")
            handler = getattr(route, "path", "unmatched")
            self.requests.labels(handler, request.method, str(response.status_code)).inc()
            self.latency.labels(handler, request.method).observe(time.perf_counter() - started)
            return response
