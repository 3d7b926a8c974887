"""The chart on a secured cluster: listeners, TLS, SASL, the authorizer, users and ACLs by a Job,
NetworkPolicies and the helm test pod's token, rendered by Helm's own engine.

The services' own settings parsers read the environment the chart gives each pod (Secrets
mounted as files replaced by local copies at the same names), the Jobs' commands go through
the CLI's argparse, and the NetworkPolicies are matched against the pods' labels and ports.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from pafka.cli.main import build_parser
from pafka.security.listeners import SecurityProtocol
from pafka.security.principal import KafkaPrincipal
from services.broker.settings import BrokerSettings
from services.controller.settings import ControllerSettings
from services.gateway.settings import GatewaySettings
from tests.unit import test_chart
from tests.unit.test_chart import NAMESPACE, RELEASE, chart, container, lint

FULL = f"{RELEASE}-pafka"
POD_DOMAIN = f"{FULL}-broker-headless.{NAMESPACE}.svc.cluster.local"
ZK_POD_DOMAIN = f"{FULL}-zookeeper-headless.{NAMESPACE}.svc.cluster.local"
POD_INDEX = "metadata.labels['apps.kubernetes.io/pod-index']"
# What each Secret's key holds in these tests: user names by Secret, anything else a password.
USERS = {"pafka-broker-user": "broker", "pafka-gateway-user": "gw", "pafka-controller-user": "ctl"}

ACLS: list[dict[str, Any]] = [
    {"principal": "User:alice", "operation": ["Read", "Describe"], "topic": "orders"},
    {"principal": "User:alice", "operation": "Read", "group": "orders-", "patternType": "prefixed"},
    {
        "principal": "User:bob",
        "operation": "Write",
        "topic": "audit",
        "permission": "Deny",
        "host": "10.0.0.7",
    },
    {"principal": "User:ops", "operation": "Alter", "cluster": True},
    {"principal": "User:app", "operation": "Write", "transactionalId": "app-tx"},
]
QUOTAS: list[dict[str, Any]] = [
    {"user": "alice", "config": {"producer_byte_rate": 1048576, "consumer_byte_rate": 2097152}},
    {"user": "alice", "clientIdDefault": True, "config": {"request_percentage": 25}},
    {"clientId": "reports", "config": {"consumer_byte_rate": 524288}},
    {"userDefault": True, "config": {"producer_byte_rate": 10485760}},
]
SECURED: dict[str, Any] = {
    "broker": {
        "listeners": {
            "internal": {"protocol": "SASL_SSL"},
            "external": {
                "enabled": True,
                "protocol": "SASL_SSL",
                "port": 9094,
                "advertisedHost": "pafka-{id}.example.com",
                "service": {
                    "annotations": {
                        "external-dns.alpha.kubernetes.io/hostname": "pafka-{id}.example.com"
                    }
                },
            },
        },
        "authorizer": {"enabled": True, "superUsers": ["User:admin"]},
    },
    "tls": {
        "certManager": {
            "enabled": True,
            "issuerRef": {"name": "pafka-ca", "kind": "ClusterIssuer"},
        },
        "clientAuth": "requested",
    },
    "sasl": {
        "interBroker": {"existingSecret": "pafka-broker-user"},
        "gateway": {"existingSecret": "pafka-gateway-user"},
        "controller": {"existingSecret": "pafka-controller-user"},
        "connectionsMaxReauthMs": 3600000,
    },
    "gateway": {"auth": {"existingSecret": "pafka-gateway-tokens", "basic": True}},
    "tests": {"auth": {"existingSecret": "pafka-test-token"}},
    "provisioning": {"users": {"existingSecret": "pafka-users"}, "acls": ACLS, "quotas": QUOTAS},
    "zookeeper": {"auth": {"existingSecret": "pafka-zk"}},
    "controlApi": {"existingSecret": "pafka-control"},
    "metrics": {"serviceMonitor": {"enabled": True}},
    "networkPolicy": {
        "kafka": {"from": [{"namespaceSelector": {"matchLabels": {"team": "data"}}}]},
        "gateway": {"from": [{"namespaceSelector": {"matchLabels": {"team": "web"}}}]},
    },
}
# TLS alone (mTLS, a Secret of the user's own, no SASL): clients present the certificate too.
MTLS: dict[str, Any] = {
    "broker": {"listeners": {"internal": {"protocol": "SSL"}}},
    "tls": {"existingSecret": "pafka-tls", "clientAuth": "required"},
}
SASL_PLAINTEXT: dict[str, Any] = {
    "broker": {"listeners": {"internal": {"protocol": "SASL_PLAINTEXT"}}},
    "sasl": {
        "mechanisms": ["PLAIN", "SCRAM-SHA-256"],
        "interBroker": {"existingSecret": "pafka-broker-user", "mechanism": "SCRAM-SHA-256"},
        "gateway": {"existingSecret": "pafka-gateway-user", "mechanism": "PLAIN"},
        "controller": {"existingSecret": "pafka-controller-user"},
    },
}
VALUE_SETS = {"secured": SECURED, "mtls": MTLS, "sasl-plaintext": SASL_PLAINTEXT}


def merged(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """base with extra laid over it, maps merged key by key (as Helm merges values files)."""
    out = copy.deepcopy(dict(base))
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def render(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = chart().render(dict(values), name=RELEASE, namespace=NAMESPACE, is_install=True)
    docs: list[dict[str, Any]] = []
    for path, text in sorted(out.items()):
        if path.endswith(".yaml"):
            docs.extend(d for d in yaml.safe_load_all(text) if d)
    return docs


@cache
def manifests(value_set: str) -> tuple[dict[str, Any], ...]:
    return tuple(render(VALUE_SETS[value_set]) if value_set != "default" else render({}))


def of_kind(value_set: str, kind: str) -> list[dict[str, Any]]:
    return [d for d in manifests(value_set) if d["kind"] == kind]


def workload(value_set: str, suffix: str) -> dict[str, Any]:
    (found,) = [
        d
        for d in manifests(value_set)
        if d["kind"] in ("StatefulSet", "Deployment", "Job")
        and d["metadata"]["name"] == f"{FULL}-{suffix}"
    ]
    return found


def pod_env(
    entries: list[dict[str, Any]], fields: Mapping[str, str], secrets: Mapping[str, str]
) -> dict[str, str]:
    """The environment a kubelet gives the container: downward-API fields, Secret keys (user
    names from USERS), then $(VAR) references to variables defined earlier."""
    env: dict[str, str] = {}
    for entry in entries:
        if "value" in entry:
            value = re.sub(r"\$\((\w+)\)", lambda m: env.get(m[1], m[0]), entry["value"])
        elif "fieldRef" in entry["valueFrom"]:
            value = fields[entry["valueFrom"]["fieldRef"]["fieldPath"]]
        else:
            ref = entry["valueFrom"]["secretKeyRef"]
            value = secrets[ref["name"]]
        env[entry["name"]] = value
    return env


def mounted_files(spec: dict[str, Any], c: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Every Secret file in the container: path -> (Secret, key)."""
    volumes = {v["name"]: v for v in spec["volumes"]}
    files = {}
    for mount in c.get("volumeMounts", []):
        secret = volumes.get(mount["name"], {}).get("secret")  # data: a claim template
        if secret:
            assert mount["readOnly"] is True, mount
            for item in secret.get("items", []):
                files[f"{mount['mountPath']}/{item['path']}"] = (secret["secretName"], item["key"])
    return files


def settings_env(
    work: dict[str, Any], name: str, tmp_path: Path, ordinal: int = 0
) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """The container's environment, each mounted Secret file replaced by a local copy."""
    spec = work["spec"]["template"]["spec"]
    c = container(work, name)
    fields = {
        "status.podIP": "10.0.0.1",
        POD_INDEX: str(ordinal),
        "metadata.name": f"{FULL}-{name}-{ordinal}",
        "metadata.labels['topology.kubernetes.io/zone']": "zone-a",
    }
    env = pod_env(c["env"], fields, USERS)
    assert not [v for v in env.values() if "$(" in v], env
    files = mounted_files(spec, c)
    for key, value in env.items():
        if value in files:
            local = tmp_path / value.strip("/").replace("/", "_")
            local.write_text("digest:pafka:pw" if "zookeeper" in value else f"pw-{key}\n")
            env[key] = str(local)
    return env, files


# ---- Helm's checks and Kubernetes' schemas ---------------------------------------------------


def assert_lints_and_validates(values: Mapping[str, Any], docs: Iterable[dict[str, Any]]) -> None:
    """Helm's lint is clean for the values; each manifest is valid for current Kubernetes (the
    CRDs' objects, cert-manager's and the Prometheus Operator's, checked structurally)."""
    report = lint(values)
    assert report["errors"] == [], report
    assert [m for m in report["messages"] if m["severity"] >= 2] == [], report
    for doc in docs:
        if doc["apiVersion"].startswith(("cert-manager.io/", "monitoring.coreos.com/")):
            assert doc["metadata"]["namespace"] == NAMESPACE and doc["spec"]
            continue
        kubernetes_validate.validate(doc, test_chart.KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_secured_values_lint_and_validate(value_set: str) -> None:
    assert_lints_and_validates(VALUE_SETS[value_set], manifests(value_set))


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_no_container_sets_a_variable_twice(value_set: str) -> None:
    """broker.config entries for what the chart's own values set give way to those."""
    config = {"SSL_CLIENT_AUTH": "none", "LISTENERS": "X://:1", "AUTHORIZER": "", "SUPER_USERS": ""}
    values = merged(VALUE_SETS[value_set], {"broker": {"config": config}})
    docs = render(values)
    for doc in docs:
        if doc["kind"] not in ("StatefulSet", "Deployment", "Job"):
            continue
        for c in doc["spec"]["template"]["spec"]["containers"]:
            names = [e["name"] for e in c.get("env", [])]
            assert len(names) == len(set(names)), (doc["metadata"]["name"], c["name"])
    (broker,) = [
        d for d in docs if d["kind"] == "StatefulSet" and "broker" in d["metadata"]["name"]
    ]
    env = {e["name"]: e.get("value") for e in container(broker, "broker")["env"]}
    assert env["PAFKA_BROKER_LISTENERS"].startswith("INTERNAL://")
    assert env["PAFKA_BROKER_SSL_CLIENT_AUTH"] == VALUE_SETS[value_set].get("tls", {}).get(
        "clientAuth", "none"
    )


# ---- brokers ---------------------------------------------------------------------------------


def test_brokers_listen_with_tls_files_at_the_mounted_paths(tmp_path: Path) -> None:
    broker = workload("secured", "broker")
    for ordinal in (0, 2):
        env, files = settings_env(broker, "broker", tmp_path, ordinal)
        settings = BrokerSettings.from_env(env)
        listeners = settings.listeners
        bound = {e.listener: (e.protocol, e.port) for e in listeners.listeners}
        assert bound == {
            "INTERNAL": (SecurityProtocol.SASL_SSL, 9092),
            "EXTERNAL": (SecurityProtocol.SASL_SSL, 9094),
        }
        advertised = {e.listener: (e.host, e.port) for e in listeners.advertised}
        assert advertised == {
            "INTERNAL": (f"{FULL}-broker-{ordinal}.{POD_DOMAIN}", 9092),
            "EXTERNAL": (f"pafka-{ordinal}.example.com", 9094),
        }
        assert listeners.inter_broker_listener == "INTERNAL"
        assert listeners.sasl_mechanisms == ("SCRAM-SHA-512", "SCRAM-SHA-256")
        assert listeners.reauth_ms == 3600000
        assert listeners.client_auth.value == "requested"
        assert listeners.inter_broker.sasl_username == "broker"
        assert (
            listeners.inter_broker.sasl_password
            == "pw-PAFKA_BROKER_INTER_BROKER_SASL_PASSWORD_FILE"
        )
        assert settings.authorizer == "acl"
        assert settings.acl.super_users == {
            KafkaPrincipal("User", name) for name in ("broker", "ctl", "gw", "admin")
        }
    # The TLS files are the certificate Secret's keys, where the broker is told to find them.
    c = container(broker, "broker")
    told = {e["name"]: e.get("value") for e in c["env"]}
    secret = f"{FULL}-broker-tls"
    assert files["/etc/pafka/tls/tls.crt"] == (secret, "tls.crt")
    assert files["/etc/pafka/tls/tls.key"] == (secret, "tls.key")
    assert files["/etc/pafka/tls/ca.crt"] == (secret, "ca.crt")
    assert told["PAFKA_BROKER_SSL_CERTFILE"] == "/etc/pafka/tls/tls.crt"
    assert told["PAFKA_BROKER_SSL_KEYFILE"] == "/etc/pafka/tls/tls.key"
    assert told["PAFKA_BROKER_SSL_CAFILE"] == "/etc/pafka/tls/ca.crt"
    assert files["/etc/pafka/sasl/inter-broker/password"] == ("pafka-broker-user", "password")


def test_broker_probes_stay_on_http_and_services_publish_every_listener() -> None:
    broker = workload("secured", "broker")
    c = container(broker, "broker")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"kafka": 9092, "http": 8091, "external": 9094}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert c[probe]["httpGet"]["port"] == "http"
    services = {s["metadata"]["name"]: s for s in of_kind("secured", "Service")}
    headless = services[f"{FULL}-broker-headless"]["spec"]["ports"]
    assert {p["name"]: p["port"] for p in headless} == ports
    assert [p["port"] for p in services[f"{FULL}-broker"]["spec"]["ports"]] == [9092]
    labels = broker["spec"]["template"]["metadata"]["labels"]
    for i in range(3):
        external = services[f"{FULL}-broker-{i}-external"]
        selector = dict(external["spec"]["selector"])
        # The StatefulSet controller labels each pod with its name.
        assert selector.pop("statefulset.kubernetes.io/pod-name") == f"{FULL}-broker-{i}"
        assert selector.items() <= labels.items()
        assert external["spec"]["ports"] == [
            {"name": "external", "port": 9094, "targetPort": "external"}
        ]
        assert external["spec"]["type"] == "LoadBalancer"
        hostname = external["metadata"]["annotations"]["external-dns.alpha.kubernetes.io/hostname"]
        assert hostname == f"pafka-{i}.example.com"


def _covers(names: list[str], host: str) -> bool:
    """A certificate name matches the host as TLS clients check it: a wildcard is one label."""
    for name in names:
        if name.startswith("*."):
            label, _, rest = host.partition(".")
            if rest == name[2:] and label and fnmatchcase(label, "*"):
                return True
        elif name == host:
            return True
    return False


def test_certificate_names_cover_every_broker_and_service(tmp_path: Path) -> None:
    (cert,) = of_kind("secured", "Certificate")
    spec = cert["spec"]
    assert spec["secretName"] == f"{FULL}-broker-tls"
    assert spec["issuerRef"] == {
        "name": "pafka-ca",
        "kind": "ClusterIssuer",
        "group": "cert-manager.io",
    }
    assert {"server auth", "client auth"} <= set(spec["usages"])
    names = spec["dnsNames"]
    broker = workload("secured", "broker")
    for ordinal in range(3):
        env, _ = settings_env(broker, "broker", tmp_path, ordinal)
        for endpoint in BrokerSettings.from_env(env).listeners.advertised:
            assert _covers(names, endpoint.host), endpoint
    # Brokers added by scaling up, and the bootstrap Service by each of its names.
    assert _covers(names, f"{FULL}-broker-7.{POD_DOMAIN}")
    for name in (f"{FULL}-broker", f"{FULL}-broker.{NAMESPACE}.svc.cluster.local"):
        assert _covers(names, name)
    assert not _covers(names, f"a.b.{POD_DOMAIN}")
    # An existing Secret replaces the Certificate.
    assert not of_kind("mtls", "Certificate")


# ---- the gateway and controllers as clients --------------------------------------------------


def test_gateway_and_controllers_connect_with_their_own_users(tmp_path: Path) -> None:
    gateway = workload("secured", "gateway")
    env, files = settings_env(gateway, "gateway", tmp_path)
    g = GatewaySettings.from_env(env)
    # The brokers' ACLs decide REST calls too, and Basic logins use the SCRAM users.
    assert (g.authorizer, g.basic_auth) == ("acl", True)
    assert {str(p) for p in g.acl.super_users} == {"User:admin"}
    security = g.kafka_security
    assert security.protocol is SecurityProtocol.SASL_SSL and security.listener == "INTERNAL"
    assert security.tls.cafile == env["PAFKA_GATEWAY_SSL_CAFILE"]
    assert files["/etc/pafka/tls/ca.crt"] == (f"{FULL}-broker-tls", "ca.crt")
    # The CA only: the brokers' key stays in the brokers' pods.
    assert "/etc/pafka/tls/tls.key" not in files
    assert (security.sasl_mechanism, security.sasl_username) == ("SCRAM-SHA-512", "gw")
    assert security.sasl_password == "pw-PAFKA_GATEWAY_SASL_PASSWORD_FILE"
    assert files["/etc/pafka/sasl/client/password"] == ("pafka-gateway-user", "password")
    assert g.tokens_file is not None and files["/etc/pafka/gateway/tokens"] == (
        "pafka-gateway-tokens",
        "tokens",
    )
    controller = workload("secured", "controller")
    env, files = settings_env(controller, "controller", tmp_path)
    c = ControllerSettings.from_env(env).kafka_security
    assert (c.protocol, c.listener, c.sasl_username) == (
        SecurityProtocol.SASL_SSL,
        "INTERNAL",
        "ctl",
    )
    assert files["/etc/pafka/sasl/client/password"] == ("pafka-controller-user", "password")


def test_mtls_clients_present_the_certificate(tmp_path: Path) -> None:
    broker = workload("mtls", "broker")
    env, files = settings_env(broker, "broker", tmp_path)
    listeners = BrokerSettings.from_env(env).listeners
    assert [(e.listener, e.protocol) for e in listeners.listeners] == [
        ("INTERNAL", SecurityProtocol.SSL)
    ]
    assert listeners.client_auth.value == "required"
    assert {s for s, _ in files.values()} == {"pafka-tls"}
    for name in ("gateway", "controller"):
        env, files = settings_env(workload("mtls", name), name, tmp_path)
        prefix = name.upper()
        security = (GatewaySettings if name == "gateway" else ControllerSettings).from_env(env)
        tls = security.kafka_security.tls
        assert security.kafka_security.protocol is SecurityProtocol.SSL
        assert (tls.certfile, tls.keyfile) == (
            env[f"PAFKA_{prefix}_SSL_CERTFILE"],
            env[f"PAFKA_{prefix}_SSL_KEYFILE"],
        )
        assert set(files) == {
            "/etc/pafka/tls/ca.crt",
            "/etc/pafka/tls/tls.crt",
            "/etc/pafka/tls/tls.key",
        }
    # No SASL: no users to create, no Job.
    assert not of_kind("mtls", "Job")


def test_sasl_plaintext_mechanisms(tmp_path: Path) -> None:
    env, files = settings_env(workload("sasl-plaintext", "broker"), "broker", tmp_path)
    listeners = BrokerSettings.from_env(env).listeners
    assert listeners.sasl_mechanisms == ("PLAIN", "SCRAM-SHA-256")
    assert listeners.inter_broker.sasl_mechanism == "SCRAM-SHA-256"
    assert listeners.inter_broker.protocol is SecurityProtocol.SASL_PLAINTEXT
    assert not [f for f in files if "/tls/" in f]
    env, _ = settings_env(workload("sasl-plaintext", "gateway"), "gateway", tmp_path)
    assert GatewaySettings.from_env(env).kafka_security.sasl_mechanism == "PLAIN"


# ---- provisioning: users and ACLs ------------------------------------------------------------


def _job_containers() -> dict[str, dict[str, Any]]:
    job = workload("secured", "security")
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "post-install,post-upgrade"
    # Before the topics Job (weight 0), so a topic's ACLs are in place as it appears.
    assert int(annotations["helm.sh/hook-weight"]) < 0
    return {c["name"]: c for c in job["spec"]["template"]["spec"]["containers"]}


def _zookeeper() -> str:
    return ",".join(f"{FULL}-zookeeper-{i}.{ZK_POD_DOMAIN}:2181" for i in range(3))


SERVICE_USERS = {
    "broker": ("pafka-broker-user", "broker"),
    "controller": ("pafka-controller-user", "controller"),
    "gateway": ("pafka-gateway-user", "gateway"),
}


@pytest.mark.parametrize("component", SERVICE_USERS)
def test_each_service_creates_its_own_user_before_it_starts(component: str) -> None:
    """An init container: the services need their users to become ready, before any
    post-install hook runs under `helm install --wait`."""
    secret, name = SERVICE_USERS[component]
    spec = workload("secured", component)["spec"]["template"]["spec"]
    (init,) = spec["initContainers"]
    env = pod_env(init["env"], {}, USERS)
    argv = [
        a.replace("$(SASL_USERNAME)", env["SASL_USERNAME"])
        for a in init["command"][1:] + init["args"]
    ]
    args = build_parser().parse_args(argv)
    assert (args.command, args.verb, args.name) == ("users", "create", USERS[secret])
    assert args.mechanism == ["SCRAM-SHA-512", "SCRAM-SHA-256"]
    assert args.zookeeper == _zookeeper()
    assert mounted_files(spec, init)[str(args.password_file)] == (secret, "password")
    # The same password file the service logs in with.
    service_files = mounted_files(spec, container(workload("secured", component), name))
    assert service_files[str(args.password_file)] == (secret, "password")
    assert env["PAFKA_CLI_ZK_AUTH_FILE"] == "/etc/pafka/zookeeper/zk-auth"
    assert (
        init["securityContext"]
        == container(workload("secured", component), name)["securityContext"]
    )
    assert init["resources"]["limits"]["memory"]
    assert not [c for c in _job_containers() if c.startswith("user-")]


def test_users_secret_creates_one_user_per_key(tmp_path: Path) -> None:
    """The loop runs in a real shell, with `pafka` a recorder of its arguments; each argv then
    goes through the CLI's parser."""
    c = _job_containers()["users"]
    spec = workload("secured", "security")["spec"]["template"]["spec"]
    (mount,) = [m for m in c["volumeMounts"] if m["name"] == "users"]
    (volume,) = [v for v in spec["volumes"] if v["name"] == "users"]
    assert volume["secret"]["secretName"] == "pafka-users" and mount["readOnly"]
    users = tmp_path / "users"
    users.mkdir()
    for name in ("alice", "bob.smith"):
        (users / name).write_text("pw\n")
    (users / "..data").mkdir()  # the kubelet's atomic-update directory must not become a user
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "argv"
    stub = bin_dir / "pafka"
    stub.write_text(
        f'#!/bin/sh\nfor a in "$@"; do printf "%s\\0" "$a"; done >> {record}\necho >> {record}\n'
    )
    stub.chmod(0o755)
    script = c["args"][0].replace(mount["mountPath"], str(users))
    env = {**pod_env(c["env"], {}, USERS), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    subprocess.run([*c["command"], script], env=env, check=True, timeout=30)
    calls = [line.split("\0")[:-1] for line in record.read_text().splitlines()]
    parsed = [build_parser().parse_args(argv) for argv in calls]
    assert sorted(a.name for a in parsed) == ["alice", "bob.smith"]
    for args in parsed:
        assert (args.command, args.verb) == ("users", "create")
        assert args.password_file == users / args.name
        assert args.zookeeper == _zookeeper()
        assert args.mechanism == ["SCRAM-SHA-512", "SCRAM-SHA-256"]


def _job_commands(
    kind: str, wanted: list[dict[str, Any]]
) -> Iterator[tuple[dict[str, Any], argparse.Namespace]]:
    """Each value with its Job container (`kind-N`)'s command as the CLI parses it."""
    containers = _job_containers()
    assert len([c for c in containers if c.startswith(f"{kind}-")]) == len(wanted)
    for index, item in enumerate(wanted):
        c = containers[f"{kind}-{index}"]
        args = build_parser().parse_args(c["command"][1:] + c["args"])
        assert args.zookeeper == _zookeeper()
        yield item, args


def test_acls_job_runs_what_pafka_acls_accepts() -> None:
    for acl, args in _job_commands("acl", ACLS):
        assert (args.command, args.verb) == ("acls", "add")
        deny = acl.get("permission") == "Deny"
        assert (args.deny_principal if deny else args.allow_principal) == [acl["principal"]]
        assert (args.allow_principal if deny else args.deny_principal) == []
        assert (args.deny_host if deny else args.allow_host) == [acl.get("host", "*")]
        wanted = acl["operation"] if isinstance(acl["operation"], list) else [acl["operation"]]
        assert args.operation == wanted
        assert args.topic == ([acl["topic"]] if "topic" in acl else [])
        assert args.group == ([acl["group"]] if "group" in acl else [])
        assert args.transactional_id == (
            [acl["transactionalId"]] if "transactionalId" in acl else []
        )
        assert args.cluster is bool(acl.get("cluster"))
        assert args.resource_pattern_type == acl.get("patternType", "literal")


def test_quotas_job_runs_what_pafka_quotas_accepts() -> None:
    for quota, args in _job_commands("quota", QUOTAS):
        assert (args.command, args.verb) == ("quotas", "alter")
        assert (args.user, args.user_default) == (quota.get("user"), bool(quota.get("userDefault")))
        assert (args.client_id, args.client_id_default) == (
            quota.get("clientId"),
            bool(quota.get("clientIdDefault")),
        )
        assert dict(kv.split("=") for kv in args.add.split(",")) == {
            k: str(v) for k, v in quota["config"].items()
        }


def test_without_sasl_or_provisioning_values_there_is_no_security_job() -> None:
    assert not [j for j in of_kind("default", "Job")]
    only_acls = render({"provisioning": {"acls": ACLS[:1]}})
    (job,) = [d for d in only_acls if d["kind"] == "Job"]
    names = [c["name"] for c in job["spec"]["template"]["spec"]["containers"]]
    assert names == ["acl-0"]


# ---- NetworkPolicies -------------------------------------------------------------------------


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, selector
    return bool(selector["matchLabels"].items() <= labels.items())


def _pods(value_set: str) -> dict[str, tuple[dict[str, str], set[int]]]:
    """Component -> (pod labels, container ports) of every workload and the test pod."""
    found = {}
    for doc in manifests(value_set):
        if doc["kind"] in ("StatefulSet", "Deployment", "Job"):
            labels, spec = (
                doc["spec"]["template"]["metadata"]["labels"],
                doc["spec"]["template"]["spec"],
            )
        elif doc["kind"] == "Pod":
            labels, spec = doc["metadata"]["labels"], doc["spec"]
        else:
            continue
        ports = {p["containerPort"] for c in spec["containers"] for p in c.get("ports", [])}
        found[labels["app.kubernetes.io/component"]] = (labels, ports)
    return found


def _allowed(policy: dict[str, Any], port: int) -> list[list[dict[str, Any]] | None]:
    """The `from` lists of the rules opening this port (None: any source)."""
    return [
        rule.get("from")
        for rule in policy["spec"]["ingress"]
        if port in {p["port"] for p in rule["ports"]}
    ]


def _peer_components(peers: list[dict[str, Any]], pods: Mapping[str, Any]) -> set[str]:
    return {
        name
        for name, (labels, _) in pods.items()
        for peer in peers
        if set(peer) == {"podSelector"} and _selects(peer["podSelector"], labels)
    }


def test_network_policies_select_the_right_pods_and_ports() -> None:
    pods = _pods("secured")
    policies = {
        p["metadata"]["name"].removeprefix(f"{FULL}-"): p
        for p in of_kind("secured", "NetworkPolicy")
    }
    assert set(policies) == {"zookeeper", "broker", "controller", "gateway"}
    for name, policy in policies.items():
        assert policy["spec"]["policyTypes"] == ["Ingress"]
        selected = [
            c for c, (labels, _) in pods.items() if _selects(policy["spec"]["podSelector"], labels)
        ]
        assert selected == [name], name
        opened = {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}
        assert opened <= pods[name][1], name
    release_pods = set(pods)
    prometheus = {
        "namespaceSelector": {},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
    }
    zk = policies["zookeeper"]
    (client,) = _allowed(zk, 2181)
    assert client is not None and _peer_components(client, pods) == release_pods
    for quorum in (2888, 3888):
        (peers,) = _allowed(zk, quorum)
        assert peers is not None and _peer_components(peers, pods) == {"zookeeper"}
    assert _allowed(zk, 8080) == []
    broker = policies["broker"]
    (kafka,) = _allowed(broker, 9092)
    assert kafka is not None and _peer_components(kafka, pods) == release_pods
    assert {"namespaceSelector": {"matchLabels": {"team": "data"}}} in kafka
    assert _allowed(broker, 9094) == [None]
    (control,) = _allowed(broker, 8091)
    assert control is not None and _peer_components(control, pods) == {"controller"}
    assert prometheus in control and len(control) == 2
    (controller,) = _allowed(policies["controller"], 8090)
    # Brokers for the control API, gateways for the console's lag history (/lag-history).
    assert controller is not None and _peer_components(controller, pods) == {"broker", "gateway"}
    assert prometheus in controller and len(controller) == 3
    (rest,) = _allowed(policies["gateway"], 8082)
    assert rest is not None and _peer_components(rest, pods) == release_pods
    assert prometheus in rest


def test_default_policies_open_kafka_and_rest_and_close_the_control_ports() -> None:
    policies = {
        p["metadata"]["name"].removeprefix(f"{FULL}-"): p
        for p in of_kind("default", "NetworkPolicy")
    }
    pods = _pods("default")
    assert _allowed(policies["broker"], 9092) == [None]
    assert _allowed(policies["gateway"], 8082) == [None]
    (control,) = _allowed(policies["broker"], 8091)
    assert control is not None and _peer_components(control, pods) == {"controller"}
    assert len(control) == 1, "no scraping configured: nothing else reaches the control port"
    external_zk = render({"zookeeper": {"enabled": False, "connect": "zk:2181"}})
    assert "zookeeper" not in {
        d["metadata"]["name"].removeprefix(f"{FULL}-")
        for d in external_zk
        if d["kind"] == "NetworkPolicy"
    }
    off = render({"networkPolicy": {"enabled": False}})
    assert not [d for d in off if d["kind"] == "NetworkPolicy"]


# ---- defaults unchanged, the test pod, the values' schema ------------------------------------

NEW_ENV = re.compile(
    r"LISTENER|SSL_|SASL|REAUTH|SECURITY_PROTOCOL|TOKENS_FILE|TOKEN_FILE|SUPER_USERS|AUTHORIZER"
)


def test_default_values_render_as_before_but_for_the_network_policies() -> None:
    with_policies = manifests("default")
    without = render({"networkPolicy": {"enabled": False}})
    assert [d for d in with_policies if d["kind"] != "NetworkPolicy"] == without
    kinds = {d["kind"] for d in without}
    assert not kinds & {"Certificate", "NetworkPolicy", "Job"}
    # ZooKeeper's one init container fills its writable conf volume with the image's files.
    assert not [
        d
        for d in without
        if "initContainers" in d.get("spec", {}).get("template", {}).get("spec", {})
        and not d["metadata"]["name"].endswith("-zookeeper")
    ]
    assert [
        s["metadata"]["name"]
        for s in without
        if s["kind"] == "Service" and "external" in s["metadata"]["name"]
    ] == []
    for doc in without:
        spec = (
            doc["spec"]["template"]["spec"]
            if doc["kind"] in ("StatefulSet", "Deployment")
            else doc["spec"]
            if doc["kind"] == "Pod"
            else None
        )
        if spec is None:
            continue
        assert not [
            v
            for v in spec.get("volumes", [])
            if v["name"] in ("tls", "sasl-client", "sasl-inter-broker", "gateway-tokens", "token")
        ]
        for c in spec["containers"]:
            # broker.config's own AUTHORIZER/SUPER_USERS entries render as they always did.
            chart_set = [
                e["name"]
                for e in c.get("env", [])
                if NEW_ENV.search(e["name"]) and not e["name"].startswith("PAFKA_BROKER_")
            ]
            assert chart_set == [], (doc["metadata"]["name"], chart_set)
            names = {e["name"] for e in c.get("env", [])}
            assert not names & {
                "PAFKA_BROKER_LISTENERS",
                "PAFKA_BROKER_SSL_CERTFILE",
                "PAFKA_BROKER_SASL_ENABLED_MECHANISMS",
            }


def test_helm_test_pod_sends_the_token_from_its_secret() -> None:
    (pod,) = of_kind("secured", "Pod")
    c = pod["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in c["env"]}
    files = mounted_files(pod["spec"] | {"volumes": pod["spec"]["volumes"]}, c)
    assert files[env["TOKEN_FILE"]] == ("pafka-test-token", "token")
    script = (test_chart.CHART / "files" / "roundtrip.py").read_text()
    assert 'os.environ.get("TOKEN_FILE")' in script and "Bearer {TOKEN}" in script
    (plain,) = of_kind("default", "Pod")
    assert "TOKEN_FILE" not in {e["name"] for e in plain["spec"]["containers"][0]["env"]}


def test_schema_accepts_the_secured_values() -> None:
    for values in VALUE_SETS.values():
        chart().validate_schema(values)


BAD_VALUES = {
    "unknown protocol": {"broker": {"listeners": {"internal": {"protocol": "TLS"}}}},
    "external port out of range": {"broker": {"listeners": {"external": {"port": 70000}}}},
    "bad client auth": {"tls": {"clientAuth": "optional"}},
    "unknown mechanism": {"sasl": {"mechanisms": ["GSSAPI"]}},
    "no mechanism": {"sasl": {"mechanisms": []}},
    "negative reauth": {"sasl": {"connectionsMaxReauthMs": -1}},
    "PLAIN for stored users": {"provisioning": {"users": {"mechanisms": ["PLAIN"]}}},
    "super user without type": {"broker": {"authorizer": {"superUsers": ["admin"]}}},
    "acl without resource": {
        "provisioning": {"acls": [{"principal": "User:a", "operation": "Read"}]}
    },
    "acl on two resources": {
        "provisioning": {
            "acls": [{"principal": "User:a", "operation": "Read", "topic": "t", "group": "g"}]
        }
    },
    "acl bad permission": {
        "provisioning": {
            "acls": [
                {"principal": "User:a", "operation": "Read", "topic": "t", "permission": "Maybe"}
            ]
        }
    },
    "bad issuer kind": {"tls": {"certManager": {"issuerRef": {"kind": "Vault"}}}},
    "bad peer": {"networkPolicy": {"kafka": {"from": [{"pods": "all"}]}}},
    "quota without entity": {"provisioning": {"quotas": [{"config": {"producer_byte_rate": 1}}]}},
    "quota for a user and the default user": {
        "provisioning": {
            "quotas": [{"user": "a", "userDefault": True, "config": {"producer_byte_rate": 1}}]
        }
    },
    "unknown quota": {"provisioning": {"quotas": [{"user": "a", "config": {"bytes": 1}}]}},
    "zero quota": {
        "provisioning": {"quotas": [{"user": "a", "config": {"producer_byte_rate": 0}}]}
    },
    "bad service type": {"broker": {"listeners": {"external": {"service": {"type": "Ingress"}}}}},
}


@pytest.mark.parametrize("case", BAD_VALUES)
def test_schema_rejects_bad_security_values(case: str) -> None:
    with pytest.raises(helm.HelmValuesError):
        chart().validate_schema(BAD_VALUES[case])


MISSING = {
    "TLS listener without a certificate": (
        {"broker": {"listeners": {"internal": {"protocol": "SSL"}}}},
        "tls.existingSecret or tls.certManager.enabled",
    ),
    "SASL without the brokers' user": (
        {"broker": {"listeners": {"internal": {"protocol": "SASL_PLAINTEXT"}}}},
        "existingSecret is required when the internal listener uses SASL",
    ),
    "external listener without a host": (
        {"broker": {"listeners": {"external": {"enabled": True, "protocol": "SASL_PLAINTEXT"}}}},
        "advertisedHost",
    ),
    "cert-manager without an issuer": (
        merged(MTLS, {"tls": {"existingSecret": "", "certManager": {"enabled": True}}}),
        "issuerRef.name",
    ),
}


@pytest.mark.parametrize("case", MISSING)
def test_missing_security_values_fail_with_their_names(case: str) -> None:
    values, message = MISSING[case]
    with pytest.raises(helm.HelmError, match=re.escape(message)):
        render(values)


def test_notes_name_the_protocol_the_ca_and_the_external_addresses() -> None:
    out = chart().render(SECURED, name=RELEASE, namespace=NAMESPACE, is_install=True)
    notes = out["pafka/templates/NOTES.txt"]
    assert f"SASL_SSL (CA: key ca.crt of Secret {FULL}-broker-tls)" in notes
    assert "pafka-0.example.com:9094,pafka-1.example.com:9094,pafka-2.example.com:9094" in notes
    assert "Authorization: Bearer" in notes
    plain = chart().render({}, name=RELEASE, namespace=NAMESPACE, is_install=True)
    assert "Kafka security" not in plain["pafka/templates/NOTES.txt"]


def test_readme_example_renders_and_validates() -> None:
    readme = (test_chart.CHART.parents[1] / "README.md").read_text()
    section = readme[readme.index("### On Kubernetes") :]
    values = yaml.safe_load(section.split("```yaml\n", 1)[1].split("```", 1)[0])
    chart().validate_schema(values)
    for doc in render(values):
        if not doc["apiVersion"].startswith(("cert-manager.io/", "monitoring.coreos.com/")):
            kubernetes_validate.validate(doc, test_chart.KUBERNETES_VERSION, strict=True)
