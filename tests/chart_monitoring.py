"""The chart's alert rules and Grafana dashboard as `helm template` renders them, for the tests
that run them on Debian's promtool and Prometheus: what is tested is what ships."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
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


@dataclass(frozen=True)
class DashboardQuery:
    panel: str
    expr: str
    instant: bool  # a table's instant query; the others are Grafana range queries


def dashboard_queries(namespace: str) -> list[DashboardQuery]:
    """Every query of every panel, in the dashboard's order."""
    return [
        DashboardQuery(panel["title"], target["expr"], bool(target.get("instant")))
        for panel in dashboard(namespace)["panels"]
        if panel["type"] != "row"
        for target in panel["targets"]
    ]


def rate_interval_s(scrape_interval_s: float, interval_s: float) -> float:
    """Grafana's ``$__rate_interval``: the larger of ``$__interval`` plus the data source's
    scrape interval and four scrape intervals (so a rate always spans several samples)."""
    return max(interval_s + scrape_interval_s, 4 * scrape_interval_s)


def substitute(expr: str, variables: dict[str, str]) -> str:
    """``expr`` with Grafana's variables (``$name`` and ``${name}``) replaced as Grafana does,
    longest names first so ``$__rate_interval`` is not read as ``$__rate``."""
    for name in sorted(variables, key=len, reverse=True):
        expr = expr.replace("${" + name + "}", variables[name]).replace("$" + name, variables[name])
    leftover = re.search(r"\$\{?\w+", expr)
    if leftover:
        raise ValueError(f"no value for Grafana variable {leftover[0]} in {expr!r}")
    return expr
