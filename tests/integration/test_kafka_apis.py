"""Kafka APIs as real clients use them: offsets, long polls, wrong brokers, configs, partitions."""

from __future__ import annotations

import socket
import threading
import time
import uuid

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from tests.integration.wire import roundtrip
from tests.unit.records_util import build_batch

NOT_LEADER_OR_FOLLOWER = 6


def _topic(cluster, prefix: str, partitions: int = 1, rf: int = 1, config=None) -> str:  # type: ignore[no-untyped-def]
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=partitions, replication_factor=rf, config=config)
    return name


def test_list_offsets_earliest_latest_and_by_timestamp(cluster) -> None:  # type: ignore[no-untyped-def]
    topic = _topic(cluster, "offsets")
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", linger_ms=0)
    base = 1_700_000_000_000
    for i in range(10):
        producer.send(topic, value=b"v", timestamp_ms=base + i * 1000).get(10)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap)
    tp = TopicPartition(topic, 0)
    assert consumer.beginning_offsets([tp]) == {tp: 0}
    assert consumer.end_offsets([tp]) == {tp: 10}
    found = consumer.offsets_for_times({tp: base + 4500})[tp]
    assert found is not None and found.offset == 5 and found.timestamp == base + 5000
    assert consumer.offsets_for_times({tp: base + 99_000})[tp] is None
    consumer.close()


def _fetch(
    address: tuple[str, int], topic: str, offset: int, max_wait_ms: int
) -> tuple[bytes, float]:
    cls = FetchRequest[11]
    request = cls(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            cls.FetchTopic(
                topic=topic,
                partitions=[
                    cls.FetchTopic.FetchPartition(
                        partition=0, fetch_offset=offset, partition_max_bytes=1 << 20
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    started = time.monotonic()
    with socket.create_connection(address, timeout=30) as sock:
        response = roundtrip(sock, request, FetchResponse, 11, 1)
    part = response.responses[0].partitions[0]
    assert part.error_code == 0
    return bytes(part.records or b""), time.monotonic() - started


def test_fetch_long_polls_until_data_or_max_wait(cluster) -> None:  # type: ignore[no-untyped-def]
    topic = _topic(cluster, "longpoll")
    address = cluster.leader_address(topic, 0)
    records, waited = _fetch(address, topic, 0, max_wait_ms=700)
    assert records == b"" and waited >= 0.6, "an empty fetch waits for max_wait_ms"

    def produce_later() -> None:
        time.sleep(0.5)
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap)
        producer.send(topic, value=b"wake up").get(10)
        producer.close()

    thread = threading.Thread(target=produce_later)
    thread.start()
    records, waited = _fetch(address, topic, 0, max_wait_ms=20_000)
    thread.join()
    assert b"wake up" in records
    assert waited < 15, "new data answers a waiting fetch before max_wait_ms"


def test_the_wrong_broker_answers_not_leader(cluster) -> None:  # type: ignore[no-untyped-def]
    topic = _topic(cluster, "notleader")
    leader = cluster.partition_state(topic, 0).leader
    other = next(b for b in cluster.broker_ids() if b != leader)
    R = ProduceRequest[8]
    request = R(
        transactional_id=None,
        acks=1,
        timeout_ms=5000,
        topic_data=[
            R.TopicProduceData(
                name=topic,
                partition_data=[
                    R.TopicProduceData.PartitionProduceData(index=0, records=build_batch([b"x"]))
                ],
            )
        ],
    )
    with socket.create_connection(cluster.broker_address(other), timeout=15) as sock:
        response = roundtrip(sock, request, ProduceResponse, 8, 1)
    assert response.responses[0].partition_responses[0].error_code == NOT_LEADER_OR_FOLLOWER


def test_describe_configs_and_create_partitions_with_librdkafka(cluster) -> None:  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions

    topic = _topic(cluster, "configs", partitions=2, rf=2, config={"retention.ms": "123456"})
    client = AdminClient({"bootstrap.servers": cluster.bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = client.describe_configs([resource])[resource].result(30)
    assert configs["retention.ms"].value == "123456"
    assert configs["cleanup.policy"].value == "delete"
    assert configs["retention.ms"].is_default is False

    client.create_partitions([NewPartitions(topic, 5)])[topic].result(30)
    metadata = client.list_topics(topic, timeout=10)
    assert sorted(metadata.topics[topic].partitions) == [0, 1, 2, 3, 4]
    assert all(p.leader >= 0 for p in metadata.topics[topic].partitions.values())


def test_unknown_api_versions_version_gets_a_v0_answer(cluster) -> None:  # type: ignore[no-untyped-def]
    import struct

    from kafka.protocol.metadata.api_versions import ApiVersionsResponse

    from tests.integration.wire import read_exact

    # ApiVersions v99: api_key 18, version 99, correlation id 42, client id "x"
    frame = struct.pack(">hhih", 18, 99, 42, 1) + b"x"
    with socket.create_connection(
        cluster.broker_address(cluster.broker_ids()[0]), timeout=15
    ) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", read_exact(sock, 4))
        response = ApiVersionsResponse.decode(read_exact(sock, size), version=0, header=True)
    assert response.header.correlation_id == 42
    assert response.error_code == 35
    keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert keys[18] == (0, 4) and keys[0] == (0, 9)
    assert keys[11] == (0, 7), "JoinGroup is served, so advertised"


def test_health_and_metrics_endpoints(cluster) -> None:  # type: ignore[no-untyped-def]
    import urllib.request

    def get(url: str) -> str:
        with urllib.request.urlopen(url, timeout=5) as response:
            assert response.status == 200
            return str(response.read().decode())

    topic = _topic(cluster, "metrics")
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap)
    producer.send(topic, value=b"m").get(10)
    producer.close()
    leader = cluster.partition_state(topic, 0).leader
    broker = cluster.local.broker(leader)
    assert get(broker.http_url + "/livez") and get(broker.http_url + "/readyz")
    metrics = get(broker.http_url + "/metrics")
    assert f'kafka_server_brokertopicmetrics_messagesin_total{{topic="{topic}"}} 1.0' in metrics
    assert "kafka_server_replicamanager_leadercount" in metrics
    assert "kafka_network_requestmetrics_requests_total" in metrics
    controllers = [get(c.http_url + "/metrics") for c in cluster.local.controllers()]
    active = [
        m for m in controllers if "kafka_controller_kafkacontroller_activecontrollercount 1.0" in m
    ]
    assert len(active) == 1
    assert "kafka_controller_kafkacontroller_globalpartitioncount" in active[0]


def test_metadata_names_a_broker_as_controller_so_admin_clients_reach_one(cluster) -> None:  # type: ignore[no-untyped-def]
    """Controllers are a service of their own; clients send admin requests to the "controller"
    Metadata names, so it must be a broker: each broker names itself."""
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse

    from tests.integration.wire import request_once

    for broker_id in cluster.broker_ids():
        got = request_once(
            cluster.broker_address(broker_id), MetadataRequest[1](topics=[]), MetadataResponse, 1
        )
        assert got.controller_id == broker_id
    name = f"admin-{uuid.uuid4().hex[:8]}"
    host, port = cluster.broker_address(cluster.broker_ids()[-1])
    admin = KafkaAdminClient(bootstrap_servers=f"{host}:{port}")
    try:
        admin.create_topics([NewTopic(name, 2, 1)])
    finally:
        admin.close()
    cluster.wait_for_leaders(name, 2)
