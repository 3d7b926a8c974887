"""The chart's alert rules and Grafana dashboard as `helm template` renders them, for the tests
that run them on Debian's promtool and Prometheus: what is tested is what ships."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

CHART = Path(__file__).resolve().parents[1] / "charts" / "pafka"
RELEASE = "demo"
MONITORING_ON = {
    "metrics": {
        "serviceMonitor": {"enabled": True},
        "prometheusRule": {"enabled": True},
        "grafanaDashboard": {"enabled": True},
    }
}


@cache
def _manifests(namespace: str, brokers: int) -> tuple[dict[str, Any], ...]:
    values = {**MONITORING_ON, "broker": {"replicaCount": brokers}}
    rendered = helm.Chart.load(CHART).render(
        values, name=RELEASE, namespace=namespace, is_install=True
    )
    return tuple(
        doc
        for path, text in sorted(rendered.items())
        if not path.endswith("NOTES.txt")
        for doc in yaml.safe_load_all(text)
        if doc
    )


def rule_groups(namespace: str, brokers: int = 3) -> list[dict[str, Any]]:
    """The PrometheusRule's groups: a Prometheus rule file is ``{"groups": these}``."""
    (rule,) = [d for d in _manifests(namespace, brokers) if d["kind"] == "PrometheusRule"]
    groups: list[dict[str, Any]] = rule["spec"]["groups"]
    return groups


def write_rule_file(path: Path, namespace: str, brokers: int = 3) -> Path:
    path.write_text(yaml.safe_dump({"groups": rule_groups(namespace, brokers)}, sort_keys=False))
    return path


def alerts(namespace: str, brokers: int = 3) -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for g in rule_groups(namespace, brokers) for r in g["rules"]}


def dashboard(namespace: str) -> dict[str, Any]:
    """The Grafana dashboard the chart's ConfigMap carries."""
    (config_map,) = [
        d
        for d in _manifests(namespace, 3)
        if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard")
    ]
    (text,) = config_map["data"].values()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def broker_pod(ordinal: int) -> str:
    """The broker StatefulSet's pod name the alert rules match (``<fullname>-broker-N``)."""
    return f"{RELEASE}-pafka-broker-{ordinal}"
