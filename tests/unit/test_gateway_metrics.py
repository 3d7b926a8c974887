"""The gateway's request metrics, on the in-process app (no cluster: only routes that need none)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.gateway.app import create_app
from services.gateway.metrics import GatewayMetrics
from services.gateway.settings import GatewaySettings


def _scrape(paths: list[str]) -> str:
    async def run() -> str:
        # A context that is never opened: /livez, /readyz and unknown paths do not use it.
        class Unopened:
            cluster: Any = type("Cluster", (), {"brokers": {}})()

        app = create_app(GatewaySettings(zookeeper=None), ctx=Unopened())  # type: ignore[arg-type]
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
            for path in paths:
                await client.get(path)
            return (await client.get("/metrics")).text

    return asyncio.run(run())


def test_requests_are_counted_by_route_template_method_and_status() -> None:
    text = _scrape(["/livez", "/livez", "/readyz", "/no/such/route"])
    assert 'http_requests_total{handler="/livez",method="GET",status="200"} 2.0' in text
    assert 'http_requests_total{handler="/readyz",method="GET",status="503"} 1.0' in text
    assert 'http_requests_total{handler="unmatched",method="GET",status="404"} 1.0' in text
    assert 'http_request_duration_seconds_count{handler="/livez",method="GET"} 2.0' in text
    build_info = next(line for line in text.splitlines() if line.startswith("pafka_build_info{"))
    assert 'component="gateway"' in build_info and 'python="' in build_info


def test_multiprocess_mode_reads_every_worker_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With PROMETHEUS_MULTIPROC_DIR set (by the worker supervisor), the registry a scrape
    renders is the files' sum, not this process's own metrics a second time."""
    from prometheus_client import generate_latest, values

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    monkeypatch.setattr(values, "ValueClass", values.get_value_class())
    first, second = GatewayMetrics(), GatewayMetrics()
    first.observe("/topics/{topic}", "POST", 200, 0.001)
    second.observe("/topics/{topic}", "POST", 200, 0.002)
    text = generate_latest(first.registry).decode()
    counted = 'http_requests_total{handler="/topics/{topic}",method="POST",status="200"} 2.0'
    assert counted in text
    assert text.count("\npafka_build_info{") == 1
    assert 'pid="' not in text
