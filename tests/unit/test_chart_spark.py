"""The chart's Spark objects (charts/pafka/templates/spark/), rendered by Helm's own engine.

With ``spark.enabled`` the release gets the driver's ServiceAccount, Role and RoleBinding, valid
for the API server and granting what a Spark driver does (executor pods, its headless service,
conf configmaps, claims); each example job's optional SparkApplication runs a job file the
spark image really holds, with arguments that job accepts, under that account, against the
release's own gateway Service, in the spark image, as the image's user. The spark-submit command
in each job's docstring is the same submission. Bad ``spark`` values are refused by the schema.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from pafka.spark.options import TOKEN_ENV
from tests.unit.test_dockerfile import DOCKERFILE, parse

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "pafka"
JOBS = ROOT / "spark-jobs"
KUBERNETES_VERSION = kubernetes_validate.utils.latest_version()
# The jobs' docstrings submit to a release named pafka in namespace pafka, as skaffold does.
RELEASE = NAMESPACE = "pafka"
CHECKPOINT = "s3a://bucket/checkpoints/event-windows"
PARQUET = "s3a://bucket/events-parquet"

SPARK_ON: dict[str, Any] = {
    "spark": {
        "enabled": True,
        "image": {"repository": "registry.test/pafka-spark", "tag": "abc1234"},
        "sparkConf": {"spark.hadoop.fs.s3a.path.style.access": True},
        "eventWindows": {"enabled": True, "checkpoint": CHECKPOINT},
        "topicToParquet": {"enabled": True, "output": PARQUET, "minPartitions": 8},
    }
}
APPLICATIONS = {"event-windows": "event_windows.py", "topic-to-parquet": "topic_to_parquet.py"}


@cache
def chart() -> helm.Chart:
    return helm.Chart.load(CHART)


def render(values: dict[str, Any]) -> list[dict[str, Any]]:
    out = chart().render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    return [
        doc
        for path, text in sorted(out.items())
        if not path.endswith("NOTES.txt")
        for doc in yaml.safe_load_all(text)
        if doc
    ]


@cache
def spark_on() -> tuple[dict[str, Any], ...]:
    return tuple(render(SPARK_ON))


def one(kind: str, docs: tuple[dict[str, Any], ...] | None = None) -> dict[str, Any]:
    (found,) = [d for d in docs or spark_on() if d["kind"] == kind and _is_spark(d)]
    return found


def _is_spark(doc: dict[str, Any]) -> bool:
    return doc["metadata"]["labels"]["app.kubernetes.io/component"].startswith("spark")


def applications() -> dict[str, dict[str, Any]]:
    apps = [d for d in spark_on() if d["kind"] == "SparkApplication"]
    return {d["metadata"]["name"].removeprefix(f"{RELEASE}-"): d for d in apps}


def job(file_name: str) -> ModuleType:
    pytest.importorskip("pyspark")
    path = JOBS / file_name
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def spark_image_stage() -> Any:
    (stage,) = [s for s in parse(DOCKERFILE.read_text())[1] if s.name == "spark"]
    return stage


def gateway_url(docs: tuple[dict[str, Any], ...]) -> str:
    (service,) = [
        d for d in docs if d["kind"] == "Service" and d["metadata"]["name"].endswith("-gateway")
    ]
    port = service["spec"]["ports"][0]["port"]
    return f"http://{service['metadata']['name']}.{NAMESPACE}.svc.cluster.local:{port}"


# ---- off by default --------------------------------------------------------------------------


def test_nothing_of_spark_by_default() -> None:
    assert not [d for d in render({}) if _is_spark(d)]
    rbac_only = render({"spark": {"enabled": True}})
    assert sorted(d["kind"] for d in rbac_only if _is_spark(d)) == [
        "Role",
        "RoleBinding",
        "ServiceAccount",
    ]


def test_lint_is_clean_with_spark_on() -> None:
    report = helm.lint(
        CHART, SPARK_ON, strict=True, namespace=NAMESPACE, kube_version=f"v{KUBERNETES_VERSION}"
    )
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert report["errors"] == [] and problems == [], report


# ---- the driver's account --------------------------------------------------------------------


def test_rbac_is_valid_and_grants_what_a_driver_needs() -> None:
    account, role, binding = one("ServiceAccount"), one("Role"), one("RoleBinding")
    for doc in (account, role, binding):
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        assert doc["metadata"]["namespace"] == NAMESPACE
        assert doc["metadata"]["labels"]["app.kubernetes.io/instance"] == RELEASE
    # The driver calls the API server with the account's token.
    assert account["automountServiceAccountToken"] is True
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": NAMESPACE}
    ]
    granted: dict[str, set[str]] = {}
    for rule in role["rules"]:
        assert rule["apiGroups"] == [""], rule
        for resource in rule["resources"]:
            granted.setdefault(resource, set()).update(rule["verbs"])
    driver_needs = {"create", "get", "list", "watch", "delete", "deletecollection"}
    for resource in ("pods", "services", "configmaps", "persistentvolumeclaims"):
        assert driver_needs <= granted[resource], resource
    assert "patch" in granted["pods"]  # executor pods are labelled as they start and stop
    assert "*" not in {v for verbs in granted.values() for v in verbs}


def test_account_name_can_be_given() -> None:
    docs = tuple(render({"spark": {**SPARK_ON["spark"], "serviceAccount": {"name": "drivers"}}}))
    assert one("ServiceAccount", docs)["metadata"]["name"] == "drivers"
    assert one("RoleBinding", docs)["subjects"][0]["name"] == "drivers"
    for app in (d for d in docs if d["kind"] == "SparkApplication"):
        assert app["spec"]["driver"]["serviceAccount"] == "drivers"


# ---- the SparkApplications -------------------------------------------------------------------


@pytest.mark.parametrize("name", APPLICATIONS)
def test_application_runs_a_job_of_the_image(name: str) -> None:
    app = applications()[name]
    assert (app["apiVersion"], app["kind"]) == ("sparkoperator.k8s.io/v1beta2", "SparkApplication")
    spec = app["spec"]
    assert (spec["type"], spec["mode"]) == ("Python", "cluster")
    assert spec["image"] == "registry.test/pafka-spark:abc1234"
    assert spec["driver"]["serviceAccount"] == one("ServiceAccount")["metadata"]["name"]
    assert spec["sparkConf"] == {"spark.hadoop.fs.s3a.path.style.access": "true"}

    # The main file is where the spark stage of the Dockerfile copied spark-jobs/.
    copies = [c.args.split() for c in spark_image_stage().of("COPY") if "--from" not in c.args]
    (destination,) = [words[-1] for words in copies if words[0].rstrip("/") == "spark-jobs"]
    main = spec["mainApplicationFile"]
    assert main == f"local://{destination.rstrip('/')}/{APPLICATIONS[name]}"
    assert (JOBS / APPLICATIONS[name]).is_file()

    # The job accepts the arguments and goes through the release's gateway.
    args = job(APPLICATIONS[name]).parse_args(spec["arguments"])
    assert args.gateway == gateway_url(spark_on())
    if name == "event-windows":
        assert (args.input, args.output, args.checkpoint) == ("events", "event-totals", CHECKPOINT)
        assert spec["restartPolicy"]["type"] == "Always"  # a stream resumes from its checkpoint
    else:
        assert (args.topic, args.output, args.min_partitions) == ("events", PARQUET, 8)
        assert spec["restartPolicy"] == {"type": "Never"}  # a batch job is not rerun by itself


@pytest.mark.parametrize("role", ["driver", "executor"])
def test_application_pods_run_as_the_image_user(role: str) -> None:
    (user,) = [u.args for u in spark_image_stage().of("USER")]
    uid, _, gid = user.partition(":")
    for app in applications().values():
        pod = app["spec"][role]
        assert pod["podSecurityContext"]["runAsUser"] == int(uid)
        assert pod["podSecurityContext"]["runAsGroup"] == int(gid)
        assert pod["podSecurityContext"]["runAsNonRoot"] is True
        container = pod["securityContext"]
        assert container["allowPrivilegeEscalation"] is False
        assert container["capabilities"]["drop"] == ["ALL"]
        assert pod["labels"]["app.kubernetes.io/instance"] == RELEASE
    assert applications()["event-windows"]["spec"]["executor"]["instances"] == 2


def test_image_digest_replaces_the_tag() -> None:
    digest = "sha256:" + "a" * 64
    values = {"spark": {**SPARK_ON["spark"], "image": {"repository": "r/s", "digest": digest}}}
    for app in (d for d in render(values) if d["kind"] == "SparkApplication"):
        assert app["spec"]["image"] == f"r/s@{digest}"


def test_token_secret_reaches_the_driver_as_the_jobs_variable() -> None:
    secret = {"name": "pafka-spark-token", "key": "bearer"}
    values = {"spark": {**SPARK_ON["spark"], "tokenSecret": secret}}
    apps = [d for d in render(values) if d["kind"] == "SparkApplication"]
    assert len(apps) == 2
    for app in apps:
        conf = app["spec"]["sparkConf"]
        # Spark's own property: the Secret's key as an environment variable of the driver pod.
        assert (
            conf[f"spark.kubernetes.driver.secretKeyRef.{TOKEN_ENV}"] == "pafka-spark-token:bearer"
        )
        assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    for app in applications().values():  # no Secret named, no variable
        assert not any("secretKeyRef" in k for k in app["spec"]["sparkConf"])


def submit_command(docstring: str) -> list[str]:
    """The words of the ``spark-submit`` command in a job's docstring."""
    (block,) = re.findall(r"^ *(spark-submit .*?)(?:\n\n|\Z)", docstring, re.S | re.M)
    return shlex.split(block.replace("\\\n", " "))


@pytest.mark.parametrize("name", APPLICATIONS)
def test_docstring_submits_what_the_application_runs(name: str) -> None:
    spec = applications()[name]["spec"]
    module = job(APPLICATIONS[name])
    assert "spark.enabled=true" in (module.__doc__ or "")
    words = submit_command(module.__doc__ or "")
    conf = {
        words[i + 1].split("=", 1)[0]: words[i + 1].split("=", 1)[1]
        for i, w in enumerate(words)
        if w == "--conf"
    }
    assert words[words.index("--master") + 1].startswith("k8s://")
    assert words[words.index("--deploy-mode") + 1] == "cluster"
    assert conf["spark.kubernetes.namespace"] == NAMESPACE
    account = conf["spark.kubernetes.authenticate.driver.serviceAccountName"]
    assert account == spec["driver"]["serviceAccount"]
    assert conf["spark.kubernetes.container.image"].startswith("pafka-spark:")
    main = spec["mainApplicationFile"]
    assert main in words
    submitted = module.parse_args(words[words.index(main) + 1 :])
    assert submitted == module.parse_args(spec["arguments"])


# ---- values ----------------------------------------------------------------------------------


def test_required_locations_are_asked_for() -> None:
    for job_key, what in (("eventWindows", "checkpoint"), ("topicToParquet", "output")):
        values = {"spark": {"enabled": True, job_key: {"enabled": True}}}
        with pytest.raises((helm.HelmError, helm.HelmValuesError), match=what):
            chart().render(values, name=RELEASE, namespace=NAMESPACE)


BAD_SPARK_VALUES = {
    "unknown key": {"jobs": []},
    "enabled as text": {"enabled": "yes"},
    "image latest": {"image": {"tag": "latest"}},
    "bad digest": {"image": {"digest": "sha256:abc"}},
    "bad pull policy": {"image": {"pullPolicy": "Sometimes"}},
    "bad memory": {"driver": {"memory": "lots"}},
    "kubernetes memory units": {"executor": {"memory": "1Gi"}},
    "no executors": {"executor": {"instances": 0}},
    "conf not spark.*": {"sparkConf": {"fs.s3a.endpoint": "x"}},
    "stream without checkpoint": {"eventWindows": {"enabled": True}},
    "bad topic": {"eventWindows": {"input": "a topic"}},
    "bad starting offsets": {"eventWindows": {"startingOffsets": "beginning"}},
    "bad window": {"eventWindows": {"window": "a while"}},
    "parquet without output": {"topicToParquet": {"enabled": True}},
    "negative min partitions": {"topicToParquet": {"minPartitions": -1}},
    "bad spark version": {"sparkVersion": "4"},
    "bad token secret name": {"tokenSecret": {"name": "My Secret"}},
    "token secret without key": {"tokenSecret": {"name": "s", "key": ""}},
}


@pytest.mark.parametrize("case", BAD_SPARK_VALUES)
def test_schema_rejects_bad_spark_values(case: str) -> None:
    with pytest.raises(helm.HelmValuesError):
        chart().validate_schema({"spark": BAD_SPARK_VALUES[case]})


def test_schema_accepts_the_values_used_here() -> None:
    chart().validate_schema(SPARK_ON)
    chart().validate_schema({"spark": {"driver": {"memory": "512m"}, "executor": {"cores": 4}}})
