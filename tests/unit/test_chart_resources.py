"""The chart's resources (CPU limits as an option), images pinned by digest, and ZooKeeper's
configuration directory: the image's own files copied into the writable volume, never hidden."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from tests.unit.test_chart import (
    CHART,
    KUBERNETES_VERSION,
    NAMESPACE,
    RELEASE,
    chart,
    lint,
    resolve_env,
)

COMPONENTS = ("zookeeper", "broker", "controller", "gateway")
DIGEST = "sha256:" + "ab" * 32
CPU_LIMITS: dict[str, Any] = {
    "zookeeper": {"resources": {"limits": {"cpu": "1"}}},
    "broker": {"resources": {"limits": {"cpu": "1500m"}}},
    "controller": {"resources": {"limits": {"cpu": 0.5}}},
    "gateway": {"resources": {"limits": {"cpu": "2"}}},
}


def workloads(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Component name -> its StatefulSet or Deployment."""
    found = {}
    for path, text in chart().render(values, name=RELEASE, namespace=NAMESPACE).items():
        for doc in yaml.safe_load_all(text) if path.endswith(".yaml") else ():
            if doc and doc["kind"] in ("StatefulSet", "Deployment"):
                found[doc["metadata"]["name"].removeprefix(f"{RELEASE}-pafka-")] = doc
    return found


def pod(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def defaults() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    return loaded


def test_by_default_no_cpu_limit_and_the_other_quantities_unchanged() -> None:
    rendered = workloads({})
    for component in COMPONENTS:
        expected = defaults()[component]["resources"]
        del expected["limits"]["cpu"]
        resources = pod(rendered[component])["containers"][0]["resources"]
        assert resources == expected, component


def test_cpu_limits_are_an_option_for_every_component() -> None:
    chart().validate_schema(CPU_LIMITS)
    rendered = workloads(CPU_LIMITS)
    for component, values in CPU_LIMITS.items():
        resources = pod(rendered[component])["containers"][0]["resources"]
        assert resources["limits"]["cpu"] == values["resources"]["limits"]["cpu"], component
        assert (
            resources["limits"]["memory"] == defaults()[component]["resources"]["limits"]["memory"]
        )
        for doc in rendered.values():
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    report = lint(CPU_LIMITS)
    assert report["errors"] == [] and not [m for m in report["messages"] if m["severity"] >= 2]


@pytest.mark.parametrize("component", COMPONENTS)
@pytest.mark.parametrize("cpu", ["lots", "-1", 0, "1.5 cores"])
def test_schema_rejects_bad_cpu_limits(component: str, cpu: object) -> None:
    with pytest.raises(helm.HelmValuesError):
        chart().validate_schema({component: {"resources": {"limits": {"cpu": cpu}}}})


def test_zookeeper_image_pinned_by_digest() -> None:
    default_image = pod(workloads({})["zookeeper"])["containers"][0]["image"]
    assert default_image == "zookeeper:3.9.3"
    values = {"zookeeper": {"image": {"digest": DIGEST}}, "image": {"digest": DIGEST}}
    chart().validate_schema(values)
    rendered = workloads(values)
    spec = pod(rendered["zookeeper"])
    images = {c["image"] for c in spec["containers"] + spec["initContainers"]}
    assert images == {f"zookeeper:3.9.3@{DIGEST}"}
    for component in ("broker", "controller", "gateway"):
        assert pod(rendered[component])["containers"][0]["image"] == f"pafka@{DIGEST}"
    with pytest.raises(helm.HelmValuesError):
        chart().validate_schema({"zookeeper": {"image": {"digest": "sha256:abc"}}})


def test_zookeeper_conf_volume_starts_with_the_images_own_files() -> None:
    """The official image's entrypoint writes zoo.cfg into $ZOO_CONF_DIR only if none is there,
    and the image keeps logback.xml beside it (on the classpath via ZOOCFGDIR): the writable
    volume over that directory must start as a copy of it, made from the same image."""
    spec = pod(workloads({})["zookeeper"])
    (server,) = spec["containers"]
    (init,) = spec["initContainers"]
    conf_dir = resolve_env(server["env"], {})["ZOO_CONF_DIR"]
    (conf,) = [m for m in server["volumeMounts"] if m["mountPath"] == conf_dir]
    volume = next(v for v in spec["volumes"] if v["name"] == conf["name"])
    assert "emptyDir" in volume
    (target,) = [m for m in init["volumeMounts"] if m["name"] == conf["name"]]
    # The init container sees the image's own directory, with the volume mounted elsewhere.
    assert target["mountPath"] != conf_dir
    assert all(m["mountPath"] != conf_dir for m in init["volumeMounts"])
    assert init["image"] == server["image"]
    assert init["command"] + init["args"] == [
        "/bin/sh",
        "-c",
        f"cp -R {conf_dir}/. {target['mountPath']}/",
    ]
    sc = init["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"] and sc["runAsNonRoot"] is True
    assert init["resources"]["limits"]["memory"]
