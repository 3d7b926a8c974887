"""``pafka_build_info``: the one definition every service exports, so a dashboard can tell which
version of pafka and of Python each process runs (and join it onto other series by component).

The process kind is the ``component`` label, not ``service``: Prometheus' Kubernetes discovery
gives every target a ``service`` label (the Service it was found through), which would rename
ours to ``exported_service`` and show Service names where a dashboard expects process kinds."""

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


def register_build_info(registry: CollectorRegistry, component: str) -> None:
    """Add ``pafka_build_info{component,version,python} 1`` to ``registry``."""
    if not component:
        raise ValueError("build info needs a component name")
    Gauge(
        BUILD_INFO,
        "pafka build: always 1, the labels carry the information",
        ["component", "version", "python"],
        registry=registry,
    ).labels(component, pafka_version(), platform.python_version()).set(1)
