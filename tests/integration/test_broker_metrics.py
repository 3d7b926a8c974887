"""Broker and controller metrics of issue 7 on a cluster of its own (it kills brokers): values
that follow from what the test did, read from each process's /metrics as Prometheus reads it.

Brokers shrink a silent follower out of the ISR after 4 s here (Kafka's 30 s default would make
the test wait); the controller takes a dead broker out after its 6 s ZooKeeper session. Either
way the leader counts the shrink.
"""

from __future__ import annotations

import socket
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator

import pytest
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.producer import ProduceResponse
from prometheus_client.parser import text_string_to_metric_families

from pafka.zk.znodes import ControllerZNode, TopicZNode
from tests.integration.conftest import TEST_BROKER_ENV, ClusterHandle
from tests.integration.conftest import own_cluster as started_cluster
from tests.integration.wire import produce_request, roundtrip
from tests.unit.records_util import build_batch

UNKNOWN_TOPIC_OR_PARTITION = 3
LAG_MAX_MS = 4000
WAIT_S = 60.0

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    env = {**TEST_BROKER_ENV, "PAFKA_BROKER_REPLICA_LAG_TIME_MAX_MS": str(LAG_MAX_MS)}
    with started_cluster(
        tmp_path_factory, "broker-metrics", brokers=3, controllers=2, broker_env=env
    ) as handle:
        yield handle


def scrape(url: str) -> Series:
    with urllib.request.urlopen(url + "/metrics", timeout=5) as response:
        text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def sample(url: str, name: str, **labels: str) -> float | None:
    return scrape(url).get((name, frozenset(labels.items())))


def broker_url(cluster: ClusterHandle, broker_id: int) -> str:
    return cluster.local.broker(broker_id).http_url


def replicas(cluster: ClusterHandle, topic: str) -> tuple[int, ...]:
    data, _ = cluster.zk.get(TopicZNode.path(topic))
    return tuple(TopicZNode.decode(topic, data).partitions[0])


def active_controller_url(cluster: ClusterHandle) -> str:
    data, _ = cluster.zk.get(ControllerZNode.path())
    active = ControllerZNode.decode(data).controller_id
    return cluster.local.services[f"controller-{active}"].http_url


def wait_for(check: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.2)


def new_topic(cluster: ClusterHandle, prefix: str, rf: int, config: dict[str, str]) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=1, replication_factor=rf, config=config)
    return name


def produce(cluster: ClusterHandle, topic: str, count: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", retries=5)
    try:
        futures = [producer.send(topic, value=b"record-%d" % i) for i in range(count)]
        for future in futures:
            future.get(30)
    finally:
        producer.close()


def test_produced_records_count_as_messages_in_and_grow_the_log(own: ClusterHandle) -> None:
    topic = new_topic(own, "msgs", 3, {})
    state = own.partition_state(topic, 0)
    leader = broker_url(own, state.leader)
    labels = {"topic": topic, "partition": "0"}
    messages_in = "kafka_server_brokertopicmetrics_messagesin_total"
    before = sample(leader, messages_in, topic=topic) or 0.0
    assert sample(leader, "kafka_log_log_size", **labels) == 0.0
    assert sample(leader, "kafka_log_log_numlogsegments", **labels) == 1.0

    produce(own, topic, 120)
    assert sample(leader, messages_in, topic=topic) == before + 120
    first_size = sample(leader, "kafka_log_log_size", **labels)
    assert first_size is not None and first_size > 120 * len(b"record-0")
    assert sample(leader, "kafka_log_log_logendoffset", **labels) == 120.0
    assert sample(leader, "kafka_log_log_logstartoffset", **labels) == 0.0

    produce(own, topic, 30)
    assert sample(leader, messages_in, topic=topic) == before + 150
    grown = sample(leader, "kafka_log_log_size", **labels)
    assert grown is not None and grown > first_size

    # Followers report their own replica's log: the same bytes once replicated.
    def replicated(url: str) -> Callable[[], bool]:
        return lambda: sample(url, "kafka_log_log_size", **labels) == grown

    for follower in (r for r in state.isr if r != state.leader):
        wait_for(
            replicated(broker_url(own, follower)),
            f"broker {follower}'s replica of {topic} holds every byte",
        )


def test_requests_for_an_unknown_partition_count_errors_by_kafka_name(own: ClusterHandle) -> None:
    topic = new_topic(own, "errs", 1, {})
    broker_id = own.broker_ids()[0]
    url = broker_url(own, broker_id)
    errors = "kafka_network_requestmetrics_errors_total"
    unknown = {"error": "UNKNOWN_TOPIC_OR_PARTITION"}
    produce_errors = sample(url, errors, request="Produce", **unknown) or 0.0
    fetch_errors = sample(url, errors, request="Fetch", **unknown) or 0.0
    failed_produce = "kafka_server_brokertopicmetrics_failedproducerequests_total"
    failed_fetch = "kafka_server_brokertopicmetrics_failedfetchrequests_total"

    lost_produce = produce_request(topic, 7, build_batch([b"lost"]))
    fetch = FetchRequest[11]
    fetch_request = fetch(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            fetch.FetchTopic(
                topic=topic,
                partitions=[
                    fetch.FetchTopic.FetchPartition(
                        partition=7, fetch_offset=0, partition_max_bytes=1 << 20
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    with socket.create_connection(own.broker_address(broker_id), timeout=15) as sock:
        produced = roundtrip(sock, lost_produce, ProduceResponse, 8, 1)
        fetched = roundtrip(sock, fetch_request, FetchResponse, 11, 2)
    assert produced.responses[0].partition_responses[0].error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert fetched.responses[0].partitions[0].error_code == UNKNOWN_TOPIC_OR_PARTITION

    after = scrape(url)

    def got(name: str, **labels: str) -> float | None:
        return after.get((name, frozenset(labels.items())))

    assert got(errors, request="Produce", **unknown) == produce_errors + 1
    assert got(errors, request="Fetch", **unknown) == fetch_errors + 1
    assert got(failed_produce, topic=topic) == 1.0
    assert got(failed_fetch, topic=topic) == 1.0
    assert not any(name == errors and ("error", "NONE") in labels for name, labels in after)


def test_every_process_exports_build_info(own: ClusterHandle) -> None:
    for service in own.local.services.values():
        infos = [
            dict(labels)
            for (name, labels), value in scrape(service.http_url).items()
            if name == "pafka_build_info" and value == 1.0
        ]
        assert len(infos) == 1, service.name
        assert infos[0]["component"] == service.kind
        assert infos[0]["version"] and infos[0]["python"].count(".") == 2


def test_a_dead_follower_shrinks_the_isr_under_min_isr_and_its_return_expands_it(
    own: ClusterHandle,
) -> None:
    topic = new_topic(own, "isr", 3, {"min.insync.replicas": "3"})
    produce(own, topic, 10)
    state = own.partition_state(topic, 0)
    leader = broker_url(own, state.leader)
    follower = next(r for r in replicas(own, topic) if r != state.leader)
    shrinks = "kafka_server_replicamanager_isrshrinks_total"
    expands = "kafka_server_replicamanager_isrexpands_total"
    under_min = "kafka_server_replicamanager_underminisrpartitioncount"
    shrinks_before = sample(leader, shrinks) or 0.0
    expands_before = sample(leader, expands) or 0.0
    assert sample(leader, under_min) == 0.0

    own.local.kill(f"broker-{follower}")
    try:
        # The leader may lead other partitions the follower replicated, whose shrinks count
        # too: wait for this partition's, which only it takes under min.insync.replicas.
        wait_for(lambda: sample(leader, under_min) == 1.0, "the partition is under min ISR")
        assert (sample(leader, shrinks) or 0.0) > shrinks_before
        assert follower not in own.partition_state(topic, 0).isr
    finally:
        own.local.restart(f"broker-{follower}")
    wait_for(lambda: (sample(leader, expands) or 0.0) > expands_before, "the ISR expands")
    wait_for(lambda: sample(leader, under_min) == 0.0, "the partition is back at min ISR")
    assert follower in own.partition_state(topic, 0).isr


def test_electing_an_out_of_sync_replica_counts_one_unclean_election(own: ClusterHandle) -> None:
    topic = new_topic(own, "unclean", 2, {"unclean.leader.election.enable": "true"})
    produce(own, topic, 5)
    state = own.partition_state(topic, 0)
    leader, stale = state.leader, next(r for r in replicas(own, topic) if r != state.leader)
    unclean = "kafka_controller_controllerstats_uncleanleaderelections_total"
    elections = "kafka_controller_controllerstats_leaderelections_total"
    controller = active_controller_url(own)
    unclean_before = sample(controller, unclean) or 0.0
    elections_before = sample(controller, elections) or 0.0

    own.local.kill(f"broker-{stale}")
    try:
        wait_for(lambda: own.partition_state(topic, 0).isr == (leader,), "the ISR is the leader")
        own.local.kill(f"broker-{leader}")  # every ISR member is gone: the partition is offline
        try:
            wait_for(lambda: own.partition_state(topic, 0).leader < 0, "the partition is offline")
            own.local.restart(f"broker-{stale}")
            wait_for(
                lambda: own.partition_state(topic, 0).leader == stale,
                "the out-of-sync replica leads",
            )
        finally:
            own.local.restart(f"broker-{leader}")
    finally:
        if not own.local.services[f"broker-{stale}"].alive():
            own.local.restart(f"broker-{stale}")
    # The same controller made the decision (nothing here touched the controllers).
    assert active_controller_url(own) == controller
    assert sample(controller, unclean) == unclean_before + 1
    assert (sample(controller, elections) or 0.0) >= elections_before + 1
