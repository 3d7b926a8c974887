"""A topic is writable and readable through REST the moment its creation returns.

Creation goes every way a user has: straight to ZooKeeper (what ``pafka topics create`` does
against the local cluster, answered before any broker has heard of the topic), through one
gateway's v3 API, and through a Kafka client's CreateTopics; the first produce and read then go
through the other gateway, whose metadata has not seen the topic either. A topic that does not
exist is still refused with 404 at once, not after a wait.
"""

from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from kazoo.client import KazooClient

from pafka.admin import topics as admin

V2_JSON = "application/vnd.kafka.json.v2+json"
ROUNDS = 200
AT_ONCE = 8
# The gateways' default wait for a topic ZooKeeper knows (PAFKA_GATEWAY_METADATA_WAIT_MS)
# plus the request timeout: longer than any answer may take, so a hang fails the test.
CLIENT_TIMEOUT_S = 60.0
# Deleting the 200 topics of the concurrent rounds (three replicas each) on a busy machine.
DELETIONS_S = 180.0


def _post(url: str, body: bytes) -> httpx.Response:
    headers = {"Content-Type": V2_JSON}
    return httpx.post(url, content=body, headers=headers, timeout=CLIENT_TIMEOUT_S)


def _read(base: str, topic: str, partition: int, offset: int = 0) -> httpx.Response:
    return httpx.get(
        f"{base}/topics/{topic}/partitions/{partition}/records",
        params={"offset": offset},
        headers={"Accept": V2_JSON},
        timeout=CLIENT_TIMEOUT_S,
    )


def _cluster_id(base: str) -> str:
    listed = httpx.get(f"{base}/v3/clusters", timeout=CLIENT_TIMEOUT_S)
    assert listed.status_code == 200, listed.text
    return str(listed.json()["data"][0]["cluster_id"])


def _create(how: str, name: str, zk: KazooClient, bootstrap: str, gateway: str, cid: str) -> None:
    if how == "zookeeper":
        admin.create_topic(zk, name, 1, 3, {})
    elif how == "v3":
        created = httpx.post(
            f"{gateway}/v3/clusters/{cid}/topics",
            json={"topic_name": name, "partitions_count": 1, "replication_factor": 3},
            timeout=CLIENT_TIMEOUT_S,
        )
        assert created.status_code == 201, created.text
    else:
        from kafka.admin import KafkaAdminClient, NewTopic

        client = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            client.create_topics([NewTopic(name, 1, 3)], timeout_ms=30_000)
        finally:
            client.close()


def _round(i: int, cluster: Any, cid: str) -> str:
    """Create a topic one way, then at once produce through a gateway and read it back through
    the other."""
    how = ("zookeeper", "v3", "kafka")[i % 3]
    gateways = cluster.gateways
    creator, writer = gateways[i % 2], gateways[(i + 1) % 2]
    name = f"fresh-{how}-{uuid.uuid4().hex[:8]}"
    _create(how, name, cluster.zk, cluster.bootstrap, creator, cid)
    value = {"round": i}
    produced = _post(
        f"{writer}/topics/{name}", json.dumps({"records": [{"value": value}]}).encode()
    )
    assert produced.status_code == 200, f"{how} round {i}: {produced.status_code} {produced.text}"
    assert produced.json()["offsets"][0]["offset"] == 0
    read = _read(creator, name, 0)
    assert read.status_code == 200, f"{how} round {i}: {read.status_code} {read.text}"
    assert [r["value"] for r in read.json()["records"]] == [value]
    return name


def test_created_topics_are_written_and_read_at_once(cluster: Any) -> None:
    cid = _cluster_id(cluster.gateways[0])
    with ThreadPoolExecutor(AT_ONCE) as pool:
        names = list(pool.map(lambda i: _round(i, cluster, cid), range(ROUNDS)))
    assert len(set(names)) == ROUNDS
    # The shared cluster should not carry 200 more topics into later tests, nor a controller
    # still deleting them while they create topics of their own.
    for name in names:
        admin.delete_topic(cluster.zk, name)
    deadline = time.monotonic() + DELETIONS_S
    while set(names) & set(admin.list_topics(cluster.zk)):
        assert time.monotonic() < deadline, "the round's topics still not deleted"
        time.sleep(0.2)


def test_kafka_client_produces_right_after_a_zookeeper_create(cluster: Any) -> None:
    from kafka import KafkaProducer

    name = f"fresh-kp-{uuid.uuid4().hex[:8]}"
    admin.create_topic(cluster.zk, name, 3, 3, {})
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", retries=5)
    try:
        sent = producer.send(name, b"first", partition=2).get(timeout=30)
    finally:
        producer.close()
    read = httpx.get(
        f"{cluster.gateways[1]}/topics/{name}/partitions/2/records",
        params={"offset": sent.offset},
        headers={"Accept": "application/vnd.kafka.binary.v2+json"},
        timeout=CLIENT_TIMEOUT_S,
    )
    assert read.status_code == 200, read.text
    assert [r["offset"] for r in read.json()["records"]] == [sent.offset]


@pytest.mark.parametrize("method", ["post", "get"])
def test_a_missing_topic_is_404(cluster: Any, method: str) -> None:
    name = f"never-{uuid.uuid4().hex[:8]}"
    base = cluster.gateways[0]
    if method == "post":
        response = _post(f"{base}/topics/{name}", b'{"records":[{"value":1}]}')
    else:
        response = _read(base, name, 0)
    assert response.status_code == 404, response.text
    assert response.json()["error_code"] == 40401


def test_create_topics_with_timeout_zero_answers_at_once(cluster: Any) -> None:
    """Kafka's CreateTopics with timeout 0 does not wait for the controller (and reports no
    error); the topic is then written through REST at once all the same."""
    from kafka.protocol.admin import CreateTopicsRequest, CreateTopicsResponse

    from tests.integration.wire import request_once

    name = f"fresh-t0-{uuid.uuid4().hex[:8]}"
    request = CreateTopicsRequest[4]
    topic = request.CreatableTopic(
        name=name, num_partitions=2, replication_factor=3, assignments=[], configs=[]
    )
    broker = cluster.broker_address(cluster.broker_ids()[-1])
    response = request_once(
        broker,
        request(topics=[topic], timeout_ms=0, validate_only=False),
        CreateTopicsResponse,
        4,
    )
    assert [(t.name, t.error_code) for t in response.topics] == [(name, 0)]
    produced = _post(
        f"{cluster.gateways[0]}/topics/{name}/partitions/1", b'{"records":[{"value":"at once"}]}'
    )
    assert produced.status_code == 200, produced.text


def test_a_new_topic_is_read_at_once_before_any_write(cluster: Any) -> None:
    """Reads wait for a new topic as writes do: its offsets and an empty read, not 404."""
    for n in range(10):
        name = f"fresh-read-{uuid.uuid4().hex[:8]}"
        admin.create_topic(cluster.zk, name, 2, 3, {})
        base = cluster.gateways[n % 2]
        offsets = httpx.get(f"{base}/topics/{name}/partitions/1/offsets", timeout=CLIENT_TIMEOUT_S)
        assert offsets.status_code == 200, offsets.text
        assert offsets.json() == {"beginning_offset": 0, "end_offset": 0}
        read = _read(base, name, 0)
        assert read.status_code == 200, read.text
        assert read.json()["records"] == []
