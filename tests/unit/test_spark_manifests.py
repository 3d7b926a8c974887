"""The Kubernetes manifests of spark-jobs/: RBAC objects valid for the API server, and each
SparkApplication naming a job that exists, with arguments that job accepts, run under the
service account the RBAC grants."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

pytest.importorskip("pyspark")
kubernetes_validate = pytest.importorskip("kubernetes_validate")

JOBS = Path(__file__).resolve().parents[2] / "spark-jobs"
MANIFESTS = JOBS / "kubernetes"
APPLICATIONS = ["event-windows.yaml", "topic-to-parquet.yaml"]


def load(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d]


def job(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rbac_is_valid_and_binds_the_driver_account() -> None:
    docs = load("rbac.yaml")
    version = kubernetes_validate.utils.latest_version()
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)
    by_kind = {d["kind"]: d for d in docs}
    binding = by_kind["RoleBinding"]
    assert binding["roleRef"]["name"] == by_kind["Role"]["metadata"]["name"]
    assert binding["subjects"][0]["name"] == by_kind["ServiceAccount"]["metadata"]["name"]
    pods = next(r for r in by_kind["Role"]["rules"] if "pods" in r["resources"])
    assert {"create", "watch", "delete"} <= set(pods["verbs"])


@pytest.mark.parametrize("name", APPLICATIONS)
def test_spark_applications_run_real_jobs(name: str) -> None:
    (app,) = load(name)
    assert (app["apiVersion"], app["kind"]) == ("sparkoperator.k8s.io/v1beta2", "SparkApplication")
    spec = app["spec"]
    prefix = "local:///opt/pafka/"
    assert spec["mainApplicationFile"].startswith(prefix)
    path = JOBS.parent / spec["mainApplicationFile"][len(prefix) :]
    assert path.is_file()
    module = job(path)
    args = module.parse_args(spec["arguments"])
    assert args.gateway.startswith("http://")
    account = load("rbac.yaml")[0]["metadata"]["name"]
    assert spec["driver"]["serviceAccount"] == account
    assert f"serviceAccountName={account}" in (module.__doc__ or "")
    assert f"kubernetes/{name}" in (module.__doc__ or "")
