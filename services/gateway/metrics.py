"""The gateway's Prometheus metrics: requests by route template, method and status, and their
latency in seconds (the names dashboards for HTTP services already use), and the follow reads
streaming now.

Measured by a plain ASGI middleware: Starlette's ``BaseHTTPMiddleware`` runs every request
through a task group and a memory stream, which cost more than the produce route itself.

With worker processes (``workers.py``) every worker writes its values to files in the
directory ``PROMETHEUS_MULTIPROC_DIR`` names (prometheus_client's multiprocess mode), and
``registry`` reads them all at each scrape: counters and histograms summed over the workers,
those of workers that died included (so totals never go back), and the build info gauge once.
"""

from __future__ import annotations

import os
import time
from typing import Any

from fastapi import FastAPI
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pafka.build_info import register_build_info

MULTIPROCESS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


class GatewayMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        shared_dir = os.environ.get(MULTIPROCESS_DIR_ENV)
        # In multiprocess mode the values live in files, read by the collector; registering
        # the metrics themselves too would export this worker's values a second time.
        own = CollectorRegistry() if shared_dir else self.registry
        if shared_dir:
            MultiProcessCollector(self.registry, path=shared_dir)
        self.requests = Counter(
            "http_requests",
            "HTTP requests answered",
            ["handler", "method", "status"],
            registry=own,
        )
        self.latency = Histogram(
            "http_request_duration_seconds",
            "Time to answer an HTTP request",
            ["handler", "method"],
            registry=own,
        )
        # Open now, summed over the live workers (their answers are not requests answered yet).
        self.follow_reads = Gauge(
            "pafka_gateway_follow_reads",
            "Follow reads (range reads with follow=true) streaming now",
            registry=own,
            multiprocess_mode="livesum",
        )
        # The same value in every worker: shown once ("max"), not once per worker process.
        register_build_info(own, "gateway", multiprocess_mode="max")
        # Label lookups hash and lock; the few combinations a gateway sees are kept here.
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def observe(self, handler: str, method: str, status: int, seconds: float) -> None:
        key = (handler, method, status)
        children = self._children.get(key)
        if children is None:
            children = (
                self.requests.labels(handler, method, str(status)),
                self.latency.labels(handler, method),
            )
            self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def install(self, app: FastAPI) -> None:
        app.add_middleware(_Measure, metrics=self)

    def measured(self, app: ASGIApp) -> ASGIApp:
        """``app`` measured as :meth:`install` measures the whole app."""
        return _Measure(app, self)


class _Measure:
    def __init__(self, app: ASGIApp, metrics: GatewayMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets if the app fails before answering

        async def answering(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, answering)
        finally:
            # The router leaves the matched route in the scope: label by its template.
            handler = getattr(scope.get("route"), "path", "unmatched")
            self.metrics.observe(handler, scope["method"], status, time.perf_counter() - started)
