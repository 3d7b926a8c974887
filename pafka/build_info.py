"""``pafka_build_info``: the one definition every service exports, so a dashboard can tell which
version of pafka and of Python each process runs (and join it onto other series by component).

The process kind is the ``component`` label, not ``service``: Prometheus' Kubernetes discovery
gives every target a ``service`` label (the Service it was found through), which would rename
ours to ``exported_service`` and show Service names where a dashboard expects process kinds."""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version
from typing import Literal

from prometheus_client import CollectorRegistry, Gauge

BUILD_INFO = "pafka_build_info"
MultiprocessMode = Literal["all", "liveall", "min", "livemin", "max", "livemax", "sum", "livesum"]


def pafka_version() -> str:
    try:
        return version("pafka")
    except PackageNotFoundError:
        # Running from a source tree that was never installed: say so rather than guess.
        return "unknown"


def register_build_info(
    registry: CollectorRegistry, component: str, *, multiprocess_mode: MultiprocessMode = "all"
) -> None:
    """Add ``pafka_build_info{component,version,python} 1`` to ``registry``;
    ``multiprocess_mode`` is how prometheus_client's multiprocess mode aggregates it."""
    if not component:
        raise ValueError("build info needs a component name")
    Gauge(
        BUILD_INFO,
        "pafka build: always 1, the labels carry the information",
        ["component", "version", "python"],
        registry=registry,
        multiprocess_mode=multiprocess_mode,
    ).labels(component, pafka_version(), platform.python_version()).set(1)
