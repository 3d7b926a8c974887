"""The admin APIs of Kafka 2.8's tools (issue 16), on a cluster of their own (the tests stop
and restart brokers): config changes that brokers enforce at once, DeleteRecords followed by
the followers and kept across a restart, preferred and unclean elections, reassignments,
DescribeLogDirs and DescribeCluster, called by confluent-kafka, kafka-python and raw requests.

Brokers check retention every 200 ms here (Kafka's 5 minutes would make the test wait).
"""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    ElectionType,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from kafka import TopicPartition as KafkaTP
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)

from pafka.admin import topics as admin
from pafka.zk.znodes import TopicZNode
from tests.integration.conftest import TEST_BROKER_ENV, ClusterHandle
from tests.integration.conftest import own_cluster as started_cluster
from tests.integration.wire import request_once

WAIT_S = 60.0
MESSAGE_TOO_LARGE = 10
INVALID_REQUEST = 42
INVALID_CONFIG = 40
UNKNOWN_TOPIC_OR_PARTITION = 3
NO_REASSIGNMENT_IN_PROGRESS = 85


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    env = {**TEST_BROKER_ENV, "PAFKA_BROKER_RETENTION_CHECK_INTERVAL_MS": "200"}
    with started_cluster(
        tmp_path_factory, "admin-apis", brokers=3, controllers=2, broker_env=env
    ) as handle:
        wait_until(lambda: len(handle.broker_ids()) == 3, "every broker registered")
        try:
            yield handle
        finally:
            # Dropped before the cluster goes: a kept librdkafka producer would go on
            # reconnecting to its stopped brokers (and logging it) for the rest of the run.
            _producers.pop(handle.bootstrap, None)


def wait_until(check: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.1)


def topic_on(
    own: ClusterHandle, replicas: tuple[int, ...], config: dict[str, str] | None = None
) -> str:
    name = f"adm-{uuid.uuid4().hex[:8]}"
    admin.create_topic(own.zk, name, -1, -1, config or {}, {0: replicas})
    own.wait_for_leaders(name, 1)
    return name


def admin_client(own: ClusterHandle) -> AdminClient:
    client = AdminClient({"bootstrap.servers": own.bootstrap})
    # Connected first: librdkafka's DeleteRecords looks leaders up once, and with no broker
    # usable yet it waits out its whole request timeout.
    client.list_topics(timeout=15)
    return client


_producers: dict[str, Producer] = {}


def produce(own: ClusterHandle, topic: str, values: list[bytes]) -> list[KafkaError | None]:
    """Send and wait; each record's error (one producer for the module's calls)."""
    errors: list[KafkaError | None] = []
    producer = _producers.get(own.bootstrap)
    if producer is None:
        producer = _producers[own.bootstrap] = Producer(
            {"bootstrap.servers": own.bootstrap, "linger.ms": 0, "message.max.bytes": 10_000_000}
        )
    for value in values:
        # Keyed: a topic altered to cleanup.policy=compact refuses keyless records, as Kafka's do.
        producer.produce(
            topic, value, b"k", partition=0, on_delivery=lambda e, _m: errors.append(e)
        )
    assert producer.flush(30) == 0
    return errors


def delivered(own: ClusterHandle, topic: str, values: list[bytes]) -> bool:
    # `is None`, not ==: comparing confluent-kafka's KafkaError with None leaves a TypeError
    # pending in the interpreter (it surfaces at some later call).
    return all(e is None for e in produce(own, topic, values))


def watermarks(own: ClusterHandle, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": own.bootstrap, "group.id": "adm-watermarks"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(low), int(high)
    finally:
        consumer.close()


def settled_watermarks(own: ClusterHandle, topic: str) -> tuple[int, int] | None:
    """The watermarks, or None while a leader change leaves the answer retriable (a fresh
    client may still ask the broker that led before)."""
    try:
        return watermarks(own, topic)
    except KafkaException as exc:
        # librdkafka does not flag a stale leader's NOT_LEADER_FOR_PARTITION as retriable here.
        moving = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE)
        if exc.args[0].retriable() or exc.args[0].code() in moving:
            return None
        raise


def describe_topic(client: AdminClient, topic: str) -> dict[str, Any]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return dict(client.describe_configs([resource])[resource].result(timeout=30))


def shows(client: AdminClient, topic: str, name: str, value: str, source: ConfigSource) -> None:
    """Wait until DescribeConfigs shows the change (brokers learn it through a watch)."""

    def check() -> bool:
        entry = describe_topic(client, topic)[name]
        return bool(entry.value == value and entry.source == source.value)

    wait_until(check, f"{topic} shows {name}={value} from {source.name}")


def incremental(client: AdminClient, resource: ConfigResource) -> None:
    client.incremental_alter_configs([resource])[resource].result(timeout=30)


def error_code(run: Callable[[], object]) -> int:
    with pytest.raises(KafkaException) as caught:
        run()
    return int(caught.value.args[0].code())


def test_incremental_alter_configs_changes_describe_and_max_message_bytes_is_enforced(
    own: ClusterHandle,
) -> None:
    topic = topic_on(own, (1, 2, 3))
    client = admin_client(own)
    assert delivered(own, topic, [b"x" * 5000])
    incremental(
        client,
        ConfigResource(
            ResourceType.TOPIC,
            topic,
            incremental_configs=[
                ConfigEntry(
                    "max.message.bytes", "1000", incremental_operation=AlterConfigOpType.SET
                )
            ],
        ),
    )
    shows(client, topic, "max.message.bytes", "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    wait_until(
        lambda: produce(own, topic, [b"x" * 5000])[0] is not None,
        "the leader refuses a 5,000-byte record",
    )
    [refused] = produce(own, topic, [b"x" * 5000])
    assert refused is not None and refused.code() == MESSAGE_TOO_LARGE
    assert delivered(own, topic, [b"small"])
    # APPEND and SUBTRACT on a list config, DELETE back to the default.
    for op, value, expected in [
        (AlterConfigOpType.APPEND, "compact", "delete,compact"),
        (AlterConfigOpType.SUBTRACT, "delete", "compact"),
    ]:
        incremental(
            client,
            ConfigResource(
                ResourceType.TOPIC,
                topic,
                incremental_configs=[
                    ConfigEntry("cleanup.policy", value, incremental_operation=op)
                ],
            ),
        )
        shows(client, topic, "cleanup.policy", expected, ConfigSource.DYNAMIC_TOPIC_CONFIG)
    incremental(
        client,
        ConfigResource(
            ResourceType.TOPIC,
            topic,
            incremental_configs=[
                ConfigEntry(
                    "max.message.bytes", None, incremental_operation=AlterConfigOpType.DELETE
                )
            ],
        ),
    )
    shows(client, topic, "max.message.bytes", "1048588", ConfigSource.DEFAULT_CONFIG)
    wait_until(lambda: delivered(own, topic, [b"x" * 5000]), "the limit is lifted")


def test_alter_configs_retention_deletes_old_segments(own: ClusterHandle) -> None:
    topic = topic_on(own, (2,), {"segment.bytes": "1024"})
    client = admin_client(own)
    for _ in range(12):  # one batch per request, so segments roll every two records
        assert delivered(own, topic, [b"r" * 600])
    assert watermarks(own, topic) == (0, 12)
    resource = ConfigResource(
        ResourceType.TOPIC, topic, set_config={"segment.bytes": "1024", "retention.ms": "1"}
    )
    client.alter_configs([resource])[resource].result(timeout=30)
    shows(client, topic, "retention.ms", "1", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    shows(client, topic, "segment.bytes", "1024", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    wait_until(lambda: watermarks(own, topic)[0] >= 10, "retention deleted the old segments")
    assert watermarks(own, topic)[1] == 12


def test_alter_configs_errors_are_kafkas_and_validate_only_changes_nothing(
    own: ClusterHandle,
) -> None:
    topic = topic_on(own, (1,))
    client = admin_client(own)

    def alter(config: dict[str, str], name: str = topic, **options: Any) -> None:
        resource = ConfigResource(ResourceType.TOPIC, name, set_config=config)
        client.alter_configs([resource], **options)[resource].result(timeout=30)

    assert error_code(lambda: alter({"retention.ms": "soon"})) == INVALID_REQUEST
    assert error_code(lambda: alter({"no.such.config": "1"})) == INVALID_CONFIG
    assert error_code(lambda: alter({"retention.ms": "5"}, "no-such-topic")) == (
        UNKNOWN_TOPIC_OR_PARTITION
    )
    alter({"retention.ms": "5"}, validate_only=True)
    assert describe_topic(client, topic)["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value


def test_dynamic_broker_config_is_enforced_and_unused_ones_refused(own: ClusterHandle) -> None:
    topic = topic_on(own, (3,))
    client = admin_client(own)

    def set_broker(name: str, value: str | None) -> None:
        op = AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET
        incremental(
            client,
            ConfigResource(
                ResourceType.BROKER,
                "3",
                incremental_configs=[ConfigEntry(name, value, incremental_operation=op)],
            ),
        )

    assert error_code(lambda: set_broker("num.io.threads", "4")) == INVALID_REQUEST
    set_broker("message.max.bytes", "2000")
    try:
        resource = ConfigResource(ResourceType.BROKER, "3")

        def described() -> Any:
            return client.describe_configs([resource])[resource].result(timeout=30)

        wait_until(
            lambda: described()["message.max.bytes"].value == "2000", "broker 3 took the value"
        )
        entries = described()
        assert entries["message.max.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        wait_until(
            lambda: produce(own, topic, [b"b" * 5000])[0] is not None,
            "broker 3 refuses a record over its dynamic message.max.bytes",
        )
        [refused] = produce(own, topic, [b"b" * 5000])
        assert refused is not None and refused.code() == MESSAGE_TOO_LARGE
    finally:
        set_broker("message.max.bytes", None)
    wait_until(lambda: delivered(own, topic, [b"b" * 5000]), "the limit is lifted")


def test_delete_records_moves_the_start_followers_follow_and_it_survives_a_restart(
    own: ClusterHandle,
) -> None:
    topic = topic_on(own, (1, 2, 3), {"segment.bytes": "1024"})
    client = admin_client(own)
    for _ in range(10):
        assert delivered(own, topic, [b"d" * 100] * 5)
    futures = client.delete_records([TopicPartition(topic, 0, 30)])
    [deleted] = futures.values()
    assert deleted.result(timeout=30).low_watermark == 30
    assert watermarks(own, topic) == (30, 50)
    # Above the high watermark: OFFSET_OUT_OF_RANGE.
    [beyond] = client.delete_records([TopicPartition(topic, 0, 500)]).values()
    with pytest.raises(KafkaException) as caught:
        beyond.result(timeout=30)
    assert caught.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE
    time.sleep(1)  # the followers' next fetches carry the new start
    # The leader stops: a follower takes over and starts at 30 too.
    own.local.restart("broker-1")
    own.wait_for_leaders(topic, 1)
    assert watermarks(own, topic)[0] == 30
    # Back on the restarted broker (a preferred election): its checkpoint kept the start.
    wait_until(lambda: 1 in own.partition_state(topic, 0).isr, "broker 1 rejoins the ISR")
    result = client.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 0)]).result(
        timeout=30
    )
    assert result[TopicPartition(topic, 0)] is None
    wait_until(lambda: own.partition_state(topic, 0).leader == 1, "broker 1 leads again")
    wait_until(lambda: settled_watermarks(own, topic) == (30, 50), "broker 1 serves from 30")
    # -1: up to the high watermark (a raw request: librdkafka's client, created before the
    # restart or not, may still look for the leader it knew).
    D = DeleteRecordsRequest[1]
    to_end = request_once(
        own.leader_address(topic, 0),
        D(
            topics=[
                D.DeleteRecordsTopic(
                    name=topic, partitions=[D.DeleteRecordsTopic.DeleteRecordsPartition(0, -1)]
                )
            ],
            timeout_ms=30_000,
        ),
        DeleteRecordsResponse,
        1,
    )
    [result] = to_end.topics[0].partitions
    assert (result.error_code, result.low_watermark) == (0, 50)


def test_elect_leaders_preferred_errors_and_unclean(own: ClusterHandle) -> None:
    topic = topic_on(own, (2, 3))
    client = admin_client(own)
    tp = TopicPartition(topic, 0)
    not_needed = client.elect_leaders(ElectionType.PREFERRED, [tp]).result(timeout=30)[tp]
    assert not_needed is not None and not_needed.code() == KafkaError.ELECTION_NOT_NEEDED
    missing = TopicPartition(topic, 5)
    unknown = client.elect_leaders(ElectionType.PREFERRED, [missing]).result(timeout=30)[missing]
    assert unknown is not None and unknown.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    # Every partition (null): those needing no election are left out of the answer.
    everything = request_once(
        own.broker_address(1),
        ElectLeadersRequest[1](election_type=0, topic_partitions=None, timeout_ms=30_000),
        ElectLeadersResponse,
        1,
    )
    assert everything.error_code == 0
    assert all(r.topic != topic for r in everything.replica_election_results)
    assert delivered(own, topic, [b"before"])
    # Follower 3 leaves (controlled shutdown takes it out of the ISR), then leader 2 stops:
    # the only in-sync replica is gone and unclean election is off, so the partition is offline.
    own.local.kill("broker-3", signal.SIGTERM)
    wait_until(lambda: own.partition_state(topic, 0).isr == (2,), "the ISR is just 2")
    own.local.kill("broker-2", signal.SIGTERM)
    wait_until(lambda: own.partition_state(topic, 0).leader == -1, "the partition is offline")
    own.local.restart("broker-3")
    time.sleep(1)
    assert own.partition_state(topic, 0).leader == -1
    result = client.elect_leaders(ElectionType.UNCLEAN, [tp]).result(timeout=30)
    assert result[tp] is None
    wait_until(lambda: own.partition_state(topic, 0).leader == 3, "broker 3 leads (unclean)")
    own.local.restart("broker-2")
    own.wait_for_leaders(topic, 1)


def test_reassignments_alter_list_and_cancel_errors(own: ClusterHandle) -> None:
    topic = topic_on(own, (1,))
    address = own.broker_address(2)
    R = AlterPartitionReassignmentsRequest[0]

    def alter(partition: int, replicas: list[int] | None) -> Any:
        request = R(
            timeout_ms=30_000,
            topics=[
                R.ReassignableTopic(
                    name=topic,
                    partitions=[
                        R.ReassignableTopic.ReassignablePartition(
                            partition_index=partition, replicas=replicas
                        )
                    ],
                )
            ],
        )
        got = request_once(address, request, AlterPartitionReassignmentsResponse, 0)
        assert got.error_code == 0
        return got.responses[0].partitions[0].error_code

    assert alter(0, None) == NO_REASSIGNMENT_IN_PROGRESS
    assert alter(7, [2]) == UNKNOWN_TOPIC_OR_PARTITION
    assert alter(0, [2, 2]) != 0
    assert alter(0, [2]) == 0
    wait_until(
        lambda: (
            TopicZNode.decode(topic, own.zk.get(TopicZNode.path(topic))[0]).partitions[0] == (2,)
        ),
        "the partition moved to broker 2",
    )
    L = ListPartitionReassignmentsRequest[0]
    listed = request_once(
        address, L(timeout_ms=30_000, topics=None), ListPartitionReassignmentsResponse, 0
    )
    assert listed.error_code == 0
    assert all(t.name != topic for t in listed.topics)
    own.wait_for_leaders(topic, 1)
    assert own.partition_state(topic, 0).leader == 2


def test_describe_log_dirs_and_describe_cluster(own: ClusterHandle) -> None:
    topic = topic_on(own, (1,))
    assert delivered(own, topic, [b"size"] * 10)
    R = DescribeLogDirsRequest[1]
    got = request_once(
        own.broker_address(1),
        R(topics=[R.DescribableLogDirTopic(topic=topic, partitions=[0])]),
        DescribeLogDirsResponse,
        1,
    )
    [result] = got.results
    assert result.error_code == 0 and result.log_dir
    [described] = result.topics
    assert described.name == topic
    [partition] = described.partitions
    assert partition.partition_size > 0 and partition.is_future_key is False
    elsewhere = request_once(
        own.broker_address(2),
        R(topics=[R.DescribableLogDirTopic(topic=topic, partitions=[0])]),
        DescribeLogDirsResponse,
        1,
    )
    assert elsewhere.results[0].topics == []
    # v0 (Kafka 2.0's tools): the same answer in v1's layout.
    R0 = DescribeLogDirsRequest[0]
    old = request_once(own.broker_address(1), R0(topics=None), DescribeLogDirsResponse, 0)
    assert any(t.name == topic for t in old.results[0].topics)
    cluster = request_once(
        own.broker_address(3),
        DescribeClusterRequest[0](include_cluster_authorized_operations=True),
        DescribeClusterResponse,
        0,
    )
    assert cluster.error_code == 0
    assert sorted(b.broker_id for b in cluster.brokers) == own.broker_ids()
    assert cluster.controller_id == 3
    assert cluster.cluster_id
    assert 7 in cluster.authorized_operations  # ALTER


def test_the_broker_default_reaches_every_broker_and_one_broker_answers_only_for_itself(
    own: ClusterHandle,
) -> None:
    topic = topic_on(own, (2,))
    client = admin_client(own)
    R = IncrementalAlterConfigsRequest[0]

    def alter(broker: str, value: str | None, to: int = 1) -> int:
        op = 1 if value is None else 0  # DELETE, SET
        config = R.AlterConfigsResource.AlterableConfig(
            name="log.retention.ms", config_operation=op, value=value
        )
        resource = R.AlterConfigsResource(resource_type=4, resource_name=broker, configs=[config])
        got = request_once(
            own.broker_address(to),
            R(resources=[resource], validate_only=False),
            IncrementalAlterConfigsResponse,
            0,
        )
        return int(got.responses[0].error_code)

    assert alter("2", "5000", to=1) == INVALID_REQUEST  # broker 2's configs are broker 2's
    assert alter("", "123456") == 0
    try:
        for broker in (2, 3):
            resource = ConfigResource(ResourceType.BROKER, str(broker))

            def shows_default(resource: ConfigResource = resource) -> bool:
                entry = client.describe_configs([resource])[resource].result(timeout=30)[
                    "log.retention.ms"
                ]
                return bool(
                    entry.value == "123456"
                    and entry.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
                )

            wait_until(shows_default, f"broker {broker} takes the cluster default")
        # A topic without its own retention.ms inherits the new default.
        wait_until(
            lambda: describe_topic(client, topic)["retention.ms"].value == "123456",
            "the topic inherits the default",
        )
    finally:
        assert alter("", None) == 0
    wait_until(
        lambda: describe_topic(client, topic)["retention.ms"].value == "604800000",
        "the topic is back on the static default",
    )


def test_a_new_replica_of_a_partition_whose_start_moved_catches_up(own: ClusterHandle) -> None:
    """A replica added after DeleteRecords has nothing below the leader's log start to fetch:
    it starts its log there (Kafka's truncate-fully-and-start-at) and joins the ISR."""
    topic = topic_on(own, (1,))
    assert delivered(own, topic, [b"n" * 10] * 10)
    client = admin_client(own)  # kept: a client collected mid-request fails it
    [deleted] = client.delete_records([TopicPartition(topic, 0, 6)]).values()
    assert deleted.result(timeout=30).low_watermark == 6
    kp = KafkaAdminClient(bootstrap_servers=own.bootstrap)
    try:
        kp.alter_partition_reassignments({KafkaTP(topic, 0): [1, 2]})
    finally:
        kp.close()
    wait_until(lambda: own.partition_state(topic, 0).isr == (1, 2), "broker 2 joins the ISR")
    assert watermarks(own, topic) == (6, 10)
