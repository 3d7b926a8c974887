"""The chart's pods on a secured cluster, started as local processes as Kubernetes would start
them (see test_chart_processes): SASL_SSL inside the cluster with a certificate Secret, SCRAM
users from each service's Secret created by its init container, the ACL authorizer with pafka's
own users as super users, gateway tokens, then the users-and-ACLs Job, the topics Job and the
`helm test` pod, which must still do its round trip through the gateway with its token. The
gateway serves HTTPS and requires client certificates (its key encrypted): its readiness and
liveness probes, run as the kubelet would run them, and the test pod present its certificate.

Secrets become local files at the paths each mount names; Secret keys read into the
environment (user names) become their values.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pafka.local.certs import ThrowawayCa
from tests.integration import test_chart_processes
from tests.integration.test_chart_processes import (
    RELEASE,
    VENV_BIN,
    Pod,
    dns_map,
    pods_of,
    pods_running,
    probe_ok,
    render,
    run_to_completion,
    start,
    wait_ready,
)

pytestmark = test_chart_processes.pytestmark

USERS = {"pafka-broker-user": "broker", "pafka-gateway-user": "gw", "pafka-ctl-user": "ctl"}
TOKEN = "helm-test-token"


SECURITY = {
    "broker": {
        "listeners": {"internal": {"protocol": "SASL_SSL"}},
        # The helm test's token stands for User:helm-test, whom the ACLs let do its round trip.
        "authorizer": {"enabled": True, "superUsers": ["User:helm-test"]},
    },
    "tls": {"existingSecret": "pafka-tls"},
    "sasl": {
        "interBroker": {"existingSecret": "pafka-broker-user"},
        "gateway": {"existingSecret": "pafka-gateway-user"},
        "controller": {"existingSecret": "pafka-ctl-user"},
    },
    "gateway": {
        "auth": {"existingSecret": "pafka-gateway-tokens"},
        "tls": {
            "enabled": True,
            "existingSecret": "pafka-gateway-tls",
            "keyPasswordKey": "key-password",
            "clientAuth": "required",
        },
    },
    "provisioning": {
        "acls": [{"principal": "User:alice", "operation": "Read", "topic": "orders"}],
    },
    "tests": {"auth": {"existingSecret": "pafka-test-token"}},
}


def secret_files(tmp: Path, ips: list[str]) -> dict[str, dict[str, str]]:
    """Each Secret's keys and contents: a CA and a certificate naming every pod address."""
    ca = ThrowawayCa.create(tmp / "ca")
    key, csr, cert, ext = (tmp / "ca" / f"broker.{s}" for s in ("key", "csr", "pem", "ext"))
    ext.write_text(
        "extendedKeyUsage=serverAuth,clientAuth\n"
        f"subjectAltName={','.join(f'IP:{ip}' for ip in ips)}\n"
    )
    # One certificate for every pod: each is reached at its own loopback address.
    commands = (
        f"req -newkey rsa:2048 -nodes -subj /CN=broker -keyout {key} -out {csr}",
        f"x509 -req -in {csr} -CA {ca.ca.cert} -CAkey {ca.ca.key} -CAcreateserial -days 1"
        f" -extfile {ext} -out {cert}",
    )
    for command in commands:
        subprocess.run(["openssl", *command.split()], check=True, capture_output=True, timeout=60)
    # The gateway's copy of the certificate, its key encrypted.
    encrypted = tmp / "ca" / "gateway.key"
    encrypt = f"pkey -in {key} -aes256 -passout pass:gw-key-secret -out {encrypted}"
    subprocess.run(["openssl", *encrypt.split()], check=True, capture_output=True, timeout=60)
    secrets = {
        "pafka-tls": {
            "tls.crt": cert.read_text(),
            "tls.key": key.read_text(),
            "ca.crt": ca.ca.cert.read_text(),
        },
        "pafka-gateway-tls": {
            "tls.crt": cert.read_text(),
            "tls.key": encrypted.read_text(),
            "ca.crt": ca.ca.cert.read_text(),
            "key-password": "gw-key-secret",
        },
        "pafka-gateway-tokens": {"tokens": f"{TOKEN} User:helm-test\n"},
        "pafka-test-token": {"token": TOKEN},
    }
    for secret, user in USERS.items():
        secrets[secret] = {"username": user, "password": f"{user}-secret"}
    return secrets


def as_kubelet(
    c: dict[str, Any], pod: Pod, spec: dict[str, Any], secrets: dict[str, dict[str, str]], tmp: Path
) -> dict[str, Any]:
    """The container with its Secret volumes written where `start` puts each mount, its Secret
    keys in the environment as values, its listeners bound to the pod's address, and mount
    paths in its arguments pointing at those files."""
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    args = list(c.get("args", []))
    for mount in c.get("volumeMounts", []):
        secret = volumes.get(mount["name"], {}).get("secret")
        if not secret:
            continue
        local = tmp / pod.name / mount["name"]
        local.mkdir(parents=True, exist_ok=True)
        data = secrets[secret["secretName"]]
        for item in secret.get("items", [{"key": k, "path": k} for k in data]):
            (local / item["path"]).write_text(data[item["key"]])
        args = [a.replace(mount["mountPath"], str(local)) for a in args]
    env = []
    for entry in c.get("env", []):
        ref = entry.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            entry = {"name": entry["name"], "value": secrets[ref["name"]][ref["key"]]}
        elif "value" in entry:
            entry = {**entry, "value": entry["value"].replace("://0.0.0.0:", f"://{pod.ip}:")}
        env.append(entry)
    # The kubelet expands $(VAR) in arguments too (the init containers' user names).
    values = {e["name"]: e["value"] for e in env if "value" in e}
    args = [re.sub(r"\$\((\w+)\)", lambda m: values.get(m[1], m[0]), a) for a in args]
    return {**c, "env": env, "args": args}


@pytest.mark.timeout(300)
def test_secured_chart_pods_form_a_working_cluster(zk_connect: str, tmp_path: Path) -> None:
    docs = render(zk_connect, SECURITY)
    pods = pods_of(docs)
    names = dns_map(docs, pods)
    secrets = secret_files(tmp_path, [p.ip for p in pods])
    with pods_running(pods):
        for pod in pods:
            for init in pod.spec.get("initContainers", []):
                c = as_kubelet(init, pod, pod.spec, secrets, tmp_path)
                done = run_to_completion(c, pod, names, tmp_path, 60)
                assert done.returncode == 0, done.stdout + done.stderr
            (main,) = pod.spec["containers"]
            start(as_kubelet(main, pod, pod.spec, secrets, tmp_path), pod, names, tmp_path)
        wait_ready(pods, 120)
        (gateway,) = [p for p in pods if "-gateway-" in p.name]
        (gateway_c,) = gateway.spec["containers"]
        assert "exec" in gateway_c["readinessProbe"], "mTLS: probes present the certificate"
        assert probe_ok(gateway_c, gateway.ip, "livenessProbe", gateway.env)

        # The post-install Jobs in their hook order: users and ACLs, then topics.
        jobs = sorted(
            (d for d in docs if d["kind"] == "Job"),
            key=lambda d: int(d["metadata"]["annotations"]["helm.sh/hook-weight"]),
        )
        assert [j["metadata"]["name"] for j in jobs] == [
            f"{RELEASE}-pafka-security",
            f"{RELEASE}-pafka-topics",
        ]
        for job in jobs:
            spec = job["spec"]["template"]["spec"]
            job_pod = Pod(job["metadata"]["name"], "127.0.0.90", spec, {})
            for c in spec["containers"]:
                c = as_kubelet(c, job_pod, spec, secrets, tmp_path)
                done = run_to_completion(c, job_pod, names, tmp_path, 60)
                assert done.returncode == 0, done.stdout + done.stderr
        listed = subprocess.run(
            [
                str(VENV_BIN / "pafka"),
                "acls",
                "list",
                "--topic",
                "orders",
                "--zookeeper",
                zk_connect,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "User:alice" in listed.stdout, listed.stdout + listed.stderr

        # `helm test`: through the gateway (which reaches brokers over SASL_SSL), with its token,
        # over HTTPS with the gateway's certificate checked and its own presented.
        (test_pod,) = [d for d in docs if d["kind"] == "Pod"]
        (config_map,) = [d for d in docs if d["kind"] == "ConfigMap"]
        scripts = tmp_path / "test-roundtrip" / "scripts"
        scripts.mkdir(parents=True)
        (scripts / "roundtrip.py").write_text(config_map["data"]["roundtrip.py"])
        runner = Pod("test-roundtrip", "127.0.0.91", test_pod["spec"], {})
        (c,) = test_pod["spec"]["containers"]
        c = as_kubelet(c, runner, test_pod["spec"], secrets, tmp_path)
        for mount in c["volumeMounts"]:
            local = str(tmp_path / runner.name / mount["name"])
            c["env"] = [
                {**e, "value": e["value"].replace(mount["mountPath"], local)} for e in c["env"]
            ]
        assert {e["name"] for e in c["env"]} >= {"CA_FILE", "CERT_FILE", "KEY_FILE", "KEY_PASSWORD"}
        c = {**c, "command": ["python"], "args": [str(scripts / "roundtrip.py")]}
        done = run_to_completion(c, runner, names, tmp_path, 1)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "ok: produced and read back" in done.stdout and "through https://" in done.stdout
