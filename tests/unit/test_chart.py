"""The Helm chart (charts/pafka), linted and rendered by Helm's own engine, no cluster needed.

helm-python-sdk binds Helm's Go library, so lint, schema validation and rendering here are
exactly what `helm lint` / `helm template` do. Every rendered manifest is validated against the
Kubernetes JSON schemas that kubernetes-validate bundles (offline); Prometheus Operator objects,
which are CRDs, are checked structurally. Then the properties the cluster relies on: names that
must agree, ids from ordinals, probes on real endpoints, pods that cannot run as root, and the
services' own settings parsers accepting the environment the chart gives them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import promql_parser
import pytest
import yaml

from pafka.cli.main import build_parser
from services.broker import broker as broker_module
from services.broker.metrics import BrokerMetrics
from services.broker.settings import BrokerSettings
from services.controller.cluster_view import ClusterViewCollector
from services.controller.metrics import ControllerMetrics
from services.controller.settings import ControllerSettings
from services.gateway.metrics import GatewayMetrics
from services.gateway.settings import GatewaySettings

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "pafka"
RELEASE, NAMESPACE = "demo", "data"
KUBERNETES_VERSION = kubernetes_validate.utils.latest_version()
CRD_GROUPS = ("monitoring.coreos.com/",)

VALUE_SETS: dict[str, dict[str, Any]] = {
    "default": {},
    "persistence-off": {
        "broker": {"persistence": {"enabled": False}},
        "zookeeper": {"persistence": {"enabled": False}},
    },
    "external-zookeeper": {
        "zookeeper": {"enabled": False, "connect": "zk-a:2181,zk-b:2181,zk-c:2181/pafka"}
    },
    "five-brokers": {"broker": {"replicaCount": 5}, "zookeeper": {"replicaCount": 5}},
    "monitoring-on": {
        "metrics": {
            "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
            "prometheusRule": {"enabled": True},
            "grafanaDashboard": {"enabled": True},
        }
    },
    "ingress-hpa-topics": {
        "gateway": {
            "ingress": {"enabled": True, "className": "nginx", "host": "pafka.example.com"},
            "autoscaling": {"enabled": True},
        },
        "provisioning": {
            "topics": [
                {"name": "orders", "partitions": 6, "replicationFactor": 3},
                {"name": "audit", "config": {"retention.ms": 86400000, "cleanup.policy": "delete"}},
            ]
        },
        "broker": {"podAntiAffinityPreset": "hard", "config": {"LOG_RETENTION_MS": 3600000}},
    },
}


@cache
def chart() -> helm.Chart:
    return helm.Chart.load(CHART)


@cache
def rendered(value_set: str) -> dict[str, str]:
    return chart().render(VALUE_SETS[value_set], name=RELEASE, namespace=NAMESPACE, is_install=True)


@cache
def manifests(value_set: str) -> tuple[dict[str, Any], ...]:
    docs = []
    for path, text in sorted(rendered(value_set).items()):
        if path.endswith("NOTES.txt"):
            continue
        docs.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return tuple(docs)


def objects(value_set: str, kind: str) -> list[dict[str, Any]]:
    return [doc for doc in manifests(value_set) if doc["kind"] == kind]


def named(value_set: str, kind: str, suffix: str) -> dict[str, Any]:
    (found,) = [o for o in objects(value_set, kind) if o["metadata"]["name"].endswith(suffix)]
    return found


def pod_specs(value_set: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for doc in manifests(value_set):
        if doc["kind"] in ("StatefulSet", "Deployment", "Job"):
            yield doc["metadata"]["name"], doc["spec"]["template"]["spec"]
        elif doc["kind"] == "Pod":
            yield doc["metadata"]["name"], doc["spec"]


def container(workload: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [c for c in workload["spec"]["template"]["spec"]["containers"] if c["name"] == name]
    return found


def resolve_env(
    entries: list[dict[str, Any]], fields: Mapping[str, str], *, label_default: str = ""
) -> dict[str, str]:
    """The environment a kubelet would give the container: downward-API fields filled from
    ``fields`` (missing labels read as empty), then $(VAR) references expanded in order."""
    env: dict[str, str] = {}
    for entry in entries:
        if "value" in entry:
            value = re.sub(r"\$\((\w+)\)", lambda m: env.get(m[1], m[0]), entry["value"])
        elif "resourceFieldRef" in entry["valueFrom"]:
            # A container's resource (limits.cpu, ...) as the kubelet renders it, from ``fields``.
            value = fields.get(entry["valueFrom"]["resourceFieldRef"]["resource"], "")
        else:
            path = entry["valueFrom"]["fieldRef"]["fieldPath"]
            value = fields.get(path, label_default if path.startswith("metadata.labels") else "")
        env[entry["name"]] = value
    return env


def env_of(workload: dict[str, Any], name: str) -> dict[str, str]:
    return resolve_env(container(workload, name)["env"], {})


FQDN = f"{NAMESPACE}.svc.cluster.local"


# ---- Helm's own checks -----------------------------------------------------------------------


def lint(values: Mapping[str, Any]) -> dict[str, Any]:
    """`helm lint --strict` of the chart with these values, for the Kubernetes version tested."""
    return dict(
        helm.lint(
            CHART,
            dict(values),
            strict=True,
            namespace=NAMESPACE,
            kube_version=f"v{KUBERNETES_VERSION}",
        )
    )


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_lint_is_clean(value_set: str) -> None:
    report = lint(VALUE_SETS[value_set])
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert report["errors"] == [] and problems == [], report


def test_chart_needs_nothing_fetched() -> None:
    metadata = chart().metadata
    assert not metadata.get("dependencies"), "the chart must render offline"
    assert chart().dependencies == []


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_every_manifest_is_valid_for_current_kubernetes(value_set: str) -> None:
    for doc in manifests(value_set):
        where = f"{doc['kind']}/{doc['metadata']['name']}"
        if doc["apiVersion"].startswith(CRD_GROUPS):
            assert doc["metadata"]["namespace"] == NAMESPACE, where
            assert isinstance(doc["spec"], dict) and doc["spec"], where
            continue
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


# ---- names that must agree -------------------------------------------------------------------


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_statefulsets_name_their_headless_service(value_set: str) -> None:
    services = {s["metadata"]["name"]: s for s in objects(value_set, "Service")}
    for sts in objects(value_set, "StatefulSet"):
        service = services[sts["spec"]["serviceName"]]
        assert service["spec"]["clusterIP"] == "None"
        assert service["spec"]["publishNotReadyAddresses"] is True
        pod_labels = sts["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= pod_labels.items()
        assert sts["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_services_select_pods_and_name_real_ports(value_set: str) -> None:
    pods = [
        (doc["spec"]["template"]["metadata"]["labels"], doc["spec"]["template"]["spec"])
        for doc in manifests(value_set)
        if doc["kind"] in ("StatefulSet", "Deployment")
    ]
    for service in objects(value_set, "Service"):
        selector = service["spec"]["selector"]
        matching = [spec for labels, spec in pods if selector.items() <= labels.items()]
        assert len(matching) == 1, service["metadata"]["name"]
        port_names = {p["name"] for c in matching[0]["containers"] for p in c["ports"]}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in port_names, (service["metadata"]["name"], port)


@pytest.mark.parametrize("value_set", ["default", "five-brokers"])
def test_zookeeper_ensemble_and_connect_string_list_every_pod(value_set: str) -> None:
    sts = named(value_set, "StatefulSet", "-zookeeper")
    count, name, headless = (
        sts["spec"]["replicas"],
        sts["metadata"]["name"],
        sts["spec"]["serviceName"],
    )
    hosts = [f"{name}-{i}.{headless}.{FQDN}" for i in range(count)]
    zk = container(sts, "zookeeper")
    servers = env_of(sts, "zookeeper")["ZOO_SERVERS"].split()
    assert servers == [f"server.{i + 1}={h}:2888:3888;2181" for i, h in enumerate(hosts)]
    # myid is the ordinal + 1 (ZooKeeper server ids start at 1), taken from the pod name.
    assert "ZOO_MY_ID=$(( ${HOSTNAME##*-} + 1 ))" in zk["args"][0]
    assert zk["args"][0].rstrip().split("&&")[-1].strip().startswith("exec ")
    connect = ",".join(f"{h}:2181" for h in hosts)
    for kind, suffix, name_, key in (
        ("StatefulSet", "-broker", "broker", "PAFKA_BROKER_ZOOKEEPER"),
        ("Deployment", "-controller", "controller", "PAFKA_CONTROLLER_ZOOKEEPER"),
        ("Deployment", "-gateway", "gateway", "PAFKA_GATEWAY_ZOOKEEPER"),
    ):
        assert env_of(named(value_set, kind, suffix), name_)[key] == connect


def test_external_zookeeper_replaces_the_ensemble() -> None:
    connect = VALUE_SETS["external-zookeeper"]["zookeeper"]["connect"]
    assert not [d for d in manifests("external-zookeeper") if "zookeeper" in d["metadata"]["name"]]
    broker = named("external-zookeeper", "StatefulSet", "-broker")
    assert env_of(broker, "broker")["PAFKA_BROKER_ZOOKEEPER"] == connect
    with pytest.raises(helm.HelmError, match=r"zookeeper[./]connect"):
        chart().render({"zookeeper": {"enabled": False}}, name=RELEASE, namespace=NAMESPACE)


# ---- brokers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value_set", ["default", "five-brokers", "ingress-hpa-topics"])
def test_broker_ids_and_advertised_names_come_from_the_pod(value_set: str) -> None:
    sts = named(value_set, "StatefulSet", "-broker")
    name, headless = sts["metadata"]["name"], sts["spec"]["serviceName"]
    entries = container(sts, "broker")["env"]
    ids = []
    for ordinal in range(sts["spec"]["replicas"]):
        pod = f"{name}-{ordinal}"
        fields = {
            "metadata.name": pod,
            "metadata.labels['apps.kubernetes.io/pod-index']": str(ordinal),
            "metadata.labels['topology.kubernetes.io/zone']": "zone-a",
        }
        settings = BrokerSettings.from_env(resolve_env(entries, fields))
        assert settings.advertised_host == f"{pod}.{headless}.{FQDN}"
        assert settings.rack == "zone-a"
        assert settings.data_dir == Path("/var/lib/pafka")
        assert settings.min_insync_replicas == 2 and settings.default_replication_factor == 3
        if value_set == "ingress-hpa-topics":
            assert settings.log.retention_ms == 3_600_000
        ids.append(settings.broker_id)
    assert ids == list(range(sts["spec"]["replicas"]))
    # No topology label on the pod: no rack, not an error.
    bare = {"metadata.name": f"{name}-0", "metadata.labels['apps.kubernetes.io/pod-index']": "0"}
    assert BrokerSettings.from_env(resolve_env(entries, bare)).rack is None


def test_broker_stops_with_time_for_controlled_shutdown() -> None:
    spec = named("default", "StatefulSet", "-broker")["spec"]["template"]["spec"]
    pause = spec["containers"][0]["lifecycle"]["preStop"]["sleep"]["seconds"]
    shutdown = broker_module.CONTROLLED_SHUTDOWN_ATTEMPTS * (
        broker_module.CONTROLLED_SHUTDOWN_TIMEOUT_S + broker_module.CONTROLLED_SHUTDOWN_RETRY_S
    )
    assert pause > 0
    assert spec["terminationGracePeriodSeconds"] >= pause + shutdown


@pytest.mark.parametrize("value_set", ["default", "persistence-off"])
def test_broker_and_zookeeper_data_volumes(value_set: str) -> None:
    persistent = value_set == "default"
    for suffix, mount in (("-broker", "/var/lib/pafka"), ("-zookeeper", "/data")):
        sts = named(value_set, "StatefulSet", suffix)
        workload = sts["spec"]["template"]["spec"]
        mounts = {m["name"]: m["mountPath"] for m in workload["containers"][0]["volumeMounts"]}
        assert mounts["data"] == mount
        claims = [c["metadata"]["name"] for c in sts["spec"].get("volumeClaimTemplates", [])]
        volumes = {v["name"]: v for v in workload["volumes"]}
        if persistent:
            assert claims == ["data"] and "data" not in volumes
        else:
            assert claims == [] and "emptyDir" in volumes["data"]


@pytest.mark.parametrize("value_set", ["default", "ingress-hpa-topics"])
def test_brokers_spread_over_nodes(value_set: str) -> None:
    sts = named(value_set, "StatefulSet", "-broker")
    anti = sts["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    if value_set == "default":
        (term,) = anti["preferredDuringSchedulingIgnoredDuringExecution"]
        term = term["podAffinityTerm"]
    else:
        (term,) = anti["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == sts["spec"]["selector"]["matchLabels"]


# ---- the other services ----------------------------------------------------------------------


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_each_service_starts_with_the_settings_the_chart_gives_it(value_set: str) -> None:
    controller = named(value_set, "Deployment", "-controller")
    gateway = named(value_set, "Deployment", "-gateway")
    assert controller["spec"]["replicas"] == 2
    fields = {"status.podIP": "10.1.2.3"}
    settings = ControllerSettings.from_env(
        resolve_env(container(controller, "controller")["env"], fields)
    )
    assert settings.url == "http://10.1.2.3:8090"
    gateway_settings = GatewaySettings.from_env(env_of(gateway, "gateway"))
    assert gateway_settings.port == 8082 and gateway_settings.zookeeper
    for workload, name in ((controller, "controller"), (gateway, "gateway")):
        assert container(workload, name)["command"] == ["pafka"]
        assert container(workload, name)["args"] == [name]
    broker = named(value_set, "StatefulSet", "-broker")
    assert container(broker, "broker")["command"] == ["pafka"]
    assert container(broker, "broker")["args"] == ["broker"]
    for service in ("broker", "controller", "gateway"):
        build_parser().parse_args([service])


HTTP_ROUTES = {
    "broker": ROOT / "services/broker/http_api.py",
    "controller": ROOT / "services/controller/http.py",
    "gateway": ROOT / "services/gateway/app.py",
}
HTTP_PORT_ENV = {
    "broker": "PAFKA_BROKER_HTTP_PORT",
    "controller": "PAFKA_CONTROLLER_HTTP_PORT",
    "gateway": "PAFKA_GATEWAY_PORT",
}


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_probes_hit_real_endpoints_on_the_service_port(value_set: str) -> None:
    for doc in manifests(value_set):
        if doc["kind"] not in ("StatefulSet", "Deployment"):
            continue
        for c in doc["spec"]["template"]["spec"]["containers"]:
            if c["name"] not in HTTP_ROUTES:
                continue
            source = HTTP_ROUTES[c["name"]].read_text()
            ports = {p["name"]: p["containerPort"] for p in c["ports"]}
            listening = int(resolve_env(c["env"], {})[HTTP_PORT_ENV[c["name"]]])
            assert "readinessProbe" in c and "livenessProbe" in c, c["name"]
            for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
                if kind not in c:
                    continue
                probe = c[kind]["httpGet"]
                assert ports[probe["port"]] == listening, (c["name"], kind)
                assert re.search(rf'@app\.get\("{probe["path"]}"', source), (c["name"], probe)
            assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
            assert c["livenessProbe"]["httpGet"]["path"] == "/livez"


# ---- security, resources, labels -------------------------------------------------------------


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_pods_are_locked_down(value_set: str) -> None:
    for name, spec in pod_specs(value_set):
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] > 0, name
        assert pod["seccompProfile"]["type"] == "RuntimeDefault", name
        assert spec["automountServiceAccountToken"] is False, name
        volumes = {v["name"]: v for v in spec["volumes"]}
        for c in spec["containers"]:
            sc = c["securityContext"]
            assert sc["runAsNonRoot"] is True, (name, c["name"])
            assert sc["readOnlyRootFilesystem"] is True, (name, c["name"])
            assert sc["allowPrivilegeEscalation"] is False, (name, c["name"])
            assert sc["capabilities"]["drop"] == ["ALL"], (name, c["name"])
            assert sc["seccompProfile"]["type"] == "RuntimeDefault", (name, c["name"])
            (tmp,) = [m for m in c["volumeMounts"] if m["mountPath"] == "/tmp"]
            assert "emptyDir" in volumes[tmp["name"]], (name, c["name"])
            assert c["resources"]["requests"]["memory"] and c["resources"]["limits"]["memory"]
            assert not c["image"].endswith(":latest") and ":" in c["image"], c["image"]


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_recommended_labels_everywhere(value_set: str) -> None:
    required = {
        "app.kubernetes.io/name",
        "app.kubernetes.io/instance",
        "app.kubernetes.io/component",
        "app.kubernetes.io/version",
        "app.kubernetes.io/managed-by",
        "app.kubernetes.io/part-of",
        "helm.sh/chart",
    }
    for doc in manifests(value_set):
        assert required <= doc["metadata"]["labels"].keys(), doc["metadata"]["name"]
        assert doc["metadata"]["labels"]["app.kubernetes.io/instance"] == RELEASE


def test_disruption_budgets_allow_one_pod_down() -> None:
    budgets = objects("default", "PodDisruptionBudget")
    components = set()
    workloads = [d for d in manifests("default") if d["kind"] in ("StatefulSet", "Deployment")]
    for pdb in budgets:
        assert pdb["spec"]["maxUnavailable"] == 1
        selector = pdb["spec"]["selector"]["matchLabels"]
        matched = [
            w
            for w in workloads
            if selector.items() <= w["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert len(matched) == 1, selector
        components.add(selector["app.kubernetes.io/component"])
    assert components == {"zookeeper", "broker", "controller", "gateway"}


def test_gateway_ingress_and_autoscaler() -> None:
    gateway = named("ingress-hpa-topics", "Deployment", "-gateway")
    assert "replicas" not in gateway["spec"], "the autoscaler owns the replica count"
    (hpa,) = objects("ingress-hpa-topics", "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == gateway["metadata"]["name"]
    (ingress,) = objects("ingress-hpa-topics", "Ingress")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == named("default", "Service", "-gateway")["metadata"]["name"]
    assert not objects("default", "Ingress") and not objects("default", "HorizontalPodAutoscaler")


# ---- hooks: topic provisioning and helm test -------------------------------------------------


def test_topics_job_runs_the_cli_against_the_cluster() -> None:
    (job,) = objects("ingress-hpa-topics", "Job")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "post-install"
    broker = named("ingress-hpa-topics", "StatefulSet", "-broker")
    connect = env_of(broker, "broker")["PAFKA_BROKER_ZOOKEEPER"]
    wanted = VALUE_SETS["ingress-hpa-topics"]["provisioning"]["topics"]
    containers = job["spec"]["template"]["spec"]["containers"]
    assert len(containers) == len(wanted)
    for topic, c in zip(wanted, containers, strict=True):
        args = build_parser().parse_args(c["command"][1:] + c["args"])
        assert (args.command, args.verb, args.topic) == ("topics", "create", topic["name"])
        assert args.partitions == topic.get("partitions", 1)
        assert args.replication_factor == topic.get("replicationFactor", 1)
        assert sorted(args.config or []) == sorted(
            f"{k}={v}" for k, v in topic.get("config", {}).items()
        )
        assert args.zookeeper == connect
    assert not objects("default", "Job")


def test_helm_test_pod_goes_through_the_gateway() -> None:
    (pod,) = objects("default", "Pod")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    service = named("default", "Service", "-gateway")
    port = service["spec"]["ports"][0]["port"]
    assert env["GATEWAY_URL"] == f"http://{service['metadata']['name']}.{FQDN}:{port}"
    (config_map,) = [c for c in objects("default", "ConfigMap") if "test" in c["metadata"]["name"]]
    script = config_map["data"]["roundtrip.py"]
    assert script == (CHART / "files" / "roundtrip.py").read_text()
    compile(script, "roundtrip.py", "exec")
    assert pod["spec"]["containers"][0]["command"] == ["python", "/scripts/roundtrip.py"]


def test_notes_give_endpoints_and_a_port_forward_example() -> None:
    notes = rendered("five-brokers")["pafka/templates/NOTES.txt"]
    assert "kubectl -n data port-forward svc/demo-pafka-gateway" in notes
    assert "curl -s -XPOST http://127.0.0.1:8082/topics/" in notes
    assert f"demo-pafka-broker-4.demo-pafka-broker-headless.{FQDN}:9092" in notes


# ---- monitoring ------------------------------------------------------------------------------


def exported_metric_names() -> set[str]:
    """Sample names the services' registries expose (counters with _total, histograms with
    _bucket/_sum/_count), read from the metric objects themselves; the active controller's
    cluster view (no series until it is active) from its collector's declared families."""
    names: set[str] = set()
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    families = [
        *BrokerMetrics().registry.collect(),
        *ControllerMetrics().registry.collect(),
        *GatewayMetrics().registry.collect(),
        *ClusterViewCollector().describe(),
    ]
    for family in families:
        names.update(family.name + s for s in suffixes.get(family.type, ("",)))
    return names


# Grafana's variables, replaced by values of their kind so that a query parses as PromQL.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$namespace": "data"}


def metric_names(expr: str) -> set[str]:
    """The metrics a PromQL expression selects, read from its syntax tree (parsing it proves
    it is valid PromQL: a syntax error raises)."""
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    names: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            assert node.name, f"a selector without a metric name in {expr!r}"
            names.add(node.name)

    promql_parser.walk(promql_parser.parse(expr), visit)
    return names


def test_metric_names_are_read_from_valid_promql_only() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (le, pod) (rate(a_bucket{namespace="$namespace"}'
        "[$__rate_interval]))) * on (pod) group_left b and deriv(sum(c)[10m:1m]) > 0"
    )
    assert metric_names(expr) == {"a_bucket", "b", "c"}
    with pytest.raises(ValueError):
        metric_names("sum(rate(a[5m])")


def test_service_monitor_scrapes_every_service() -> None:
    (monitor,) = objects("monitoring-on", "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    selector = monitor["spec"]["selector"]["matchLabels"]
    scraped = [
        s
        for s in objects("monitoring-on", "Service")
        if selector.items() <= s["metadata"]["labels"].items()
    ]
    components = sorted(s["metadata"]["labels"]["app.kubernetes.io/component"] for s in scraped)
    assert components == ["broker", "controller", "gateway"]
    (endpoint,) = monitor["spec"]["endpoints"]
    for service in scraped:
        assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"


def test_alert_rules_use_exported_metrics() -> None:
    (rule,) = objects("monitoring-on", "PrometheusRule")
    alerts = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
    assert {
        "PafkaUnderReplicatedPartitions",
        "PafkaOfflinePartitions",
        "PafkaActiveControllerCount",
        "PafkaBrokerDown",
        "PafkaUnderMinIsrPartitions",
        "PafkaBrokerDiskNearlyFull",
        "PafkaConsumerLagGrowing",
        "PafkaCompactionOverdue",
        "PafkaUncleanablePartitions",
        "PafkaLogCleanerStopped",
    } <= alerts.keys()
    # `up` is Prometheus' own, for each scraped target (PafkaBrokerDown).
    exported = exported_metric_names() | {"up"}
    for name, alert in alerts.items():
        used = metric_names(alert["expr"])
        assert used and used <= exported, (name, used - exported)
        assert 'namespace="data"' in alert["expr"], name
        # Prometheus' own templates survive Helm's rendering.
        assert "{{ $" in alert["annotations"]["description"], name
    lag = alerts["PafkaConsumerLagGrowing"]
    assert "deriv(" in lag["expr"] and "> 1000" in lag["expr"] and lag["for"] == "15m"
    assert "< 0.1" in alerts["PafkaBrokerDiskNearlyFull"]["expr"]
    # Per partition, so the alert names the partition; the margin is the chart's value.
    overdue = alerts["PafkaCompactionOverdue"]
    assert metric_names(overdue["expr"]) == {"pafka_broker_log_compaction_delay_seconds"}
    assert overdue["expr"].endswith("> 900")
    assert "$labels.topic" in overdue["annotations"]["description"]
    assert "$labels.partition" in overdue["annotations"]["description"]


def test_compaction_alert_margin_comes_from_the_values() -> None:
    values = {"metrics": {"prometheusRule": {"enabled": True, "compactionDelayMarginSeconds": 60}}}
    text = chart().render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    (rule,) = [
        doc
        for path, body in text.items()
        if not path.endswith("NOTES.txt")
        for doc in yaml.safe_load_all(body)
        if doc and doc["kind"] == "PrometheusRule"
    ]
    (overdue,) = [
        r
        for g in rule["spec"]["groups"]
        for r in g["rules"]
        if r["alert"] == "PafkaCompactionOverdue"
    ]
    assert overdue["expr"].endswith("> 60")


def test_grafana_dashboard_is_valid_and_queries_exported_metrics() -> None:
    (config_map,) = [
        c
        for c in objects("monitoring-on", "ConfigMap")
        if c["metadata"]["name"].endswith("dashboard")
    ]
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(config_map["data"]["pafka-overview.json"])
    assert dashboard["uid"] and dashboard["title"] and isinstance(dashboard["schemaVersion"], int)
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    exported = exported_metric_names()
    used: set[str] = set()
    for panel in panels:
        assert panel["targets"], panel["title"]
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24
        for target in panel["targets"]:
            names = metric_names(target["expr"])
            assert names <= exported, (panel["title"], names - exported)
            used |= names
    for needed in (
        "kafka_server_brokertopicmetrics_messagesin_total",
        "kafka_server_brokertopicmetrics_bytesin_total",
        "kafka_server_brokertopicmetrics_bytesout_total",
        "kafka_server_replicamanager_underreplicatedpartitions",
        "kafka_controller_kafkacontroller_offlinepartitionscount",
        "kafka_controller_kafkacontroller_activecontrollercount",
        "pafka_broker_request_duration_seconds_bucket",
        "http_requests_total",
        "http_request_duration_seconds_bucket",
        "kafka_consumergroup_lag_sum",
        "kafka_server_replicamanager_isrshrinks_total",
        "kafka_server_replicamanager_isrexpands_total",
        "kafka_server_replicamanager_underminisrpartitioncount",
        "pafka_broker_log_dir_free_bytes",
        "pafka_broker_log_compaction_delay_seconds",
        "kafka_log_logcleanermanager_max_dirty_percent",
        "kafka_log_logcleanermanager_time_since_last_run_ms",
        "kafka_log_logcleaner_cleaner_recopy_percent",
        "pafka_broker_log_cleaner_read_bytes_total",
    ):
        assert needed in used, needed
    # Grafana's label_values(metric, label) is not PromQL: its metric is checked on its own.
    variables = dashboard["templating"]["list"]
    for query in (v["definition"] for v in variables if v["type"] == "query"):
        found = re.fullmatch(r"label_values\((\w+), *\w+\)", query)
        assert found and found[1] in exported, query


# ---- values and their schema -----------------------------------------------------------------


def leaf_paths(values: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in values.items():
        path = f"{prefix}{key}"
        free_form = path.endswith(("Labels", "labels", "Annotations", "annotations"))
        if isinstance(value, Mapping) and value and not free_form:
            if path.endswith(".config"):  # a documented map of free-form entries
                yield path
            else:
                yield from leaf_paths(value, path + ".")
        else:
            yield path


def test_every_value_is_documented() -> None:
    text = (CHART / "values.yaml").read_text()
    documented = set(re.findall(r"^\s*## @param (\S+)", text, re.M))
    leaves = set(leaf_paths(yaml.safe_load(text)))
    assert leaves - documented == set(), "values without ## @param"
    assert documented - leaves == set(), "## @param for values that do not exist"


def test_schema_accepts_every_value_set() -> None:
    for values in VALUE_SETS.values():
        chart().validate_schema(values)


BAD_VALUES = {
    "negative brokers": {"broker": {"replicaCount": -1}},
    "brokers as text": {"broker": {"replicaCount": "three"}},
    "unknown top-level key": {"brokers": {"replicaCount": 3}},
    "unknown broker key": {"broker": {"replicas": 3}},
    "port out of range": {"gateway": {"ports": {"http": 70000}}},
    "root user": {"podSecurityContext": {"runAsUser": 0}},
    "non-root off": {"containerSecurityContext": {"runAsNonRoot": False}},
    "privilege escalation": {"containerSecurityContext": {"allowPrivilegeEscalation": True}},
    "capabilities kept": {"containerSecurityContext": {"capabilities": {"drop": []}}},
    "external zookeeper without connect": {"zookeeper": {"enabled": False}},
    "bad connect string": {"zookeeper": {"enabled": False, "connect": "zk a"}},
    "zookeeper latest": {"zookeeper": {"image": {"tag": "latest"}}},
    "bad pull policy": {"image": {"pullPolicy": "Sometimes"}},
    "bad digest": {"image": {"digest": "sha256:abc"}},
    "bad anti-affinity preset": {"broker": {"podAntiAffinityPreset": "medium"}},
    "grace too short": {"broker": {"terminationGracePeriodSeconds": 5}},
    "broker id overridden": {"broker": {"config": {"ID": 7}}},
    "lower-case config key": {"gateway": {"config": {"linger_ms": 5}}},
    "bad topic name": {"provisioning": {"topics": [{"name": "a topic"}]}},
    "topic without name": {"provisioning": {"topics": [{"partitions": 3}]}},
    "zero partitions": {"provisioning": {"topics": [{"name": "t", "partitions": 0}]}},
    "bad disk ratio": {"metrics": {"prometheusRule": {"diskFreeRatio": 1.5}}},
    "negative lag threshold": {"metrics": {"prometheusRule": {"consumerLagThreshold": -1}}},
    "bad lag duration": {"metrics": {"prometheusRule": {"consumerLagFor": "a while"}}},
    "negative compaction margin": {
        "metrics": {"prometheusRule": {"compactionDelayMarginSeconds": -1}}
    },
    "bad scrape interval": {"metrics": {"serviceMonitor": {"interval": "often"}}},
    "bad memory quantity": {"broker": {"resources": {"limits": {"memory": "lots"}}}},
}


@pytest.mark.parametrize("case", BAD_VALUES)
def test_schema_rejects_bad_values(case: str) -> None:
    with pytest.raises(helm.HelmValuesError):
        chart().validate_schema(BAD_VALUES[case])
