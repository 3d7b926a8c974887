"""Old versions of the admin and offset APIs, sent as pre-KIP-896 clients send them.

Requests are encoded and responses decoded by kafka-python's hand-written classes of those
versions (``kafka/protocol/old``), independent of pafka's codec.
"""

from __future__ import annotations

import socket
import struct
import time
import uuid
from typing import Any

from kafka import KafkaProducer
from kafka.protocol.admin import DeleteTopicsRequest, DeleteTopicsResponse
from kafka.protocol.old import admin as old_admin
from kafka.protocol.old import list_offsets as old_list_offsets
from kafka.protocol.old import offset_for_leader_epoch as old_epoch
from kafka.protocol.old.api_versions import ApiVersionsRequest_v0, ApiVersionsResponse_v0

from pafka.protocol.versions import ApiKey
from pafka.zk.znodes import TopicZNode
from tests.integration.conftest import own_cluster
from tests.integration.wire import read_exact, request_once

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
TOPIC_ALREADY_EXISTS = 36
INVALID_REPLICATION_FACTOR = 38
INVALID_REQUEST = 42
TOPIC_DELETION_DISABLED = 73
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4


def _call(address: tuple[str, int], request: Any, response_cls: Any) -> Any:
    request.with_header(correlation_id=42, client_id="old-client")
    with socket.create_connection(address, timeout=60) as sock:
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        (size,) = struct.unpack(">i", read_exact(sock, 4))
        response = response_cls.decode(read_exact(sock, size), header=True)
    assert response.header.correlation_id == 42
    return response


def _topic(cluster, prefix: str, replication_factor: int = 2, **config: str) -> str:  # type: ignore[no-untyped-def]
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=1, replication_factor=replication_factor, config=config)
    return name


def _produce(cluster, topic: str, count: int) -> None:  # type: ignore[no-untyped-def]
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", linger_ms=0)
    for i in range(count):
        producer.send(topic, value=b"v%d" % i).get(30)
    producer.close()


def test_api_versions_advertise_the_old_versions(cluster) -> None:  # type: ignore[no-untyped-def]
    address = cluster.broker_address(cluster.broker_ids()[0])
    response = _call(address, ApiVersionsRequest_v0(), ApiVersionsResponse_v0)
    ranges = {key: (low, high) for key, low, high in response.api_keys}
    for key in (
        ApiKey.LIST_OFFSETS,
        ApiKey.CREATE_TOPICS,
        ApiKey.DELETE_TOPICS,
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        ApiKey.DESCRIBE_CONFIGS,
    ):
        assert ranges[int(key)][0] == 0


def test_list_offsets_v0_answers_segment_offsets_before_a_time(cluster) -> None:  # type: ignore[no-untyped-def]
    topic = _topic(cluster, "offsets-v0")
    before_ms = int(time.time() * 1000) - 60_000
    _produce(cluster, topic, 5)
    leader = cluster.leader_address(topic, 0)

    def ask(timestamp: int, count: int, partition: int = 0) -> tuple[int, list[int]]:
        cls = old_list_offsets.ListOffsetsRequest_v0
        request = cls(-1, [(topic, [(partition, timestamp, count)])])
        response = _call(leader, request, old_list_offsets.ListOffsetsResponse_v0)
        ((name, parts),) = response.topics
        ((index, error, offsets),) = parts
        assert (name, index) == (topic, partition)
        return error, list(offsets)

    # One segment holding data: its start (0) and the log end (5, stamped now).
    assert ask(-1, 1) == (NONE, [5])
    assert ask(-1, 10) == (NONE, [5, 0])
    assert ask(-2, 10) == (NONE, [0])
    assert ask(int(time.time() * 1000) + 3_600_000, 10) == (NONE, [5, 0])
    assert ask(before_ms, 10) == (NONE, [])
    assert ask(-1, 1, partition=7) == (UNKNOWN_TOPIC_OR_PARTITION, [])


def test_describe_configs_v0_marks_defaults(cluster) -> None:  # type: ignore[no-untyped-def]
    topic = _topic(cluster, "configs-v0", **{"retention.ms": "123456"})
    broker_id = cluster.broker_ids()[0]
    request = old_admin.DescribeConfigsRequest_v0(
        [(TOPIC_RESOURCE, topic, None), (BROKER_RESOURCE, str(broker_id), ["log.dirs"])]
    )
    response = _call(
        cluster.broker_address(broker_id), request, old_admin.DescribeConfigsResponse_v0
    )
    topic_result, broker_result = response.results
    assert topic_result[0] == NONE and topic_result[3] == topic
    configs = {c[0]: c for c in topic_result[4]}
    # (name, value, read_only, is_default, is_sensitive)
    assert configs["retention.ms"][1:4] == ("123456", False, False)
    assert configs["cleanup.policy"][1] == "delete"
    assert configs["cleanup.policy"][3] is True
    assert broker_result[0] == NONE
    assert [c[0] for c in broker_result[4]] == ["log.dirs"]


def test_create_topics_v0_and_v1_validate_only(cluster) -> None:  # type: ignore[no-untyped-def]
    address = cluster.broker_address(cluster.broker_ids()[0])
    name = f"create-v0-{uuid.uuid4().hex[:8]}"
    v0 = old_admin.CreateTopicsRequest_v0([(name, 2, 1, [], [("retention.ms", "60000")])], 30_000)
    response = _call(address, v0, old_admin.CreateTopicsResponse_v0)
    assert list(response.topics) == [(name, NONE)]
    cluster.wait_for_leaders(name, 2)
    again = _call(address, v0, old_admin.CreateTopicsResponse_v0)
    assert list(again.topics) == [(name, TOPIC_ALREADY_EXISTS)]

    checked = f"create-v1-{uuid.uuid4().hex[:8]}"
    v1 = old_admin.CreateTopicsRequest_v1([(checked, 1, 1, [], [])], 30_000, True)
    response = _call(address, v1, old_admin.CreateTopicsResponse_v1)
    assert list(response.topics) == [(checked, NONE, None)]
    assert cluster.zk.exists(TopicZNode.path(checked)) is None
    too_many = old_admin.CreateTopicsRequest_v1([(checked, 1, 9, [], [])], 30_000, False)
    ((_, error, message),) = _call(address, too_many, old_admin.CreateTopicsResponse_v1).topics
    assert error == INVALID_REPLICATION_FACTOR and message


def test_create_topics_refuses_a_name_given_twice(cluster) -> None:  # type: ignore[no-untyped-def]
    address = cluster.broker_address(cluster.broker_ids()[0])
    twice = f"twice-{uuid.uuid4().hex[:8]}"
    once = f"once-{uuid.uuid4().hex[:8]}"
    topics = [(twice, 1, 1, [], []), (once, 1, 1, [], []), (twice, 2, 1, [], [])]
    request = old_admin.CreateTopicsRequest_v0(topics, 30_000)
    response = _call(address, request, old_admin.CreateTopicsResponse_v0)
    assert list(response.topics) == [
        (twice, INVALID_REQUEST),
        (once, NONE),
        (twice, INVALID_REQUEST),
    ]
    assert cluster.zk.exists(TopicZNode.path(twice)) is None


def test_delete_topics_v0(cluster) -> None:  # type: ignore[no-untyped-def]
    topic = _topic(cluster, "delete-v0")
    address = cluster.broker_address(cluster.broker_ids()[0])
    request = old_admin.DeleteTopicsRequest_v0([topic], 30_000)
    response = _call(address, request, old_admin.DeleteTopicsResponse_v0)
    assert list(response.responses) == [(topic, NONE)]
    assert cluster.zk.exists(TopicZNode.path(topic)) is None


def test_delete_topics_before_v3_when_deletion_is_disabled(tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    env = {"PAFKA_BROKER_DELETE_TOPIC_ENABLE": "false"}
    with own_cluster(tmp_path_factory, "no-delete", brokers=1, controllers=1, broker_env=env) as c:
        topic = _topic(c, "kept", replication_factor=1)
        address = c.broker_address(c.broker_ids()[0])
        v0 = old_admin.DeleteTopicsRequest_v0([topic], 30_000)
        # TOPIC_DELETION_DISABLED came with v3; Kafka answers older versions INVALID_REQUEST.
        response = _call(address, v0, old_admin.DeleteTopicsResponse_v0)
        assert list(response.responses) == [(topic, INVALID_REQUEST)]
        v3 = DeleteTopicsRequest[3](topic_names=[topic], timeout_ms=30_000)
        answer = request_once(address, v3, DeleteTopicsResponse, 3)
        assert [(r.name, r.error_code) for r in answer.responses] == [
            (topic, TOPIC_DELETION_DISABLED)
        ]
        assert c.zk.exists(TopicZNode.path(topic)) is not None


def test_offset_for_leader_epoch_v0_and_v1(cluster) -> None:  # type: ignore[no-untyped-def]
    topic = _topic(cluster, "epochs-v0")
    _produce(cluster, topic, 3)
    epoch = cluster.partition_state(topic, 0).leader_epoch
    leader = cluster.leader_address(topic, 0)
    request = old_epoch.OffsetForLeaderEpochRequest_v0([(topic, [(0, epoch)])])
    v0 = _call(leader, request, old_epoch.OffsetForLeaderEpochResponse_v0)
    # v0 answers (error, partition, end offset): no leader epoch.
    assert [(t, list(p)) for t, p in v0.topics] == [(topic, [(NONE, 0, 3)])]
    request = old_epoch.OffsetForLeaderEpochRequest_v1([(topic, [(0, epoch)])])
    v1 = _call(leader, request, old_epoch.OffsetForLeaderEpochResponse_v1)
    assert [(t, list(p)) for t, p in v1.topics] == [(topic, [(NONE, 0, epoch, 3)])]
