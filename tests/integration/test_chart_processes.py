"""The chart's containers, started as local processes exactly as Kubernetes would start them.

The chart is rendered with Helm's engine (external ZooKeeper: the test's own), then every pod of
the broker StatefulSet, the controller Deployment and the gateway Deployment is started with its
container's command, args and environment as the kubelet would build them (downward-API fields
filled in, $(VAR) references expanded). Each pod gets its own loopback address (127.0.0.0/8 all
reaches this machine), so "pod IP" and "0.0.0.0 inside the pod" become that address, and the
cluster DNS names the chart wrote become the addresses of the pods they name: nothing else is
changed. Readiness is awaited through the rendered readiness probes; then the provisioning Job's
containers and the `helm test` pod run the same way, and every pod is stopped with SIGTERM within
its grace period.
"""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from pafka.local.ports import free_port

helm = pytest.importorskip("helm_python")


def _can_set_hostname() -> bool:
    try:
        probe = ["unshare", "--uts", "hostname", "pafka-probe"]
        return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


pytestmark = pytest.mark.skipif(
    not _can_set_hostname(), reason="needs `unshare --uts` (root) to give each pod its hostname"
)

from tests.unit.test_chart import CHART, resolve_env  # noqa: E402
from tests.unit.test_chart_security_listeners import merged  # noqa: E402

RELEASE, NAMESPACE = "demo", "data"
VENV_BIN = Path(sys.executable).parent


@dataclass
class Pod:
    name: str
    ip: str
    spec: dict[str, Any]
    fields: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    # The environment its main container was started with (exec probes run in it).
    env: dict[str, str] = field(default_factory=dict)


def render(zk_connect: str, extra: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The chart for a cluster on this machine, with `extra` values laid over."""
    gateway_port = free_port("0.0.0.0")
    values = {
        "zookeeper": {"enabled": False, "connect": zk_connect},
        "broker": {
            "replicaCount": 3,
            "ports": {"kafka": free_port("0.0.0.0"), "http": free_port("0.0.0.0")},
            "config": {
                "DEFAULT_REPLICATION_FACTOR": 3,
                "MIN_INSYNC_REPLICAS": 2,
                "GROUP_INITIAL_REBALANCE_DELAY_MS": 0,
            },
        },
        "controller": {"replicaCount": 2, "ports": {"http": free_port("0.0.0.0")}},
        "gateway": {
            "replicaCount": 1,
            "ports": {"http": gateway_port},
            "service": {"port": gateway_port},
        },
        "provisioning": {"topics": [{"name": "orders", "partitions": 3, "replicationFactor": 3}]},
        "tests": {"replicationFactor": 3},
    }
    with helm.Chart.load(CHART) as chart:
        out = chart.render(
            merged(values, extra or {}), name=RELEASE, namespace=NAMESPACE, is_install=True
        )
    docs = [
        doc
        for path, text in sorted(out.items())
        if not path.endswith("NOTES.txt")
        for doc in yaml.safe_load_all(text)
        if doc
    ]
    return docs


def pods_of(docs: list[dict[str, Any]]) -> list[Pod]:
    pods: list[Pod] = []
    for doc in docs:
        if doc["kind"] not in ("StatefulSet", "Deployment"):
            continue
        for ordinal in range(doc["spec"]["replicas"]):
            name = f"{doc['metadata']['name']}-{ordinal}"
            ip = f"127.0.0.{20 + len(pods)}"
            fields = {
                "metadata.name": name,
                "status.podIP": ip,
                "metadata.labels['apps.kubernetes.io/pod-index']": str(ordinal),
            }
            pods.append(Pod(name, ip, doc["spec"]["template"]["spec"], fields))
    return pods


def dns_map(docs: list[dict[str, Any]], pods: list[Pod]) -> dict[str, str]:
    """Cluster DNS names the chart uses -> the loopback address of the pod behind them."""
    names: dict[str, str] = {}
    by_name = {p.name: p for p in pods}
    for doc in docs:
        if doc["kind"] == "StatefulSet":
            service = doc["spec"]["serviceName"]
            for pod in pods:
                if pod.name.startswith(doc["metadata"]["name"] + "-"):
                    names[f"{pod.name}.{service}.{NAMESPACE}.svc.cluster.local"] = pod.ip
    for doc in docs:
        if doc["kind"] == "Service" and doc["spec"].get("clusterIP") != "None":
            service = doc["metadata"]["name"]
            target = by_name.get(f"{service}-0")
            if target is not None:
                names[f"{service}.{NAMESPACE}.svc.cluster.local"] = target.ip
    return dict(sorted(names.items(), key=lambda item: -len(item[0])))


def mapped(text: str, names: dict[str, str], ip: str) -> str:
    for name, address in names.items():
        text = text.replace(name, address)
    return ip if text == "0.0.0.0" else text


def start(container: dict[str, Any], pod: Pod, names: dict[str, str], tmp: Path) -> None:
    env = resolve_env(container.get("env", []), pod.fields)
    env = {k: mapped(v, names, pod.ip) for k, v in env.items()}
    volumes = {v["name"]: v for v in pod.spec.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        local = tmp / pod.name / mount["name"]
        local.mkdir(parents=True, exist_ok=True)
        if "configMap" not in volumes.get(mount["name"], {}):
            env = {k: v.replace(mount["mountPath"], str(local)) for k, v in env.items()}
    argv = [mapped(a, names, pod.ip) for a in container["command"] + container.get("args", [])]
    argv[0] = str(VENV_BIN / argv[0])
    # A pod's hostname is its name (the controller's default id is derived from it): a UTS
    # namespace of its own gives each process that, as in Kubernetes.
    argv = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', pod.name, *argv]
    env |= {"PATH": f"{VENV_BIN}:{os.environ['PATH']}", "PYTHONUNBUFFERED": "1"}
    pod.env = env
    pod.log = tmp / f"{pod.name}-{container['name']}.log"
    pod.process = subprocess.Popen(
        argv, env=env, stdout=pod.log.open("wb"), stderr=subprocess.STDOUT, cwd=tmp
    )


def probe_ok(container: dict[str, Any], ip: str, kind: str, env: Mapping[str, str]) -> bool:
    """A probe as the kubelet runs it: an exec probe's command in the container's environment,
    or an HTTP(S) GET (HTTPS without checking the certificate, as the kubelet does)."""
    if "exec" in container[kind]:
        argv = list(container[kind]["exec"]["command"])
        argv[0] = str(VENV_BIN / argv[0])
        timeout_s = container[kind].get("timeoutSeconds", 1)
        try:
            done = subprocess.run(argv, env=dict(env), capture_output=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0
    probe = container[kind]["httpGet"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    scheme = probe.get("scheme", "HTTP").lower()
    url = f"{scheme}://{ip}:{ports[probe['port']]}{probe['path']}"
    unchecked = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    unchecked.check_hostname, unchecked.verify_mode = False, ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=2, context=unchecked) as response:
            return 200 <= response.status < 400
    except (urllib.error.URLError, OSError):
        return False


def run_to_completion(
    container: dict[str, Any], pod: Pod, names: dict[str, str], tmp: Path, timeout_s: float
) -> subprocess.CompletedProcess[str]:
    """A Job or test container: rerun on failure (restartPolicy OnFailure) until it succeeds."""
    deadline = time.monotonic() + timeout_s
    while True:
        env = resolve_env(container.get("env", []), pod.fields)
        env = {k: mapped(v, names, pod.ip) for k, v in env.items()}
        env["PATH"] = f"{VENV_BIN}:{os.environ['PATH']}"
        argv = [mapped(a, names, pod.ip) for a in container["command"] + container.get("args", [])]
        argv = [str(VENV_BIN / argv[0]), *argv[1:]]
        result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=150)
        if result.returncode == 0 or time.monotonic() > deadline:
            return result
        time.sleep(1)


def wait_ready(pods: list[Pod], timeout_s: float) -> None:
    """Until every pod's readiness probe answers, each process still running."""
    deadline = time.monotonic() + timeout_s
    pending = list(pods)
    while pending and time.monotonic() < deadline:
        for pod in list(pending):
            assert pod.process is not None and pod.process.poll() is None, pod.name
            if probe_ok(pod.spec["containers"][0], pod.ip, "readinessProbe", pod.env):
                pending.remove(pod)
        time.sleep(0.5)
    assert not pending, f"not ready: {[p.name for p in pending]}"


@contextmanager
def pods_running(pods: list[Pod]) -> Iterator[None]:
    """Prints the pods' logs when the block fails; stops each with SIGTERM, which must end it
    within its grace period."""
    try:
        yield
    except BaseException:
        for pod in pods:
            if pod.log is not None and pod.log.exists():
                print(f"---- {pod.name}\n{pod.log.read_text()[-4000:]}")
        raise
    finally:
        for pod in pods:
            if pod.process is not None and pod.process.poll() is None:
                pod.process.send_signal(signal.SIGTERM)
        for pod in pods:
            if pod.process is None:
                continue
            grace = pod.spec.get("terminationGracePeriodSeconds", 30)
            try:
                pod.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pod.process.kill()
                pod.process.wait()
                pytest.fail(f"{pod.name} did not stop within its {grace}s grace period")


@pytest.mark.timeout(240)
def test_chart_pods_form_a_working_cluster(zk_connect: str, tmp_path: Path) -> None:
    docs = render(zk_connect)
    pods = pods_of(docs)
    names = dns_map(docs, pods)
    assert sum(p.name.startswith(f"{RELEASE}-pafka-broker-") for p in pods) == 3
    with pods_running(pods):
        for pod in pods:
            (container,) = pod.spec["containers"]
            start(container, pod, names, tmp_path)
        wait_ready(pods, 90)
        for pod in pods:
            assert probe_ok(pod.spec["containers"][0], pod.ip, "livenessProbe", pod.env), pod.name

        # The post-install Job: `pafka topics create` against every advertised broker.
        (job,) = [d for d in docs if d["kind"] == "Job"]
        job_pod = Pod("topics-job", "127.0.0.90", job["spec"]["template"]["spec"], {})
        for container in job_pod.spec["containers"]:
            done = run_to_completion(container, job_pod, names, tmp_path, 60)
            assert done.returncode == 0, done.stdout + done.stderr
        described = subprocess.run(
            [str(VENV_BIN / "pafka"), "topics", "describe", "orders", "--zookeeper", zk_connect],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert described.returncode == 0 and "orders" in described.stdout, described.stderr

        # `helm test`: create a topic, produce and read back through the gateway.
        (test_pod,) = [d for d in docs if d["kind"] == "Pod"]
        (config_map,) = [d for d in docs if d["kind"] == "ConfigMap"]
        scripts = tmp_path / "test-roundtrip" / "scripts"
        scripts.mkdir(parents=True)
        (scripts / "roundtrip.py").write_text(config_map["data"]["roundtrip.py"])
        (container,) = test_pod["spec"]["containers"]
        container = {
            **container,
            "args": [str(scripts / "roundtrip.py")],
            "command": ["python"],
        }
        runner = Pod("test-roundtrip", "127.0.0.91", test_pod["spec"], {})
        done = run_to_completion(container, runner, names, tmp_path, 1)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "ok: produced and read back" in done.stdout
