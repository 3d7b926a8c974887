"""The v3 admin API through both gateways: clusters, topics, partitions, groups and lags.

Topics created through one gateway are seen, grown and deleted through the other; a group is a
real kafka-python consumer that commits, and its lags must match what it committed and what
was produced.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def gateways(cluster) -> Iterator[list[httpx.Client]]:  # type: ignore[no-untyped-def]
    clients = [httpx.Client(base_url=url, timeout=TIMEOUT_S) for url in cluster.gateways]
    yield clients
    for client in clients:
        client.close()


@pytest.fixture(scope="module")
def cluster_id(gateways: list[httpx.Client]) -> str:
    listed = gateways[0].get("/v3/clusters")
    assert listed.status_code == 200, listed.text
    return str(listed.json()["data"][0]["cluster_id"])


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_for(check: Callable[[], Any], timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.2)


def test_one_cluster_seen_alike_by_both_gateways(
    gateways: list[httpx.Client], cluster_id: str
) -> None:
    for gw in gateways:
        listed = gw.get("/v3/clusters").json()
        assert listed["kind"] == "KafkaClusterList"
        assert [c["cluster_id"] for c in listed["data"]] == [cluster_id]
        one = gw.get(f"/v3/clusters/{cluster_id}")
        assert one.status_code == 200
        body = one.json()
        assert body["kind"] == "KafkaCluster"
        root = str(gw.base_url).rstrip("/")
        assert body["metadata"]["self"] == f"{root}/v3/clusters/{cluster_id}"
        assert body["topics"]["related"].endswith(f"/v3/clusters/{cluster_id}/topics")
        assert body["controller"]["related"].rsplit("/", 1)[1].isdigit()
        brokers = gw.get(f"/v3/clusters/{cluster_id}/brokers").json()["data"]
        assert len(brokers) == 3
        assert gw.get(f"/v3/clusters/{cluster_id}/brokers/{brokers[0]['broker_id']}").is_success
        other = gw.get("/v3/clusters/not-this-one/topics")
        assert other.status_code == 404
        assert other.json()["error_code"] == 40400


def test_topic_created_on_one_gateway_is_grown_and_deleted_on_the_other(
    cluster, gateways: list[httpx.Client], cluster_id: str
) -> None:  # type: ignore[no-untyped-def]
    a, b = gateways
    topic = name("v3-topic")
    base = f"/v3/clusters/{cluster_id}/topics"
    created = a.post(
        base,
        json={
            "topic_name": topic,
            "partitions_count": 3,
            "replication_factor": 2,
            "configs": [{"name": "retention.ms", "value": "3600000"}],
        },
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert (body["kind"], body["topic_name"]) == ("KafkaTopic", topic)
    assert (body["partitions_count"], body["replication_factor"]) == (3, 2)
    assert created.headers["location"] == body["metadata"]["self"]

    assert topic in [t["topic_name"] for t in b.get(base).json()["data"]]
    assert b.get(f"{base}/{topic}").json()["partitions_count"] == 3
    configs = {c["name"]: c for c in b.get(f"{base}/{topic}/configs").json()["data"]}
    assert configs["retention.ms"]["value"] == "3600000"
    assert configs["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["cleanup.policy"]["source"] != "DYNAMIC_TOPIC_CONFIG"

    partitions = b.get(f"{base}/{topic}/partitions").json()["data"]
    assert [p["partition_id"] for p in partitions] == [0, 1, 2]
    for p in partitions:
        state = cluster.partition_state(topic, p["partition_id"])
        assert p["leader_id"] == state.leader
        assert sorted(p["isr_ids"]) == sorted(state.isr)
        assert len(p["replica_ids"]) == 2
        assert p["leader"]["related"].endswith(f"/replicas/{state.leader}")
    one = a.get(f"{base}/{topic}/partitions/1").json()
    assert one["kind"] == "KafkaPartition" and one["partition_id"] == 1
    replicas = a.get(f"{base}/{topic}/partitions/1/replicas").json()["data"]
    assert sum(r["is_leader"] for r in replicas) == 1
    assert all(r["is_in_sync"] for r in replicas) or len(replicas) == 2
    assert a.get(f"{base}/{topic}/partitions/7").status_code == 404

    grown = b.patch(f"{base}/{topic}", json={"partitions_count": 5})
    assert grown.status_code == 200, grown.text
    assert grown.json()["partitions_count"] == 5
    assert len(a.get(f"{base}/{topic}/partitions").json()["data"]) == 5

    deleted = b.delete(f"{base}/{topic}")
    assert deleted.status_code == 204, deleted.text
    gone = a.get(f"{base}/{topic}")
    assert gone.status_code == 404
    assert gone.json()["error_code"] == 40401
    assert topic not in [t["topic_name"] for t in a.get(base).json()["data"]]


def test_refused_topic_creations(gateways: list[httpx.Client], cluster_id: str) -> None:
    a, b = gateways
    base = f"/v3/clusters/{cluster_id}/topics"
    bad = a.post(base, json={"topic_name": "no spaces allowed", "partitions_count": 1})
    assert bad.status_code == 400, bad.text
    assert "illegal" in bad.json()["message"]
    too_many = a.post(
        base, json={"topic_name": name("rf"), "partitions_count": 1, "replication_factor": 9}
    )
    assert too_many.status_code == 400, too_many.text
    malformed = a.post(base, json={"partitions_count": 1})
    assert malformed.status_code == 422

    topic = name("twice")
    assert a.post(base, json={"topic_name": topic, "partitions_count": 1}).status_code == 201
    again = b.post(base, json={"topic_name": topic, "partitions_count": 1})
    assert again.status_code == 409, again.text
    assert again.json()["error_code"] // 100 == 409
    assert b.delete(f"{base}/{name('never')}").status_code == 404


def test_groups_and_lags_of_a_committing_consumer(
    cluster, gateways: list[httpx.Client], cluster_id: str
) -> None:  # type: ignore[no-untyped-def]
    from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition

    topic, group = name("lag-topic"), name("lag-group")
    cluster.create_topic(topic, partitions=2, replication_factor=2)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    for i in range(10):
        producer.send(topic, value=b"v%d" % i, partition=i % 2)  # 5 per partition
    producer.flush()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=cluster.bootstrap,
        group_id=group,
        client_id="lag-reader",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    base = f"/v3/clusters/{cluster_id}/consumer-groups"
    try:
        read = 0
        deadline = time.monotonic() + TIMEOUT_S
        while read < 10 and time.monotonic() < deadline:
            read += sum(len(r) for r in consumer.poll(timeout_ms=500).values())
        assert read == 10
        # Commit 3 of partition 0 and all 5 of partition 1, then produce 4 more to each.
        consumer.commit(
            {
                TopicPartition(topic, 0): OffsetAndMetadata(3, "", -1),
                TopicPartition(topic, 1): OffsetAndMetadata(5, "", -1),
            }
        )
        for i in range(8):
            producer.send(topic, value=b"w%d" % i, partition=i % 2)
        producer.flush()

        for gw in gateways:
            listed = wait_for(
                lambda gw=gw: [
                    g for g in gw.get(base).json()["data"] if g["consumer_group_id"] == group
                ]
            )
            assert listed and listed[0]["state"] == "STABLE"
            described = gw.get(f"{base}/{group}").json()
            assert described["kind"] == "KafkaConsumerGroup"
            assert (described["is_simple"], described["partition_assignor"]) == (False, "range")
            consumers = gw.get(f"{base}/{group}/consumers").json()["data"]
            assert [c["client_id"] for c in consumers] == ["lag-reader"]
            member = consumers[0]["consumer_id"]
            assignments = gw.get(f"{base}/{group}/consumers/{member}/assignments").json()["data"]
            assert sorted(x["partition_id"] for x in assignments) == [0, 1]

            lags = {x["partition_id"]: x for x in gw.get(f"{base}/{group}/lags").json()["data"]}
            assert {
                p: (x["current_offset"], x["log_end_offset"], x["lag"]) for p, x in lags.items()
            } == {
                0: (3, 9, 6),
                1: (5, 9, 4),
            }
            assert {x["consumer_id"] for x in lags.values()} == {member}
            one = gw.get(f"{base}/{group}/lags/{topic}/partitions/0").json()
            assert one["lag"] == 6
            summary = gw.get(f"{base}/{group}/lag-summary").json()
            assert (summary["total_lag"], summary["max_lag"]) == (10, 6)
            assert (summary["max_lag_topic_name"], summary["max_lag_partition_id"]) == (topic, 0)
            assert summary["max_lag_consumer_id"] == member
    finally:
        consumer.close()
        producer.close()

    # Without members the group keeps its offsets; nobody owns the partitions.
    emptied = wait_for(
        lambda: gateways[1].get(f"{base}/{group}").json()["state"] == "EMPTY", TIMEOUT_S
    )
    assert emptied
    lags = gateways[0].get(f"{base}/{group}/lags").json()["data"]
    assert [(x["partition_id"], x["lag"], x["consumer_id"]) for x in lags] == [
        (0, 6, None),
        (1, 4, None),
    ]
    assert gateways[0].get(f"{base}/{group}/consumers").json()["data"] == []
    unknown = gateways[1].get(f"{base}/{name('no-such-group')}")
    assert unknown.status_code == 404, unknown.text
