"""``pafka_build_info``: the one definition every service exports, so a dashboard can tell which
version of pafka and of Python each process runs (and join it onto other series by service)."""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version

from prometheus_client import CollectorRegistry, Gauge

BUILD_INFO = "pafka_build_info"


def pafka_version() -> str:
    try:
        return version("pafka")
    except PackageNotFoundError:
        # Running from a source tree that was never installed: say so rather than guess.
        return "unknown"


def register_build_info(registry: CollectorRegistry, service: str) -> None:
    """Add ``pafka_build_info{service,version,python} 1`` to ``registry``."""
    if not service:
        raise ValueError("build info needs a service name")
    Gauge(
        BUILD_INFO,
        "pafka build: always 1, the labels carry the information",
        ["service", "version", "python"],
        registry=registry,
    ).labels(service, pafka_version(), platform.python_version()).set(1)
