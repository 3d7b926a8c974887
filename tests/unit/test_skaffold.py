"""skaffold.yaml, checked against the chart it deploys (no skaffold binary or cluster here):
the built image reaches the chart's image values, the dev profile's values pass the chart's
schema and render, and the port-forwards name Services and ports the chart creates. The spark
profile adds the Spark job image (a final stage of the Dockerfile), alone or with dev, and it
reaches the chart's Spark objects."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from tests.unit.test_dockerfile import final_stages, parse

ROOT = Path(__file__).resolve().parents[2]
SKAFFOLD = yaml.safe_load((ROOT / "skaffold.yaml").read_text())


def profile(name: str) -> dict[str, Any]:
    (found,) = [p for p in SKAFFOLD["profiles"] if p["name"] == name]
    return found


def with_profile(name: str | None, *more: str) -> dict[str, Any]:
    """The config as skaffold sees it with the profiles on (their patches are JSON-patch adds)."""
    config = copy.deepcopy(SKAFFOLD)
    names = [n for n in (name, *more) if n]
    for patch in [p for n in names for p in profile(n)["patches"]]:
        assert patch["op"] == "add", patch
        *parents, leaf = patch["path"].strip("/").split("/")
        node: Any = config
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node.insert(len(node) if leaf == "-" else int(leaf), patch["value"])
        else:
            node[leaf] = patch["value"]
    return config


def nested(dotted: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, value in dotted.items():
        *parents, leaf = key.split(".")
        node = values
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return values


def test_current_schema_and_one_image_from_the_dockerfile() -> None:
    assert re.fullmatch(r"skaffold/v4beta\d+", SKAFFOLD["apiVersion"])
    assert SKAFFOLD["kind"] == "Config"
    (artifact,) = SKAFFOLD["build"]["artifacts"]
    assert (ROOT / artifact["context"] / artifact["docker"]["dockerfile"]).is_file()


@pytest.mark.parametrize("profile_name", [None, "dev"])
def test_release_renders_with_the_built_image(profile_name: str | None) -> None:
    config = with_profile(profile_name)
    (artifact,) = config["build"]["artifacts"]
    (release,) = config["deploy"]["helm"]["releases"]
    image = artifact["image"]
    templates = release["setValueTemplates"]
    assert templates == {
        "image.repository": f"{{{{.IMAGE_REPO_{image}}}}}",
        "image.tag": f"{{{{.IMAGE_TAG_{image}}}}}",
    }
    values = nested(release.get("setValues", {}))
    values.setdefault("image", {}).update({"repository": "registry.test/pafka", "tag": "abc1234"})
    with helm.Chart.load(ROOT / release["chartPath"]) as chart:
        chart.validate_schema(values)
        out = chart.render(values, name=release["name"], namespace=release["namespace"])
    manifests = [text for path, text in out.items() if not path.endswith("NOTES.txt")]
    docs = [d for text in manifests for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    images = {
        c["image"]
        for d in docs
        if d["kind"] in ("StatefulSet", "Deployment")
        for c in d["spec"]["template"]["spec"]["containers"]
        if c["name"] != "zookeeper"
    }
    assert images == {"registry.test/pafka:abc1234"}
    services = {
        d["metadata"]["name"]: {p["port"] for p in d["spec"]["ports"]}
        for d in docs
        if d["kind"] == "Service"
    }
    forwards = config["portForward"]
    assert any(f["resourceName"].endswith("-gateway") for f in forwards)
    for forward in forwards:
        assert forward["resourceType"] == "service"
        assert forward["namespace"] == release["namespace"]
        assert forward["port"] in services[forward["resourceName"]], forward


def test_dev_profile_runs_with_skaffold_dev() -> None:
    assert {"command": "dev"} in profile("dev")["activation"]


def template_name(image: str) -> str:
    """How skaffold names an artifact in its templates: other characters become underscores."""
    return re.sub(r"[^A-Za-z0-9]", "_", image)


@pytest.mark.parametrize("others", [(), ("dev",)])
def test_spark_profile_builds_the_job_image_for_the_chart(others: tuple[str, ...]) -> None:
    config = with_profile("spark", *others)
    images = {a["image"]: a for a in config["build"]["artifacts"]}
    assert set(images) == {"pafka", "pafka-spark"}
    spark = images["pafka-spark"]
    assert spark["docker"]["target"] == "spark"
    assert "target" not in images["pafka"]["docker"], "the services come from the default target"
    stages = parse((ROOT / spark["context"] / spark["docker"]["dockerfile"]).read_text())[1]
    assert "spark" in [s.name for s in final_stages(stages)]

    (release,) = config["deploy"]["helm"]["releases"]
    templates = release["setValueTemplates"]
    name = template_name("pafka-spark")
    assert templates["spark.image.repository"] == f"{{{{.IMAGE_REPO_{name}}}}}"
    assert templates["spark.image.tag"] == f"{{{{.IMAGE_TAG_{name}}}}}"
    # What skaffold would substitute, plus a job to see the image in.
    rendered = {
        "spark.image.repository": "registry.test/pafka-spark",
        "spark.image.tag": "abc1234",
        "spark.enabled": yaml.safe_load(templates["spark.enabled"]),
        "spark.topicToParquet.enabled": True,
        "spark.topicToParquet.output": "s3a://bucket/out",
    }
    values = nested({**release.get("setValues", {}), **rendered})
    if others:
        assert values["zookeeper"]["replicaCount"] == 1, "the dev profile's values survive"
    with helm.Chart.load(ROOT / release["chartPath"]) as chart:
        chart.validate_schema(values)
        out = chart.render(values, name=release["name"], namespace=release["namespace"])
    manifests = [t for path, t in out.items() if not path.endswith("NOTES.txt")]
    docs = [d for t in manifests for d in yaml.safe_load_all(t) if isinstance(d, dict)]
    (app,) = [d for d in docs if d["kind"] == "SparkApplication"]
    assert app["spec"]["image"] == "registry.test/pafka-spark:abc1234"
    assert any(d["kind"] == "RoleBinding" for d in docs)
