"""The chart with the gateway on HTTPS (gateway.tls), rendered by Helm's own engine.

The gateway's own settings parser reads the environment the chart gives its pods (the
certificate Secret's files at their mounted paths), and everything in the chart that calls the
gateway follows it: probes, the Service and Ingress, the ServiceMonitor, the `helm test` pod, the
Spark jobs and the NOTES. With gateway.tls off nothing of it renders.
"""

from __future__ import annotations

import re
import ssl
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest

from pafka.local.certs import ThrowawayCa
from pafka.security.tls import ClientAuth
from pafka.spark.errors import GatewayUnavailableError
from pafka.spark.gateway import GatewayClient
from pafka.spark.options import GatewayOptions, parse_read
from services.gateway.settings import GatewaySettings
from tests.unit import test_chart
from tests.unit.test_chart import NAMESPACE, RELEASE, chart, container
from tests.unit.test_chart_security_listeners import (
    SECURED,
    assert_lints_and_validates,
    merged,
    mounted_files,
    pod_env,
    render,
)
from tests.unit.test_chart_spark import SPARK_ON

FULL = f"{RELEASE}-pafka"
GATEWAY_HOST = f"{FULL}-gateway.{NAMESPACE}.svc.cluster.local"
ISSUER = {"tls": {"certManager": {"issuerRef": {"name": "pafka-ca", "kind": "ClusterIssuer"}}}}
# A cert-manager certificate, client certificates verified when sent, an Ingress and Prometheus.
CERT_MANAGER: dict[str, Any] = merged(
    ISSUER,
    {
        "gateway": {
            "tls": {"enabled": True, "certManager": {"enabled": True}, "clientAuth": "requested"},
            "ingress": {"enabled": True, "className": "nginx", "host": "rest.example.com"},
        },
        "metrics": {"serviceMonitor": {"enabled": True}},
    },
)
# mTLS with a Secret of the user's own, its key encrypted (so no ServiceMonitor: see below).
MTLS: dict[str, Any] = {
    "gateway": {
        "tls": {
            "enabled": True,
            "existingSecret": "rest-tls",
            "keyPasswordKey": "key-password",
            "clientAuth": "required",
            "reloadIntervalMs": 30000,
        },
        "ingress": {"enabled": True, "annotations": {"example.com/team": "data"}},
    },
}
# mTLS scraped by Prometheus, which presents the gateway's key: not encrypted.
MTLS_SCRAPED = merged(
    MTLS,
    {"gateway": {"tls": {"keyPasswordKey": ""}}, "metrics": {"serviceMonitor": {"enabled": True}}},
)
# A certificate from a CA every caller already trusts: no CA in the Secret.
PUBLIC_CA: dict[str, Any] = {
    "gateway": {"tls": {"enabled": True, "existingSecret": "rest-tls", "caKey": ""}},
    "metrics": {"serviceMonitor": {"enabled": True}},
}
# The whole secured cluster of the security tests, its gateway on HTTPS too.
SECURED_HTTPS = merged(
    SECURED, {"gateway": {"tls": {"enabled": True, "certManager": {"enabled": True}}}}
)
VALUE_SETS = {
    "cert-manager": CERT_MANAGER,
    "mtls": MTLS,
    "mtls-scraped": MTLS_SCRAPED,
    "public-ca": PUBLIC_CA,
    "secured": SECURED_HTTPS,
}
# What each Secret key read into the environment holds here.
SECRET_VALUES = {"rest-tls": "key-secret", "pafka-gateway-user": "gw"}


def docs(value_set: str) -> list[dict[str, Any]]:
    return render(VALUE_SETS[value_set])


def of_kind(found: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in found if d["kind"] == kind]


def gateway_of(found: list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = [
        d for d in found if d["kind"] == "Deployment" and d["metadata"]["name"] == f"{FULL}-gateway"
    ]
    return deployment


def service_of(found: list[dict[str, Any]]) -> dict[str, Any]:
    (service,) = [
        d for d in found if d["kind"] == "Service" and d["metadata"]["name"] == f"{FULL}-gateway"
    ]
    return service


def secret_of(value_set: str) -> str:
    return VALUE_SETS[value_set]["gateway"]["tls"].get("existingSecret") or f"{FULL}-gateway-tls"


# ---- Helm's checks and Kubernetes' schemas ---------------------------------------------------


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_https_values_lint_and_validate(value_set: str) -> None:
    chart().validate_schema(VALUE_SETS[value_set])
    assert_lints_and_validates(VALUE_SETS[value_set], docs(value_set))


# ---- the gateway ------------------------------------------------------------------------------


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_gateway_serves_https_with_the_mounted_files(value_set: str, tmp_path: Path) -> None:
    gateway = gateway_of(docs(value_set))
    spec = gateway["spec"]["template"]["spec"]
    c = container(gateway, "gateway")
    env = pod_env(c["env"], {}, SECRET_VALUES)
    files = mounted_files(spec, c)
    # The files the settings read at start (ZooKeeper's credentials, the SASL password) as local
    # copies; the certificate files are only named, read by the server as it starts.
    read = {k: v for k, v in env.items() if v in files and "/gateway-tls/" not in v}
    for key, path in read.items():
        local = tmp_path / key
        local.write_text("digest:pafka:pw" if "zookeeper" in path else "pw")
        env[key] = str(local)
    settings = GatewaySettings.from_env(env)
    tls = VALUE_SETS[value_set]["gateway"]["tls"]
    secret = secret_of(value_set)
    assert settings.https is not None
    assert files[settings.https.certfile] == (secret, "tls.crt")
    assert files[settings.https.keyfile] == (secret, "tls.key")
    client_auth = ClientAuth(tls.get("clientAuth", "none"))
    assert settings.https_client_auth is client_auth
    if client_auth is ClientAuth.NONE:
        # No client certificates to verify: the CA is not named (nor needed).
        assert settings.https.cafile is None
    else:
        assert files[settings.https.cafile] == (secret, "ca.crt")
    assert settings.https.key_password == ("key-secret" if tls.get("keyPasswordKey") else None)
    assert settings.https_reload_interval_ms == tls.get("reloadIntervalMs", 60000)
    # The gateway serves its REST port, named for the protocol, as before.
    (port,) = c["ports"]
    assert port == {"name": "https", "containerPort": settings.port}
    mount = next(m for m in c["volumeMounts"] if m["name"] == "gateway-tls")
    assert mount["readOnly"] is True


def test_chart_owns_the_https_settings_over_gateway_config() -> None:
    config = {"HTTPS_CLIENT_AUTH": "none", "HTTPS_CERTFILE": "/x", "LINGER_MS": 5}
    gateway = gateway_of(render(merged(MTLS, {"gateway": {"config": config}})))
    entries = container(gateway, "gateway")["env"]
    names = [e["name"] for e in entries]
    assert len(names) == len(set(names))
    env = pod_env(entries, {}, SECRET_VALUES)
    assert env["PAFKA_GATEWAY_HTTPS_CLIENT_AUTH"] == "required"
    assert env["PAFKA_GATEWAY_LINGER_MS"] == "5"
    # Without gateway.tls the entries are the user's, as any other.
    plain = gateway_of(render({"gateway": {"config": config}}))
    assert (
        pod_env(container(plain, "gateway")["env"], {}, {})["PAFKA_GATEWAY_HTTPS_CERTFILE"] == "/x"
    )


@pytest.mark.parametrize("value_set", ["cert-manager", "public-ca", "secured"])
def test_kubelet_probes_ask_over_https(value_set: str) -> None:
    c = container(gateway_of(docs(value_set)), "gateway")
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/livez")):
        assert c[probe]["httpGet"] == {"path": path, "port": "https", "scheme": "HTTPS"}


def test_mtls_probes_present_the_gateways_certificate_from_inside_the_pod() -> None:
    """The kubelet cannot present a client certificate: the probe is a GET from the container,
    with the gateway's own settings (so it asks the port and certificate the gateway has)."""
    c = container(gateway_of(docs("mtls")), "gateway")
    env_names = {e["name"] for e in c["env"]}
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/livez")):
        assert "httpGet" not in c[probe]
        command = c[probe]["exec"]["command"]
        assert command[:2] == ["python", "-c"] and command[3:] == [path]
        script = command[2]
        compile(script, "probe", "exec")
        read = set(re.findall(r'env(?:\.get\(|\[)"(PAFKA_GATEWAY_\w+)"', script))
        assert read == {
            "PAFKA_GATEWAY_HTTPS_CERTFILE",
            "PAFKA_GATEWAY_HTTPS_KEYFILE",
            "PAFKA_GATEWAY_HTTPS_KEY_PASSWORD",
            "PAFKA_GATEWAY_HOST",
            "PAFKA_GATEWAY_PORT",
        }
        assert read <= env_names
        # A Python start fits in the probe's time, not in the kubelet's default second.
        assert c[probe]["timeoutSeconds"] >= 5


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_service_and_ingress_name_the_https_port(value_set: str) -> None:
    found = docs(value_set)
    service = service_of(found)
    (port,) = service["spec"]["ports"]
    assert port["name"] == "https" and port["targetPort"] == "https"
    for ingress in of_kind(found, "Ingress"):
        backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
        assert backend == {"name": service["metadata"]["name"], "port": {"name": "https"}}
        annotations = ingress["metadata"]["annotations"]
        assert annotations["nginx.ingress.kubernetes.io/backend-protocol"] == "HTTPS"


def test_ingress_annotations_stay_the_users() -> None:
    mine = {"nginx.ingress.kubernetes.io/backend-protocol": "GRPCS", "a": "b"}
    values = merged(MTLS, {"gateway": {"ingress": {"annotations": mine}}})
    (ingress,) = of_kind(render(values), "Ingress")
    assert ingress["metadata"]["annotations"] == {"example.com/team": "data", **mine}
    # Helm merges a map with the chart's: a key set to null removes it.
    off = {"nginx.ingress.kubernetes.io/backend-protocol": None}
    none = merged(MTLS, {"gateway": {"ingress": {"httpsBackendAnnotations": off}}})
    (ingress,) = of_kind(render(none), "Ingress")
    assert ingress["metadata"]["annotations"] == {"example.com/team": "data"}


def test_certificate_names_the_service_and_the_ingress_host() -> None:
    found = docs("cert-manager")
    (cert,) = of_kind(found, "Certificate")
    spec = cert["spec"]
    assert spec["secretName"] == f"{FULL}-gateway-tls"
    assert spec["issuerRef"] == {
        "name": "pafka-ca",
        "kind": "ClusterIssuer",
        "group": "cert-manager.io",
    }
    assert {"server auth", "client auth"} <= set(spec["usages"])
    service = service_of(found)["metadata"]["name"]
    for name in (service, f"{service}.{NAMESPACE}", f"{service}.{NAMESPACE}.svc", GATEWAY_HOST):
        assert name in spec["dnsNames"]
    assert "rest.example.com" in spec["dnsNames"]
    # The brokers' certificate is the brokers' own: the gateway's is another.
    (secured,) = [
        c for c in of_kind(docs("secured"), "Certificate") if "gateway" in c["spec"]["secretName"]
    ]
    assert not [n for n in secured["spec"]["dnsNames"] if "broker" in n]
    extra = merged(
        CERT_MANAGER, {"gateway": {"tls": {"certManager": {"extraDnsNames": ["x.test"]}}}}
    )
    (cert,) = of_kind(render(extra), "Certificate")
    assert "x.test" in cert["spec"]["dnsNames"]
    # An existing Secret replaces the Certificate.
    assert not of_kind(docs("mtls"), "Certificate")


# ---- everything that calls the gateway ------------------------------------------------------


@pytest.mark.parametrize("value_set", [s for s in VALUE_SETS if s != "mtls"])
def test_service_monitor_scrapes_the_gateway_over_https(value_set: str) -> None:
    found = docs(value_set)
    (monitor,) = of_kind(found, "ServiceMonitor")
    selector = monitor["spec"]["selector"]["matchLabels"]
    scraped = [
        s for s in of_kind(found, "Service") if selector.items() <= s["metadata"]["labels"].items()
    ]
    endpoints = {e["port"]: e for e in monitor["spec"]["endpoints"]}
    assert set(endpoints) == {"http", "https"}
    by_port = {
        name: sorted(
            s["metadata"]["labels"]["app.kubernetes.io/component"]
            for s in scraped
            if name in {p["name"] for p in s["spec"]["ports"]}
        )
        for name in endpoints
    }
    assert by_port == {"http": ["broker", "controller"], "https": ["gateway"]}
    https = endpoints["https"]
    assert (https["scheme"], https["path"]) == ("https", "/metrics")
    tls = https["tlsConfig"]
    secret = secret_of(value_set)
    assert tls["serverName"] == GATEWAY_HOST
    if value_set == "public-ca":
        assert "ca" not in tls  # Prometheus' own trusted CAs
    else:
        assert tls["ca"] == {"secret": {"name": secret, "key": "ca.crt"}}
    for cert in of_kind(found, "Certificate"):
        if cert["spec"]["secretName"] == secret:
            assert tls["serverName"] in cert["spec"]["dnsNames"]
    if value_set == "mtls-scraped":
        assert tls["cert"] == {"secret": {"name": secret, "key": "tls.crt"}}
        assert tls["keySecret"] == {"name": secret, "key": "tls.key"}
    else:
        assert "cert" not in tls and "keySecret" not in tls


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_helm_test_pod_calls_https_and_checks_the_certificate(value_set: str) -> None:
    (pod,) = of_kind(docs(value_set), "Pod")
    c = pod["spec"]["containers"][0]
    env = pod_env(c["env"], {}, SECRET_VALUES)
    assert env["GATEWAY_URL"] == f"https://{GATEWAY_HOST}:8082"
    files = mounted_files(pod["spec"], c)
    secret = secret_of(value_set)
    if value_set == "public-ca":
        assert "CA_FILE" not in env
    else:
        assert files[env["CA_FILE"]] == (secret, "ca.crt")
    if value_set.startswith("mtls"):
        assert files[env["CERT_FILE"]] == (secret, "tls.crt")
        assert files[env["KEY_FILE"]] == (secret, "tls.key")
        assert env.get("KEY_PASSWORD") == ("key-secret" if value_set == "mtls" else None)
    else:
        # The gateway's key stays in the gateway's pods.
        assert not {"CERT_FILE", "KEY_FILE", "KEY_PASSWORD"} & set(env)
        assert not [f for f in files if f.endswith(("tls.key", "tls.crt"))]
    script = (test_chart.CHART / "files" / "roundtrip.py").read_text()
    for name in ("CA_FILE", "CERT_FILE", "KEY_FILE", "KEY_PASSWORD"):
        assert f'"{name}"' in script
    assert "context=TLS" in script


def _spark(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [d for d in render(merged(values, SPARK_ON)) if d["kind"] == "SparkApplication"]


def test_spark_jobs_call_https_and_trust_the_ca_they_are_given() -> None:
    values = merged(CERT_MANAGER, {"spark": {"gatewayCa": {"secretName": "rest-ca"}}})
    apps = _spark(values)
    assert len(apps) == 2
    for app in apps:
        spec = app["spec"]
        args = spec["arguments"]
        gateway = args[args.index("--gateway") + 1]
        assert gateway == f"https://{GATEWAY_HOST}:8082"
        read = parse_read({"gateway": gateway, "subscribe": "events"}, streaming=False)
        assert read.gateway.gateways == (gateway,)
        conf = spec["sparkConf"]
        # Spark mounts the Secret in both pods; the connector's httpx reads SSL_CERT_FILE.
        assert conf["spark.kubernetes.driver.secrets.rest-ca"] == "/etc/pafka/gateway-ca"
        assert conf["spark.kubernetes.executor.secrets.rest-ca"] == "/etc/pafka/gateway-ca"
        assert conf["spark.kubernetes.driverEnv.SSL_CERT_FILE"] == "/etc/pafka/gateway-ca/ca.crt"
        assert conf["spark.executorEnv.SSL_CERT_FILE"] == "/etc/pafka/gateway-ca/ca.crt"
    # No CA Secret named: the image's trusted CAs, nothing mounted.
    for app in _spark(CERT_MANAGER):
        assert not [k for k in app["spec"]["sparkConf"] if "secrets." in k or "SSL_CERT" in k]
    # The CA is for an HTTPS gateway only.
    for app in _spark({"spark": {"gatewayCa": {"secretName": "rest-ca"}}}):
        assert not [k for k in app["spec"]["sparkConf"] if "SSL_CERT" in k]


def test_spark_connector_trusts_the_ca_file_the_pods_get(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the Spark pods' SSL_CERT_FILE relies on: the connector's client, on a real HTTPS
    socket, verifies the gateway with that CA, and without it refuses the certificate."""
    ca = ThrowawayCa.create(tmp_path)
    pem = ca.issue("gateway", "/CN=gateway", server=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pem.cert, pem.key)

    class Topics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'["events"]'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with ThreadingHTTPServer(("127.0.0.1", 0), Topics) as server:
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            url = f"https://127.0.0.1:{server.server_address[1]}"
            options = GatewayOptions(gateways=(url,), request_timeout_ms=500)
            monkeypatch.setenv("SSL_CERT_FILE", str(ca.ca.cert))
            with GatewayClient(options) as client:
                assert client.topics() == ["events"]
            monkeypatch.delenv("SSL_CERT_FILE")
            with GatewayClient(options) as client, pytest.raises(GatewayUnavailableError) as err:
                client.topics()
            assert "CERTIFICATE_VERIFY_FAILED" in str(err.value)
        finally:
            server.shutdown()
            thread.join(timeout=10)


def test_notes_give_the_https_url_and_a_curl_that_checks_it() -> None:
    out = chart().render(CERT_MANAGER, name=RELEASE, namespace=NAMESPACE, is_install=True)
    notes = out["pafka/templates/NOTES.txt"]
    assert f"REST gateway:     https://{GATEWAY_HOST}:8082 (CA: key ca.crt of Secret" in notes
    assert "jsonpath='{.data.ca\\.crt}'" in notes
    assert f"curl -s --cacert gateway-ca.crt --resolve {GATEWAY_HOST}:8082:127.0.0.1" in notes
    assert f"https://{GATEWAY_HOST}:8082/topics/pafka-helm-test" in notes
    mtls = chart().render(MTLS, name=RELEASE, namespace=NAMESPACE, is_install=True)
    assert "--cert client.crt --key client.key" in mtls["pafka/templates/NOTES.txt"]


# ---- off by default, refusals ----------------------------------------------------------------


def test_gateway_tls_off_renders_nothing_of_it() -> None:
    """gateway.tls's other values do nothing while it is off; the default values render the
    gateway, its Service, probes and callers on plain HTTP as before."""
    idle = {
        "gateway": {
            "tls": {"certManager": {"enabled": True}, "clientAuth": "required", "caKey": ""},
            "ingress": {"enabled": True},
        },
        "metrics": {"serviceMonitor": {"enabled": True}},
        "spark": {"gatewayCa": {"secretName": "rest-ca"}},
    }
    plain = render(merged(idle, {"gateway": {"tls": {"enabled": False}}}))
    shown = render(
        {
            "gateway": {"ingress": {"enabled": True}},
            "metrics": {"serviceMonitor": {"enabled": True}},
        }
    )
    assert plain == shown
    assert not [c for c in of_kind(plain, "Certificate")]
    c = container(gateway_of(plain), "gateway")
    assert c["ports"] == [{"name": "http", "containerPort": 8082}]
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert not [e for e in c["env"] if "HTTPS" in e["name"]]
    assert not [m for m in c["volumeMounts"] if m["name"] == "gateway-tls"]
    assert service_of(plain)["spec"]["ports"][0]["name"] == "http"
    (ingress,) = of_kind(plain, "Ingress")
    assert "annotations" not in ingress["metadata"]
    (monitor,) = of_kind(plain, "ServiceMonitor")
    assert monitor["spec"]["endpoints"] == [
        {"port": "http", "path": "/metrics", "interval": "30s", "scrapeTimeout": "10s"}
    ]
    (pod,) = of_kind(plain, "Pod")
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert env["GATEWAY_URL"] == f"http://{GATEWAY_HOST}:8082"
    assert not {"CA_FILE", "CERT_FILE", "KEY_FILE"} & set(env)


BAD_VALUES = {
    "unknown client auth": {"gateway": {"tls": {"clientAuth": "optional"}}},
    "reload too often": {"gateway": {"tls": {"reloadIntervalMs": 0}}},
    "bad secret name": {"gateway": {"tls": {"existingSecret": "Rest TLS"}}},
    "bad ca key": {"gateway": {"tls": {"caKey": "ca crt"}}},
    "unknown tls key": {"gateway": {"tls": {"cert": "x"}}},
    "bad extra name": {"gateway": {"tls": {"certManager": {"extraDnsNames": ["a b"]}}}},
    "annotation not text": {"gateway": {"ingress": {"httpsBackendAnnotations": {"a": 1}}}},
    "spark ca without key": {"spark": {"gatewayCa": {"key": ""}}},
}


@pytest.mark.parametrize("case", BAD_VALUES)
def test_schema_rejects_bad_https_values(case: str) -> None:
    with pytest.raises(helm.HelmValuesError):
        chart().validate_schema(BAD_VALUES[case])


MISSING = {
    "HTTPS without a certificate": (
        {"gateway": {"tls": {"enabled": True}}},
        "gateway.tls.existingSecret or gateway.tls.certManager.enabled",
    ),
    "cert-manager without an issuer": (
        {"gateway": {"tls": {"enabled": True, "certManager": {"enabled": True}}}},
        "tls.certManager.issuerRef.name is required with gateway.tls.certManager.enabled",
    ),
    "client certificates without a CA": (
        merged(PUBLIC_CA, {"gateway": {"tls": {"clientAuth": "requested"}}}),
        "gateway.tls.clientAuth requested verifies client certificates with the CA",
    ),
    "mTLS, an encrypted key and Prometheus": (
        merged(MTLS_SCRAPED, {"gateway": {"tls": {"keyPasswordKey": "key-password"}}}),
        "Prometheus presents the gateway's key and cannot read an encrypted one",
    ),
    "mTLS with Spark jobs": (
        merged(MTLS, SPARK_ON),
        "the Spark jobs cannot present a client certificate",
    ),
}


@pytest.mark.parametrize("case", MISSING)
def test_impossible_https_values_fail_with_their_names(case: str) -> None:
    values, message = MISSING[case]
    with pytest.raises(helm.HelmError, match=re.escape(message)):
        render(values)
