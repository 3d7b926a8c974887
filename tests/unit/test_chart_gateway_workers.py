"""``gateway.workers``: worker processes per gateway pod, passed as PAFKA_GATEWAY_WORKERS."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest

from services.gateway.settings import GatewaySettings
from tests.unit.test_chart import KUBERNETES_VERSION, chart, lint, resolve_env
from tests.unit.test_chart_resources import pod, workloads


def gateway_env(values: dict[str, Any]) -> list[dict[str, Any]]:
    chart().validate_schema(values)
    deployment = workloads(values)["gateway"]
    kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
    env: list[dict[str, Any]] = pod(deployment)["containers"][0]["env"]
    return env


def workers_entries(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in gateway_env(values) if e["name"] == "PAFKA_GATEWAY_WORKERS"]


def test_by_default_the_gateway_sizes_itself() -> None:
    """No CPU limit: no variable, the process counts the CPUs it may use."""
    assert workers_entries({}) == []


def test_a_cpu_limit_gives_one_worker_per_cpu_rounded_up() -> None:
    (entry,) = workers_entries({"gateway": {"resources": {"limits": {"cpu": "1500m"}}}})
    assert entry["valueFrom"]["resourceFieldRef"] == {
        "containerName": "gateway",
        "resource": "limits.cpu",
        "divisor": "1",
    }
    # The kubelet renders 1500m with divisor 1 as "2", which the gateway reads.
    env = resolve_env([entry], {"limits.cpu": "2"})
    assert GatewaySettings.from_env(env).workers == 2


@pytest.mark.parametrize("workers", [3, "3"])
def test_workers_set_win_over_the_cpu_limit(workers: int | str) -> None:
    values = {"gateway": {"workers": workers, "resources": {"limits": {"cpu": "1"}}}}
    (entry,) = workers_entries(values)
    assert entry == {"name": "PAFKA_GATEWAY_WORKERS", "value": "3"}
    assert GatewaySettings.from_env(resolve_env([entry], {})).workers == 3
    report = lint(values)
    assert report["errors"] == [] and not [m for m in report["messages"] if m["severity"] >= 2]


@pytest.mark.parametrize(
    "values",
    [
        {"gateway": {"workers": 0}},
        {"gateway": {"workers": "0"}},
        {"gateway": {"workers": "two"}},
        {"gateway": {"workers": -1}},
        {"gateway": {"config": {"WORKERS": 4}}},
    ],
)
def test_schema_refuses_bad_workers(values: dict[str, Any]) -> None:
    with pytest.raises(helm.HelmValuesError):
        chart().validate_schema(values)
