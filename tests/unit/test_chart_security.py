"""The chart's ZooKeeper credentials and control secret: mounted from existing Secrets, read
through the services' *_FILE settings, given only to what needs them."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from services.broker.settings import BrokerSettings
from services.controller.settings import ControllerSettings
from services.gateway.settings import GatewaySettings
from tests.unit.test_chart import (
    CHART,
    KUBERNETES_VERSION,
    NAMESPACE,
    RELEASE,
    chart,
    container,
    resolve_env,
)

POD_INDEX = "metadata.labels['apps.kubernetes.io/pod-index']"
SECURE = {
    "zookeeper": {"auth": {"existingSecret": "pafka-zk", "key": "zk-auth"}},
    "controlApi": {"existingSecret": "pafka-control", "key": "secret"},
    "provisioning": {"topics": [{"name": "orders"}]},
}


@cache
def workloads(secure: bool) -> dict[str, dict[str, Any]]:
    rendered = chart().render(
        SECURE if secure else {}, name=RELEASE, namespace=NAMESPACE, is_install=True
    )
    found = {}
    for path, text in rendered.items():
        for doc in yaml.safe_load_all(text) if path.endswith(".yaml") else ():
            if doc and doc["kind"] in ("StatefulSet", "Deployment", "Job"):
                found[doc["metadata"]["name"].removeprefix(f"{RELEASE}-pafka-")] = doc
    return found


def _files(workload: dict[str, Any], name: str) -> dict[str, str]:
    """Where each Secret's keys appear in the container: mount path / key -> Secret name."""
    spec = workload["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    files = {}
    for mount in container(workload, name).get("volumeMounts", []):
        secret = volumes.get(mount["name"], {}).get("secret")
        if secret:
            assert mount["readOnly"]
            for item in secret["items"]:
                files[f"{mount['mountPath']}/{item['path']}"] = secret["secretName"]
    return files


def _settings_env(
    workload: dict[str, Any], name: str, files: dict[str, str], tmp_path: Path
) -> dict[str, str]:
    """The container's environment with each mounted file replaced by a local copy."""
    fields = {"status.podIP": "10.0.0.1", POD_INDEX: "0", "metadata.name": "pod-0"}
    env = resolve_env(container(workload, name)["env"], fields)
    for key, value in env.items():
        if value in files:
            local = tmp_path / Path(value).name
            local.write_text("digest:pafka:pw" if "zookeeper" in value else "s3cret")
            env[key] = str(local)
    return env


def test_secrets_are_mounted_and_read_by_the_services(tmp_path: Path) -> None:
    made = workloads(True)
    broker, controller, gateway = made["broker"], made["controller"], made["gateway"]
    zk_file, control_file = "/etc/pafka/zookeeper/zk-auth", "/etc/pafka/control/secret"
    assert _files(broker, "broker") == {zk_file: "pafka-zk", control_file: "pafka-control"}
    assert _files(controller, "controller") == _files(broker, "broker")
    assert _files(gateway, "gateway") == {zk_file: "pafka-zk"}
    files = {zk_file: "", control_file: ""}
    b = BrokerSettings.from_env(_settings_env(broker, "broker", files, tmp_path))
    c = ControllerSettings.from_env(_settings_env(controller, "controller", files, tmp_path))
    g = GatewaySettings.from_env(_settings_env(gateway, "gateway", files, tmp_path))
    for settings in (b, c, g):
        assert settings.zk_security.auth is not None and settings.zk_security.set_acl
    assert b.control_secret == c.control_secret == "s3cret"
    (job,) = [w for n, w in made.items() if "topics" in n]
    (topic,) = job["spec"]["template"]["spec"]["containers"]
    assert {e["name"]: e["value"] for e in topic["env"]}["PAFKA_CLI_ZK_AUTH_FILE"] == zk_file


@pytest.mark.parametrize("name", ["broker", "controller", "gateway"])
def test_without_secrets_nothing_is_mounted(name: str) -> None:
    workload = workloads(False)[name]
    assert _files(workload, name) == {}
    names = [e["name"] for e in container(workload, name)["env"]]
    assert not [n for n in names if "ZK_AUTH" in n or "CONTROL_SECRET" in n]


def test_the_secure_chart_lints_and_validates() -> None:
    report = helm.lint(
        CHART, SECURE, strict=True, namespace=NAMESPACE, kube_version=f"v{KUBERNETES_VERSION}"
    )
    assert report["errors"] == [] and [m for m in report["messages"] if m["severity"] >= 2] == []
    for workload in workloads(True).values():
        kubernetes_validate.validate(workload, KUBERNETES_VERSION, strict=True)
