"""The chart's dashboard and alerts on a real Prometheus (Debian's) scraping a local cluster.

Prometheus scrapes every broker, controller and gateway of a cluster of this module's own each
second, with the labels Kubernetes discovery would give them (namespace, pod, service), and
loads the chart's alert rules as Helm renders them. Under a steady workload (records produced
through Kafka and REST, a consumer group reading and committing, one fetch past a log end),
every query of the shipped Grafana dashboard, its variables substituted as Grafana does, must
return a number through Prometheus' HTTP API, and no alert fires. Then a broker is killed with
SIGKILL: PafkaBrokerDown, unchanged from the chart (`for: 1m`), must fire within 2 minutes,
and every dashboard query must still answer.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from pafka.local.cluster import ServiceProcess
from pafka.local.ports import free_port
from tests.chart_monitoring import (
    RELEASE,
    DashboardQuery,
    alerts,
    dashboard,
    dashboard_queries,
    rate_interval_s,
    substitute,
    write_rule_file,
)
from tests.integration.conftest import TEST_BROKER_ENV, ClusterHandle, own_cluster
from tests.integration.test_metrics_scrape import fetch_past_the_end

pytestmark = pytest.mark.skipif(
    shutil.which("prometheus") is None,
    reason="needs Debian's prometheus (package prometheus; .ci/run installs it)",
)

NAMESPACE = "pafka-it"
SCRAPE_INTERVAL_S = 1
# Grafana's $__interval for a 5-minute dashboard over ~1000 points is below the data source's
# scrape interval, which is its floor.
INTERVAL_S = SCRAPE_INTERVAL_S
BROKER_DOWN_BUDGET_S = 120.0
QUERIES_DEADLINE_S = 90.0
V2_JSON = "application/vnd.kafka.json.v2+json"


def pod_name(service: ServiceProcess) -> str:
    """The pod a chart-deployed process would run in: brokers and controllers by ordinal."""
    return f"{RELEASE}-pafka-{service.kind}-{service.id - 1}"


def scrape_config(cluster: ClusterHandle) -> list[dict[str, Any]]:
    """One static target per process, labelled as the Prometheus Operator labels a pod found
    through a ServiceMonitor (``service`` too, the label pafka_build_info must not collide
    with)."""
    return [
        {
            "job_name": f"{RELEASE}-pafka-{kind}",
            "metrics_path": "/metrics",
            "static_configs": [
                {
                    "targets": [s.http_url.removeprefix("http://")],
                    "labels": {
                        "namespace": NAMESPACE,
                        "pod": pod_name(s),
                        "service": f"{RELEASE}-pafka-{kind}",
                        "container": kind,
                    },
                }
                for s in cluster.local.services.values()
                if s.kind == kind
            ],
        }
        for kind in ("broker", "controller", "gateway")
    ]


@dataclass
class Prometheus:
    url: str
    log_path: Path

    def query(self, expr: str) -> list[dict[str, Any]]:
        response = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=10)
        body = response.json()
        assert response.status_code == 200 and body["status"] == "success", (expr, body)
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def get(self, path: str, **params: str) -> Any:
        response = httpx.get(f"{self.url}{path}", params=params, timeout=10)
        assert response.status_code == 200, response.text
        return response.json()["data"]

    def log_tail(self) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-30:])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with own_cluster(
        tmp_path_factory,
        "prometheus",
        brokers=3,
        controllers=2,
        gateways=1,
        # The cleaner checks compacted logs each second, as often as scraped.
        broker_env={**TEST_BROKER_ENV, "PAFKA_BROKER_LOG_CLEANER_BACKOFF_MS": "1000"},
        # The cluster view (kafka_brokers, lag) refreshed each second, as often as scraped.
        controller_env={"PAFKA_CONTROLLER_CLUSTER_VIEW_INTERVAL_MS": "1000"},
    ) as handle:
        yield handle


@pytest.fixture(scope="module")
def prometheus(
    cluster: ClusterHandle, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Prometheus]:
    home = tmp_path_factory.mktemp("prometheus")
    write_rule_file(home / "pafka-rules.yaml", NAMESPACE, brokers=3)
    config = {
        "global": {
            "scrape_interval": f"{SCRAPE_INTERVAL_S}s",
            "scrape_timeout": f"{SCRAPE_INTERVAL_S}s",
            "evaluation_interval": f"{SCRAPE_INTERVAL_S}s",
        },
        "rule_files": ["pafka-rules.yaml"],
        "scrape_configs": scrape_config(cluster),
    }
    (home / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    port = free_port()
    log_path = home / "prometheus.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={home / 'prometheus.yml'}",
                f"--storage.tsdb.path={home / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            cwd=home,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    server = Prometheus(f"http://127.0.0.1:{port}", log_path)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, server.log_tail()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{server.url}/-/ready", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, server.log_tail()
            time.sleep(0.2)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Workload:
    """Records in through Kafka and REST, keyed records into a compacted topic, a group member
    reading and committing, every 200 ms until stopped; errors (a leader moving after a kill)
    are retried by the next round."""

    def __init__(self, cluster: ClusterHandle, topic: str, compacted: str, group: str) -> None:
        self.cluster, self.topic, self.compacted, self.group = cluster, topic, compacted, group
        self.stop = threading.Event()
        self.rounds = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from kafka import KafkaConsumer, KafkaProducer

        # Sends block at most briefly while a dead leader's partitions move, so stopping is
        # prompt.
        producer = KafkaProducer(
            bootstrap_servers=self.cluster.bootstrap, acks=1, retries=5, max_block_ms=5000
        )
        consumer = KafkaConsumer(
            self.topic,
            bootstrap_servers=self.cluster.bootstrap,
            group_id=self.group,
            auto_offset_reset="earliest",
            auto_commit_interval_ms=500,
        )
        gateway = self.cluster.gateways[0]
        try:
            while not self.stop.is_set():
                with contextlib.suppress(Exception):
                    for i in range(5):
                        producer.send(self.topic, f"record {self.rounds}-{i}".encode())
                        key = f"key-{i}".encode()
                        producer.send(self.compacted, f"v{self.rounds}".encode(), key=key)
                with contextlib.suppress(httpx.HTTPError):
                    httpx.post(
                        f"{gateway}/topics/{self.topic}",
                        content=json.dumps({"records": [{"value": {"n": self.rounds}}]}),
                        headers={"Content-Type": V2_JSON},
                        timeout=10,
                    )
                with contextlib.suppress(Exception):
                    consumer.poll(timeout_ms=200)
                self.rounds += 1
        finally:
            consumer.close()
            producer.close(timeout=5)

    def __enter__(self) -> Workload:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=60)


def grafana_variables(server: Prometheus) -> dict[str, str]:
    """The dashboard's variables as Grafana resolves them: a label_values() query variable
    through Prometheus' label-values API (its first value selected), $__rate_interval from the
    scrape interval."""
    variables = {"__rate_interval": f"{rate_interval_s(SCRAPE_INTERVAL_S, INTERVAL_S):g}s"}
    for variable in dashboard(NAMESPACE)["templating"]["list"]:
        if variable["type"] != "query":
            continue
        metric, label = variable["definition"].removeprefix("label_values(")[:-1].split(",")
        values = server.get(f"/api/v1/label/{label.strip()}/values", **{"match[]": metric})
        if values:
            variables[variable["name"]] = values[0]
    return variables


def unanswered(server: Prometheus, queries: list[DashboardQuery]) -> list[str]:
    """The queries that return no series, or only NaN (Grafana's "No data" or a blank)."""
    variables = grafana_variables(server)
    if NAMESPACE not in variables.values():
        return [f"the namespace variable offers {variables}, not {NAMESPACE}"]
    missing = []
    for query in queries:
        result = server.query(substitute(query.expr, variables))
        if not any(not math.isnan(float(series["value"][1])) for series in result):
            missing.append(f"{query.panel}: {query.expr}")
    return missing


def wait_for_every_query(server: Prometheus, timeout_s: float) -> None:
    queries = dashboard_queries(NAMESPACE)
    deadline = time.monotonic() + timeout_s
    while missing := unanswered(server, queries):
        assert time.monotonic() < deadline, (
            f"{len(missing)} of {len(queries)} dashboard queries return no data:\n"
            + "\n".join(missing)
        )
        time.sleep(2)


def firing(server: Prometheus) -> dict[str, list[dict[str, Any]]]:
    alerts_now: dict[str, list[dict[str, Any]]] = {}
    for alert in server.get("/api/v1/alerts")["alerts"]:
        if alert["state"] == "firing":
            alerts_now.setdefault(alert["labels"]["alertname"], []).append(alert)
    return alerts_now


def test_dashboard_answers_and_broker_down_fires_on_a_real_prometheus(
    cluster: ClusterHandle, prometheus: Prometheus
) -> None:
    rules = prometheus.get("/api/v1/rules")["groups"]
    loaded = {r["name"] for g in rules for r in g["rules"] if r["type"] == "alerting"}
    assert loaded == alerts(NAMESPACE).keys()

    topic, compacted, group = (f"prom-{part}-{uuid.uuid4().hex[:8]}" for part in "tcg")
    cluster.create_topic(topic, partitions=3, replication_factor=3)
    # The compaction panels show compacted partitions: a cluster without any has none to show.
    cluster.create_topic(
        compacted, partitions=1, replication_factor=3, config={"cleanup.policy": "compact"}
    )
    with Workload(cluster, topic, compacted, group) as workload:
        # A failed request on purpose: the request-errors panel counts errors by name, and
        # only errors that happened exist.
        fetch_past_the_end(cluster, topic)
        wait_for_every_query(prometheus, QUERIES_DEADLINE_S)
        assert workload.rounds > 0
        assert firing(prometheus) == {}, prometheus.log_tail()
        # The versions panel lists process kinds, not the Service names discovery adds.
        versions = prometheus.query(
            f'count by (component) (pafka_build_info{{namespace="{NAMESPACE}"}})'
        )
        assert {s["metric"]["component"] for s in versions} == {"broker", "controller", "gateway"}

        victim = cluster.local.broker(3)
        cluster.local.kill(victim.name, signal.SIGKILL)
        killed_at = time.monotonic()
        while "PafkaBrokerDown" not in (now := firing(prometheus)):
            waited = time.monotonic() - killed_at
            assert waited < BROKER_DOWN_BUDGET_S, (now, prometheus.log_tail())
            time.sleep(1)
        (down,) = now["PafkaBrokerDown"]
        assert down["labels"]["severity"] == "critical"
        assert down["annotations"]["description"].startswith("2 of 3 brokers are live")

        wait_for_every_query(prometheus, QUERIES_DEADLINE_S)
