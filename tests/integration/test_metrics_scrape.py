"""Every service's /metrics during a real workload, parsed as Prometheus parses it.

On the shared cluster (3 brokers, 2 controllers, 2 gateways): a new topic gets records from
kafka-python and through both gateways' REST API (and one REST call that must fail), a
kafka-python group member reads part of them and commits, a fetch past the log end draws an
error. Then every broker, controller and gateway is scraped and each metric issue 7 names is
found with values that follow from the workload: messages in grew by exactly what was
produced, the active controller's cluster view shows the log ends, committed offsets and their
gap as lag, only one controller is active and only it exports the cluster view, and the gateway
counted its REST calls by status.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import ClusterHandle

PARTITIONS = 3
KAFKA_RECORDS = {0: 40, 1: 25, 2: 12}  # per partition, through kafka-python
REST_REQUESTS_PER_PARTITION = 2  # alternating gateways
REST_RECORDS_PER_REQUEST = 5
COMMITTED = {0: 31, 1: 4, 2: 20}  # what the group commits, per partition
PRODUCE_ROUTE = "/topics/{topic}/partitions/{partition}"
V2_JSON = "application/vnd.kafka.json.v2+json"
CLUSTER_VIEW_DEADLINE_S = 60.0  # several refresh intervals (15 s by default)

Labels = tuple[tuple[str, str], ...]
Series = dict[tuple[str, Labels], float]

CLUSTER_VIEW = (
    "kafka_brokers",
    "kafka_topic_partitions",
    "kafka_topic_partition_current_offset",
    "kafka_topic_partition_oldest_offset",
    "kafka_topic_partition_in_sync_replica",
    "kafka_topic_partition_replicas",
    "kafka_topic_partition_leader",
    "kafka_topic_partition_leader_is_preferred",
    "kafka_topic_partition_under_replicated_partition",
    "kafka_consumergroup_current_offset",
    "kafka_consumergroup_current_offset_sum",
    "kafka_consumergroup_lag",
    "kafka_consumergroup_lag_sum",
    "kafka_consumergroup_members",
)
BROKER_METRICS = (
    "kafka_server_brokertopicmetrics_messagesin_total",
    "kafka_server_brokertopicmetrics_bytesin_total",
    "kafka_server_brokertopicmetrics_bytesout_total",
    "kafka_network_requestmetrics_requests_total",
    "pafka_broker_request_duration_seconds_bucket",
    "pafka_broker_request_duration_seconds_count",
    "kafka_server_replicamanager_leadercount",
    "kafka_server_replicamanager_partitioncount",
    "kafka_server_replicamanager_underreplicatedpartitions",
    "kafka_server_replicamanager_underminisrpartitioncount",
    "kafka_server_replicamanager_isrshrinks_total",
    "kafka_server_replicamanager_isrexpands_total",
    "kafka_server_socket_server_metrics_connection_count",
    "kafka_log_log_size",
    "kafka_log_log_logstartoffset",
    "kafka_log_log_logendoffset",
    "kafka_log_log_numlogsegments",
    "pafka_broker_log_dir_free_bytes",
    "pafka_broker_log_dir_total_bytes",
    "pafka_build_info",
)
# Labelled by topic or error, so only on a broker that saw one: the leader the fetch past the
# log end went to.
BROKER_ERROR_METRICS = (
    "kafka_server_brokertopicmetrics_failedfetchrequests_total",
    "kafka_network_requestmetrics_errors_total",
)
CONTROLLER_METRICS = (
    "kafka_controller_kafkacontroller_activecontrollercount",
    "kafka_controller_kafkacontroller_offlinepartitionscount",
    "kafka_controller_controllerstats_uncleanleaderelections_total",
    "pafka_build_info",
)
GATEWAY_METRICS = (
    "http_requests_total",
    "http_request_duration_seconds_bucket",
    "http_request_duration_seconds_count",
    "pafka_build_info",
)


def scrape(base_url: str) -> Series:
    response = httpx.get(f"{base_url}/metrics", timeout=30)
    assert response.status_code == 200, response.text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def names(series: Series) -> set[str]:
    return {name for name, _ in series}


def total(series: Series, name: str, **labels: str) -> float:
    """Sum of the samples of ``name`` whose labels include ``labels`` (0 when none)."""
    wanted = labels.items()
    return sum(v for (n, ls), v in series.items() if n == name and wanted <= dict(ls).items())


def one(series: Series, name: str, **labels: str) -> float | None:
    return series.get((name, tuple(sorted(labels.items()))))


def across(scrapes: list[Series], name: str, **labels: str) -> float:
    return sum(total(s, name, **labels) for s in scrapes)


@dataclass
class Scrapes:
    brokers: dict[int, Series]
    controllers: list[Series]
    gateways: list[Series]

    @classmethod
    def of(cls, cluster: ClusterHandle) -> Scrapes:
        return cls(
            {b.id: scrape(b.http_url) for b in cluster.local.brokers()},
            [scrape(c.http_url) for c in cluster.local.controllers()],
            [scrape(g.http_url) for g in cluster.local.gateways()],
        )


@dataclass
class Workload:
    topic: str
    group: str
    produced: dict[int, int]
    rest_ok: int  # successful REST produce calls
    rest_failed: int  # REST produce calls answered 404
    before: Scrapes
    after: Scrapes


def produce_kafka(cluster: ClusterHandle, topic: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", linger_ms=5)
    try:
        futures = [
            producer.send(topic, f"k{partition}-{i}".encode(), partition=partition)
            for partition, count in KAFKA_RECORDS.items()
            for i in range(count)
        ]
        for future in futures:
            future.get(timeout=30)
    finally:
        producer.close()


def produce_rest(cluster: ClusterHandle, topic: str) -> tuple[int, int]:
    """(calls answered 200, calls answered 404): every partition's records, then one call to a
    partition that does not exist."""
    ok = 0
    gateways = cluster.gateways
    for partition in range(PARTITIONS):
        for i in range(REST_REQUESTS_PER_PARTITION):
            body = {"records": [{"value": {"n": n}} for n in range(REST_RECORDS_PER_REQUEST)]}
            response = httpx.post(
                f"{gateways[i % len(gateways)]}/topics/{topic}/partitions/{partition}",
                content=json.dumps(body).encode(),
                headers={"Content-Type": V2_JSON},
                timeout=60,
            )
            assert response.status_code == 200, response.text
            ok += 1
    missing = httpx.post(
        f"{gateways[0]}/topics/{topic}/partitions/{PARTITIONS + 7}",
        content=json.dumps({"records": [{"value": 1}]}).encode(),
        headers={"Content-Type": V2_JSON},
        timeout=60,
    )
    assert missing.status_code == 404, missing.text
    return ok, 1


def consume_and_commit(cluster: ClusterHandle, topic: str, group: str) -> Any:
    """A group member that read at least COMMITTED of each partition and committed exactly
    COMMITTED; left open (still a member) for the caller to close."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=cluster.bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    read: dict[int, int] = {}
    deadline = time.monotonic() + 60
    while any(read.get(p, 0) < c for p, c in COMMITTED.items()):
        assert time.monotonic() < deadline, f"read only {read}"
        for tp, records in consumer.poll(timeout_ms=500).items():
            read[tp.partition] = max(read.get(tp.partition, 0), records[-1].offset + 1)
    consumer.commit(
        {TopicPartition(topic, p): OffsetAndMetadata(c, "", -1) for p, c in COMMITTED.items()}
    )
    return consumer


def fetch_past_the_end(cluster: ClusterHandle, topic: str) -> None:
    """One Fetch beyond the log end, which every broker answers with OFFSET_OUT_OF_RANGE."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest")
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 1_000_000)
        consumer.poll(timeout_ms=2000)
    finally:
        consumer.close()


def poll_until(check: Callable[[], str | None], timeout_s: float) -> None:
    """Retry ``check`` (None: satisfied, else why not) until it passes or time runs out."""
    deadline = time.monotonic() + timeout_s
    while (why := check()) is not None:
        assert time.monotonic() < deadline, why
        time.sleep(0.5)


def active_controller(cluster: ClusterHandle) -> str:
    (active,) = [
        c.http_url
        for c in cluster.local.controllers()
        if one(scrape(c.http_url), "kafka_controller_kafkacontroller_activecontrollercount") == 1
    ]
    return active


@pytest.fixture(scope="module")
def workload(cluster: ClusterHandle) -> Iterator[Workload]:
    topic = f"scrape-{uuid.uuid4().hex[:8]}"
    group = f"scrape-group-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    before = Scrapes.of(cluster)
    produce_kafka(cluster, topic)
    rest_ok, rest_failed = produce_rest(cluster, topic)
    produced = {
        p: KAFKA_RECORDS[p] + REST_REQUESTS_PER_PARTITION * REST_RECORDS_PER_REQUEST
        for p in range(PARTITIONS)
    }
    consumer = consume_and_commit(cluster, topic, group)
    try:
        fetch_past_the_end(cluster, topic)
        controller = active_controller(cluster)

        def cluster_view_caught_up() -> str | None:
            view = scrape(controller)
            for p in range(PARTITIONS):
                end = one(
                    view, "kafka_topic_partition_current_offset", topic=topic, partition=str(p)
                )
                committed = one(
                    view,
                    "kafka_consumergroup_current_offset",
                    consumergroup=group,
                    topic=topic,
                    partition=str(p),
                )
                members = one(view, "kafka_consumergroup_members", consumergroup=group)
                if (end, committed, members) != (produced[p], COMMITTED[p], 1):
                    return f"partition {p}: log end {end}, committed {committed}, members {members}"
            return None

        poll_until(cluster_view_caught_up, CLUSTER_VIEW_DEADLINE_S)

        def replicas_caught_up() -> str | None:
            for broker_id, series in Scrapes.of(cluster).brokers.items():
                for p in range(PARTITIONS):
                    end = one(series, "kafka_log_log_logendoffset", topic=topic, partition=str(p))
                    if end != produced[p]:
                        return f"broker {broker_id} holds {topic}-{p} up to {end}"
            return None

        poll_until(replicas_caught_up, 30)
        yield Workload(topic, group, produced, rest_ok, rest_failed, before, Scrapes.of(cluster))
    finally:
        consumer.close()


def test_every_named_metric_is_exported(workload: Workload) -> None:
    after = workload.after
    for broker_id, series in after.brokers.items():
        missing = set(BROKER_METRICS) - names(series)
        assert not missing, (f"broker {broker_id}", missing)
    seen = set().union(*(names(s) for s in after.brokers.values()))
    assert set(BROKER_ERROR_METRICS) <= seen
    for series in after.controllers:
        missing = set(CONTROLLER_METRICS) - names(series)
        assert not missing, ("controller", missing)
    for series in after.gateways:
        missing = set(GATEWAY_METRICS) - names(series)
        assert not missing, ("gateway", missing)
    services = {
        dict(labels)["component"]
        for s in [*after.brokers.values(), *after.controllers, *after.gateways]
        for (name, labels), v in s.items()
        if name == "pafka_build_info" and v == 1
    }
    assert services == {"broker", "controller", "gateway"}


def test_messages_in_grew_by_exactly_what_was_produced(workload: Workload) -> None:
    brokers_before = list(workload.before.brokers.values())
    brokers_after = list(workload.after.brokers.values())
    topic = workload.topic
    grown = across(
        brokers_after, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic
    ) - across(brokers_before, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic)
    assert grown == sum(workload.produced.values())
    assert across(brokers_after, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic) > 0
    assert across(brokers_after, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic) > 0
    failed = "kafka_server_brokertopicmetrics_failedfetchrequests_total"
    assert across(brokers_after, failed, topic=topic) >= 1
    errors = "kafka_network_requestmetrics_errors_total"
    out_of_range = {"request": "Fetch", "error": "OFFSET_OUT_OF_RANGE"}
    assert across(brokers_after, errors, **out_of_range) > across(
        brokers_before, errors, **out_of_range
    )


def test_a_broker_renders_only_the_series_asked_for_by_name(
    workload: Workload, cluster: ClusterHandle
) -> None:
    broker = cluster.local.brokers()[0]
    wanted = ["kafka_server_brokertopicmetrics_messagesin_total"]
    response = httpx.get(f"{broker.http_url}/metrics", params={"name[]": wanted}, timeout=30)
    assert response.status_code == 200, response.text
    found = {s.name for f in text_string_to_metric_families(response.text) for s in f.samples}
    assert found == set(wanted)
    everything = names(workload.after.brokers[broker.id])
    assert len(everything) > len(found)


def test_broker_requests_latency_and_replica_state(workload: Workload) -> None:
    brokers = list(workload.after.brokers.values())
    before = list(workload.before.brokers.values())
    for request in ("Produce", "Fetch", "ListOffsets", "Metadata"):
        count = "kafka_network_requestmetrics_requests_total"
        assert across(brokers, count, request=request) > across(before, count, request=request)
        latency = "pafka_broker_request_duration_seconds_count"
        assert across(brokers, latency, request=request) > across(before, latency, request=request)
    # Every broker holds a replica of each partition; exactly one leads each.
    assert all(
        total(s, "kafka_server_replicamanager_partitioncount") >= PARTITIONS for s in brokers
    )
    assert across(brokers, "kafka_server_replicamanager_leadercount") >= PARTITIONS
    for series in brokers:
        assert one(series, "kafka_server_replicamanager_underreplicatedpartitions") == 0
        assert one(series, "kafka_server_replicamanager_underminisrpartitioncount") == 0
        free = one(series, "pafka_broker_log_dir_free_bytes")
        size = one(series, "pafka_broker_log_dir_total_bytes")
        assert free is not None and size is not None and 0 < free <= size
        for p in range(PARTITIONS):
            labels = {"topic": workload.topic, "partition": str(p)}
            assert one(series, "kafka_log_log_logstartoffset", **labels) == 0
            assert one(series, "kafka_log_log_logendoffset", **labels) == workload.produced[p]
            assert (one(series, "kafka_log_log_size", **labels) or 0) > 0
            assert (one(series, "kafka_log_log_numlogsegments", **labels) or 0) >= 1


def test_only_the_active_controller_exports_the_cluster_view(workload: Workload) -> None:
    controllers = workload.after.controllers
    active = [
        s
        for s in controllers
        if one(s, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    ]
    standby = [
        s
        for s in controllers
        if one(s, "kafka_controller_kafkacontroller_activecontrollercount") == 0
    ]
    assert len(active) == 1 and len(standby) == len(controllers) - 1 >= 1
    assert set(CLUSTER_VIEW) <= names(active[0])
    for series in standby:
        assert not set(CLUSTER_VIEW) & names(series)
    assert one(active[0], "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    assert one(active[0], "kafka_controller_controllerstats_uncleanleaderelections_total") == 0


def test_cluster_view_offsets_and_lag_are_the_gaps(workload: Workload) -> None:
    (view,) = [
        s
        for s in workload.after.controllers
        if one(s, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    ]
    topic, group = workload.topic, workload.group
    brokers = workload.after.brokers
    assert one(view, "kafka_brokers") == len(brokers)
    assert one(view, "kafka_topic_partitions", topic=topic) == PARTITIONS
    leaders: set[int] = set()
    for p in range(PARTITIONS):
        tp = {"topic": topic, "partition": str(p)}
        end = one(view, "kafka_topic_partition_current_offset", **tp)
        assert end == workload.produced[p]
        assert one(view, "kafka_topic_partition_oldest_offset", **tp) == 0
        assert one(view, "kafka_topic_partition_replicas", **tp) == 3
        assert one(view, "kafka_topic_partition_in_sync_replica", **tp) == 3
        assert one(view, "kafka_topic_partition_under_replicated_partition", **tp) == 0
        assert one(view, "kafka_topic_partition_leader_is_preferred", **tp) in (0, 1)
        leader = one(view, "kafka_topic_partition_leader", **tp)
        assert leader in brokers
        leaders.add(int(leader))
        committed = one(view, "kafka_consumergroup_current_offset", consumergroup=group, **tp)
        assert committed == COMMITTED[p]
        gap = one(view, "kafka_consumergroup_lag", consumergroup=group, **tp)
        assert gap == workload.produced[p] - COMMITTED[p]
    mine = {"consumergroup": group, "topic": topic}
    assert one(view, "kafka_consumergroup_lag_sum", **mine) == sum(
        workload.produced[p] - COMMITTED[p] for p in range(PARTITIONS)
    )
    assert one(view, "kafka_consumergroup_current_offset_sum", **mine) == sum(COMMITTED.values())
    assert one(view, "kafka_consumergroup_members", consumergroup=group) == 1
    # Only leaders append produced records: the brokers the view names as leaders counted them.
    for broker_id, series in brokers.items():
        counted = total(series, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic)
        assert (counted > 0) == (broker_id in leaders), broker_id


def test_gateways_counted_the_rest_calls_by_status(workload: Workload) -> None:
    before, after = workload.before.gateways, workload.after.gateways
    post = {"handler": PRODUCE_ROUTE, "method": "POST"}

    def grown(name: str, **labels: str) -> float:
        return across(after, name, **labels) - across(before, name, **labels)

    assert grown("http_requests_total", **post, status="200") == workload.rest_ok
    assert grown("http_requests_total", **post, status="404") == workload.rest_failed
    calls = workload.rest_ok + workload.rest_failed
    assert grown("http_request_duration_seconds_count", **post) == calls
    # Both gateways served produce calls.
    for series in after:
        assert total(series, "http_requests_total", **post, status="200") > 0
