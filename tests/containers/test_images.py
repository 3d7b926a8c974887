"""Both images, built from the unchanged Dockerfile, run as containers the way the chart runs
them.

The chart is rendered with Helm's engine (external ZooKeeper) and every pod of the broker
StatefulSet, the controller and gateway Deployments at the chart's default replica counts (3
brokers, 2 controllers, 2 gateways; topics replicated 3 ways), the provisioning Job and the
`helm test` pod runs as a podman container (runc, host network, each pod on a loopback address
of its own) with the container's command and args, its environment as the kubelet builds it, the
pod's user and group, a read-only root, the dropped capabilities and no privilege escalation;
emptyDirs become tmpfs, the broker's volume claim a directory owned by the pod's fsGroup.
ZooKeeper runs as a container too: Debian's ZooKeeper jars on the Spark image's JDK (no registry
here holds the chart's ZooKeeper image). A produce/consume round trip goes through the gateway
and the `helm test` command must pass; the Spark image's driver path reads a topic into Parquet;
each service container must exit 0 on SIGTERM within its pod's grace period.
"""

from __future__ import annotations

import base64
import json
import resource
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer

from pafka.local.zookeeper import DEBIAN_CLASSPATH, ZooKeeperServer, java_available
from tests.containers.conftest import BASE_IMAGE, SERVICE_IMAGE, SPARK_IMAGE, Images

pytest.importorskip("helm_python")
pytest.importorskip("pyarrow")

import pyarrow.parquet as pq

from tests.integration.test_chart_processes import (
    Pod,
    dns_map,
    mapped,
    pods_of,
    probe_ok,
    render,
)
from tests.unit.test_chart import resolve_env

pytestmark = pytest.mark.skipif(not java_available(), reason="needs Debian's zookeeper jars")

# The README's budget: the service image within 1.5x its base; the Spark image under this.
SERVICE_OVER_BASE = 1.5
SPARK_BUDGET_BYTES = 1_350_000_000
RUNC = ["--runtime", "runc", "--cgroup-manager", "cgroupfs", "--network", "host"]


def ulimits() -> list[str]:
    """Explicit limits: runc cannot raise one past what this host allows (its open files hard
    limit; nproc above a few thousand is refused here), and crun is not usable on its cgroups."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", "nproc=4096:4096"]


def security_args(pod_spec: dict[str, Any], container: dict[str, Any]) -> list[str]:
    """The pod's and container's security context as podman options."""
    context = {**pod_spec.get("securityContext", {}), **container.get("securityContext", {})}
    uid, gid = context["runAsUser"], context["runAsGroup"]
    assert context["runAsNonRoot"] and uid != 0
    args = ["--user", f"{uid}:{gid}"]
    if "fsGroup" in context:
        args += ["--group-add", str(context["fsGroup"])]
    if context.get("readOnlyRootFilesystem"):
        args += ["--read-only", "--read-only-tmpfs=false"]
    for capability in context.get("capabilities", {}).get("drop", []):
        args += ["--cap-drop", capability]
    if context.get("allowPrivilegeEscalation") is False:
        args += ["--security-opt", "no-new-privileges"]
    assert not context.get("privileged")
    return args


def volume_args(
    pod: Pod, container: dict[str, Any], host_dir: Path, files: dict[str, str]
) -> list[str]:
    """emptyDirs as tmpfs, configMaps as read-only files, anything else (the broker's claim) a
    directory owned by the pod's fsGroup."""
    volumes = {v["name"]: v for v in pod.spec.get("volumes", [])}
    group = pod.spec.get("securityContext", {}).get("fsGroup", 0)
    args: list[str] = []
    for mount in container.get("volumeMounts", []):
        volume = volumes.get(mount["name"], {})
        if "emptyDir" in volume:
            args += ["--tmpfs", f"{mount['mountPath']}:rw,mode=1777"]
            continue
        local = host_dir / pod.name / mount["name"]
        local.mkdir(parents=True, exist_ok=True)
        if "configMap" in volume:
            for name, text in files.items():
                (local / name).write_text(text)
            args += ["--volume", f"{local}:{mount['mountPath']}:ro"]
        else:
            shutil.chown(local, group, group)
            args += ["--volume", f"{local}:{mount['mountPath']}"]
    return args


def run_args(
    pod: Pod,
    container: dict[str, Any],
    names: dict[str, str],
    host_dir: Path,
    files: dict[str, str],
) -> list[str]:
    env = resolve_env(container.get("env", []), pod.fields)
    command = [mapped(a, names, pod.ip) for a in container["command"]]
    args = [mapped(a, names, pod.ip) for a in container.get("args", [])]
    options = [*RUNC, *ulimits(), "--hostname", pod.name]
    options += security_args(pod.spec, container)
    options += volume_args(pod, container, host_dir, files)
    for key, value in env.items():
        options += ["--env", f"{key}={mapped(value, names, pod.ip)}"]
    options += ["--entrypoint", json.dumps(command)]
    assert container["image"] == SERVICE_IMAGE, container["image"]
    return [*options, container["image"], *args]


@contextmanager
def zookeeper_container(images: Images, data_dir: Path) -> Iterator[ZooKeeperServer]:
    """ZooKeeper in a container of the Spark image (its JDK) with Debian's jars mounted."""
    data_dir.mkdir(parents=True)
    shutil.chown(data_dir, 10001, 10001)
    mounts = [f"{p}:{p}:ro" for p in ("/usr/share/java", "/etc/zookeeper/conf")]
    assert all(Path(p).exists() for p in DEBIAN_CLASSPATH.split(":"))
    storage = [f"{k}={images.env[k]}" for k in ("CONTAINERS_STORAGE_CONF", "STORAGE_DRIVER")]
    prefix = ["env", *storage, "podman", "run", "--rm", "--name", "test-zookeeper", *RUNC]
    prefix += ulimits()
    for mount in [*mounts, f"{data_dir}:{data_dir}"]:
        prefix += ["--volume", mount]
    prefix += ["--entrypoint", '["/usr/bin/env"]', SPARK_IMAGE]
    server = ZooKeeperServer(data_dir, command_prefix=tuple(prefix))
    try:
        server.start(timeout_s=120)
        yield server
    finally:
        server.stop()
        images.podman("rm", "--force", "--time", "0", "test-zookeeper", check=False)


# The first test builds the images (session fixture): minutes on 2 cores with vfs.
@pytest.mark.timeout(2400)
def test_image_sizes_within_budget(images: Images) -> None:
    base, service, spark = (images.size_bytes(i) for i in (BASE_IMAGE, SERVICE_IMAGE, SPARK_IMAGE))
    print(
        f"\nimage sizes: base {base / 1e6:.0f} MB, service {service / 1e6:.0f} MB "
        f"({service / base:.2f}x base), spark {spark / 1e6:.0f} MB; "
        f"builds: {', '.join(f'{k} {v:.0f}s' for k, v in images.build_seconds.items())}"
    )
    assert service <= SERVICE_OVER_BASE * base
    assert spark <= SPARK_BUDGET_BYTES


def wait_ready(images: Images, pods: list[Pod], names: list[str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    pending = list(zip(pods, names, strict=True))
    while pending and time.monotonic() < deadline:
        for pod, name in list(pending):
            state = images.podman("inspect", "--format", "{{.State.Running}}", name).stdout
            assert state.strip() == "true", images.podman("logs", name, check=False).stdout
            if probe_ok(pod.spec["containers"][0], pod.ip, "readinessProbe", {}):
                pending.remove((pod, name))
        time.sleep(1)
    assert not pending, f"not ready: {[name for _, name in pending]}"


def run_once(
    images: Images, options: list[str], timeout_s: float
) -> subprocess.CompletedProcess[str]:
    return images.podman("run", "--rm", *options, timeout_s=timeout_s, check=False)


def run_until_done(
    images: Images, options: list[str], timeout_s: float
) -> subprocess.CompletedProcess[str]:
    """A Job's container: rerun on failure (restartPolicy OnFailure) until it succeeds."""
    deadline = time.monotonic() + timeout_s
    while True:
        done = run_once(images, options, 150)
        if done.returncode == 0 or time.monotonic() > deadline:
            return done
        time.sleep(1)


def stop_within_grace(images: Images, pod: Pod, name: str) -> None:
    """SIGTERM, as the kubelet sends it; the service must exit 0 within the grace period."""
    grace = pod.spec.get("terminationGracePeriodSeconds", 30)
    images.podman("kill", "--signal", "TERM", name)
    started = time.monotonic()
    waited = images.podman("wait", name, timeout_s=grace + 30)
    elapsed = time.monotonic() - started
    logs = images.podman("logs", name, check=False)
    assert waited.stdout.strip() == "0", f"{name} exited {waited.stdout}: {logs.stderr[-3000:]}"
    assert elapsed <= grace, f"{name} took {elapsed:.0f}s, grace period {grace}s"


@pytest.mark.timeout(2400)
def test_chart_pods_as_containers(images: Images, tmp_path: Path) -> None:
    with zookeeper_container(images, tmp_path / "zookeeper") as zookeeper:
        run_chart_pods(images, zookeeper.connect_string, tmp_path)


def run_chart_pods(images: Images, zk_connect: str, tmp_path: Path) -> None:
    values = {
        "image": dict(zip(("repository", "tag"), SERVICE_IMAGE.rsplit(":", 1), strict=True)),
        "provisioning": {"topics": [{"name": "orders", "partitions": 2, "replicationFactor": 3}]},
        "tests": {"replicationFactor": 3},
    }
    docs = render(zk_connect, values)
    pods = pods_of(docs)
    names = dns_map(docs, pods)
    running: list[str] = []
    try:
        for pod in pods:
            (container,) = pod.spec["containers"]
            name = f"test-{pod.name}"
            options = ["--detach", "--name", name, *run_args(pod, container, names, tmp_path, {})]
            images.podman("run", *options)
            running.append(name)
        wait_ready(images, pods, running, 180)
        for pod in pods:
            assert probe_ok(pod.spec["containers"][0], pod.ip, "livenessProbe", {}), pod.name

        # The post-install Job: `pafka topics create`, as its pod runs it.
        (job,) = [d for d in docs if d["kind"] == "Job"]
        job_pod = Pod("topics-job", "127.0.0.90", job["spec"]["template"]["spec"], {})
        for container in job_pod.spec["containers"]:
            done = run_until_done(images, run_args(job_pod, container, names, tmp_path, {}), 90)
            assert done.returncode == 0, done.stdout + done.stderr

        # `helm test`: the test pod's command with the chart's script mounted where it says.
        (test_pod,) = [d for d in docs if d["kind"] == "Pod"]
        (config_map,) = [d for d in docs if d["kind"] == "ConfigMap"]
        runner = Pod("test-roundtrip", "127.0.0.91", test_pod["spec"], {})
        (container,) = runner.spec["containers"]
        done = run_once(
            images, run_args(runner, container, names, tmp_path, config_map["data"]), 150
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "ok: produced and read back" in done.stdout

        gateway_url = f"http://{endpoint(pods, 'gateway', 'http')}"
        round_trip(endpoint(pods, "broker", "kafka"), gateway_url)
        spark_driver(images, gateway_url, tmp_path / "spark")

        # Brokers first, while a controller answers their controlled shutdown.
        for pod, name in zip(pods, running, strict=True):
            stop_within_grace(images, pod, name)
    except BaseException:
        for name in running:
            logs = images.podman("logs", name, check=False)
            print(f"---- {name}\n{(logs.stdout + logs.stderr)[-4000:]}")
        raise
    finally:
        for name in running:
            images.podman("rm", "--force", "--time", "0", name, check=False)


def endpoint(pods: list[Pod], component: str, port_name: str) -> str:
    pod = next(p for p in pods if f"-{component}-" in p.name)
    ports = {p["name"]: p["containerPort"] for p in pod.spec["containers"][0]["ports"]}
    return f"{pod.ip}:{ports[port_name]}"


def round_trip(broker: str, gateway_url: str) -> None:
    """Produce over the Kafka protocol to the broker container, consume through the gateway's."""
    producer = KafkaProducer(bootstrap_servers=broker, acks="all")
    try:
        for i in range(5):
            producer.send("orders", key=b"k%d" % i, value=b"v%d" % i, partition=0)
        producer.flush(timeout=60)
    finally:
        producer.close(timeout=10)
    url = f"{gateway_url}/topics/orders/partitions/0/records?offset=0&max_records=10"
    request = urllib.request.Request(
        url, headers={"Accept": "application/vnd.kafka.binary.v2+json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        read = json.load(response)
    values = [base64.b64decode(r["value"]) for r in read["records"]]
    assert values == [b"v%d" % i for i in range(5)], read


def spark_driver(images: Images, gateway_url: str, host_dir: Path) -> None:
    """The Spark image's driver path: the arguments a Spark-on-Kubernetes driver pod gets (job
    file by local:// URI inside the image, the properties file where Spark mounts it); only
    the master differs (local instead of k8s://)."""
    conf, output = host_dir / "conf", host_dir / "output"
    for directory in (conf, output):
        directory.mkdir(parents=True)
    shutil.chown(output, 10001, 10001)
    (conf / "spark.properties").write_text(
        "spark.master=local[1]\n"
        "spark.app.name=pafka-image-driver\n"
        "spark.ui.enabled=false\n"
        "spark.sql.shuffle.partitions=1\n"
    )
    options = [*RUNC, *ulimits(), "--user", "10001:10001", "--tmpfs", "/tmp:rw,mode=1777"]
    options += ["--volume", f"{conf}:/opt/spark/conf:ro", "--volume", f"{output}:/output"]
    options += ["--env", "SPARK_DRIVER_BIND_ADDRESS=127.0.0.1", SPARK_IMAGE]
    options += ["driver", "--properties-file", "/opt/spark/conf/spark.properties"]
    options += ["--class", "org.apache.spark.deploy.PythonRunner"]
    options += ["local:///opt/pafka/spark-jobs/topic_to_parquet.py", "--gateway", gateway_url]
    options += ["--topic", "orders", "--output", "/output/parquet"]
    done = run_once(images, options, 600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    table = pq.read_table(output / "parquet").to_pydict()
    assert sorted(table["value"]) == [f"v{i}" for i in range(5)], table
    assert set(table["topic"]) == {"orders"}
