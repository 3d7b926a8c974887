"""REST Proxy v2 consumer instances across gateway replicas.

An instance created through one gateway is subscribed, read and committed through the other
(its committed offsets are the group's, as kafka-python sees them); manual assignment with
seeks; the two embedded formats and the 406 for a mismatched Accept; unknown and duplicate
instances; and expiry of idle instances, on a gateway of the test's own (in-process, with a
one-second instance timeout) over the shared cluster.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from pafka.zk.znodes import GatewayZNodes

V2 = "application/vnd.kafka.v2+json"
JSON = "application/vnd.kafka.json.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def gateways(cluster) -> Iterator[list[httpx.Client]]:  # type: ignore[no-untyped-def]
    clients = [
        httpx.Client(base_url=url, timeout=TIMEOUT_S, headers={"Content-Type": V2})
        for url in cluster.gateways
    ]
    yield clients
    for client in clients:
        client.close()


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def produce(
    cluster: Any, topic: str, values: list[bytes], partition: int, key: bytes | None = None
) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    try:
        for value in values:
            producer.send(topic, value=value, key=key, partition=partition)
        producer.flush()
    finally:
        producer.close()


def create(gw: httpx.Client, group: str, **config: Any) -> str:
    created = gw.post(f"/consumers/{group}", json=config)
    assert created.status_code == 200, created.text
    body = created.json()
    assert body["base_uri"].endswith(f"/consumers/{group}/instances/{body['instance_id']}")
    return f"/consumers/{group}/instances/{body['instance_id']}"


def read(gw: httpx.Client, path: str, accept: str = JSON, timeout_ms: int = 1000) -> Any:
    got = gw.get(f"{path}/records", params={"timeout": timeout_ms}, headers={"Accept": accept})
    assert got.status_code == 200, got.text
    assert got.headers["content-type"].startswith(accept)
    return got.json()


def read_until(
    gws: list[httpx.Client], path: str, count: int, accept: str = JSON
) -> list[dict[str, Any]]:
    """Read, alternating gateways, until ``count`` records came (and then once more: nothing)."""
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + TIMEOUT_S
    turn = 0
    while len(found) < count and time.monotonic() < deadline:
        found.extend(read(gws[turn % len(gws)], path, accept))
        turn += 1
    assert len(found) == count, found
    assert read(gws[turn % len(gws)], path, accept, timeout_ms=200) == []
    return found


def test_instance_from_one_gateway_subscribes_reads_and_commits_through_the_other(
    cluster, gateways: list[httpx.Client]
) -> None:  # type: ignore[no-untyped-def]
    from kafka import KafkaConsumer, TopicPartition

    a, b = gateways
    topic, group = name("rest-sub"), name("rest-group")
    cluster.create_topic(topic, partitions=3, replication_factor=2)
    for p in range(3):
        produce(cluster, topic, [json.dumps({"p": p, "i": i}).encode() for i in range(4)], p)

    path = create(
        a,
        group,
        name="reader",
        format="json",
        **{"auto.offset.reset": "earliest", "auto.commit.enable": "false"},
    )
    assert b.post(f"{path}/subscription", json={"topics": [topic]}).status_code == 204
    assert a.get(f"{path}/subscription").json() == {"topics": [topic]}

    records = read_until([b, a], path, 12)
    assert sorted((r["value"]["p"], r["value"]["i"]) for r in records) == [
        (p, i) for p in range(3) for i in range(4)
    ]
    assert all(r["topic"] == topic and r["value"]["p"] == r["partition"] for r in records)
    assigned = a.get(f"{path}/assignments").json()["partitions"]
    assert sorted(x["partition"] for x in assigned) == [0, 1, 2]

    # The instance is a real member: the group shows it, with the range assignor.
    cid = a.get("/v3/clusters").json()["data"][0]["cluster_id"]
    described = b.get(f"/v3/clusters/{cid}/consumer-groups/{group}").json()
    assert (described["state"], described["partition_assignor"]) == ("STABLE", "range")

    committed = b.post(f"{path}/offsets")  # no body: every position
    assert committed.status_code == 200, committed.text
    offsets = a.get(f"{path}/offsets").json()["offsets"]
    assert sorted((o["partition"], o["offset"]) for o in offsets) == [(0, 4), (1, 4), (2, 4)]
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=group)
    try:
        for p in range(3):
            assert consumer.committed(TopicPartition(topic, p)) == 4
    finally:
        consumer.close()

    # An explicit commit through the other gateway.
    explicit = {"offsets": [{"topic": topic, "partition": 1, "offset": 2}]}
    assert a.post(f"{path}/offsets", json=explicit).status_code == 200
    asked = b.request(
        "GET", f"{path}/offsets", json={"partitions": [{"topic": topic, "partition": 1}]}
    ).json()
    assert asked == {"offsets": [{"topic": topic, "partition": 1, "offset": 2, "metadata": ""}]}

    assert b.delete(path).status_code == 204
    gone = a.get(f"{path}/records", headers={"Accept": JSON})
    assert (gone.status_code, gone.json()["error_code"]) == (404, 40403)
    assert cluster.zk.exists(GatewayZNodes.consumer_instance_path(group, "reader")) is None
    members = a.get(f"/v3/clusters/{cid}/consumer-groups/{group}/consumers").json()["data"]
    assert members == []


def test_manual_assignment_seeks_and_reads(cluster, gateways: list[httpx.Client]) -> None:  # type: ignore[no-untyped-def]
    a, b = gateways
    topic, group = name("rest-manual"), name("rest-manual-group")
    cluster.create_topic(topic, partitions=2, replication_factor=2)
    produce(cluster, topic, [b"zero-%d" % i for i in range(10)], 0)
    produce(cluster, topic, [b"one"], 1)

    path = create(a, group, format="binary", **{"auto.commit.enable": False})
    p0 = {"topic": topic, "partition": 0}
    assert b.post(f"{path}/assignments", json={"partitions": [p0]}).status_code == 204
    assert a.get(f"{path}/assignments").json() == {"partitions": [p0]}
    # auto.offset.reset defaults to latest: nothing to read yet.
    assert read(a, path, BINARY, timeout_ms=0) == []

    assert b.post(f"{path}/positions/beginning", json={"partitions": [p0]}).status_code == 204
    values = [base64.b64decode(r["value"]) for r in read_until([a, b], path, 10, BINARY)]
    assert values == [b"zero-%d" % i for i in range(10)]

    assert a.post(f"{path}/positions", json={"offsets": [{**p0, "offset": 7}]}).status_code == 204
    assert [r["offset"] for r in read(b, path, BINARY)] == [7, 8, 9]

    assert b.post(f"{path}/positions/end", json={"partitions": [p0]}).status_code == 204
    produce(cluster, topic, [b"late"], 0)
    assert [base64.b64decode(r["value"]) for r in read(a, path, BINARY, 5000)] == [b"late"]

    # Exclusive modes, and partitions that are not assigned.
    refused = a.post(f"{path}/subscription", json={"topics": [topic]})
    assert (refused.status_code, refused.json()["error_code"]) == (409, 40903)
    unassigned = b.post(
        f"{path}/positions", json={"offsets": [{"topic": topic, "partition": 1, "offset": 0}]}
    )
    assert (unassigned.status_code, unassigned.json()["error_code"]) == (409, 40902)

    # A simple consumer's commit: accepted while the group has no members.
    assert b.post(f"{path}/offsets").status_code == 200
    assert a.get(f"{path}/offsets").json()["offsets"] == [{**p0, "offset": 11, "metadata": ""}]
    assert a.delete(path).status_code == 204


def test_concurrent_requests_through_both_gateways_lose_no_update(
    cluster, gateways: list[httpx.Client]
) -> None:  # type: ignore[no-untyped-def]
    from concurrent.futures import ThreadPoolExecutor

    from services.gateway.consumer_instances import InstanceState

    topic, group = name("rest-race"), name("rest-race-group")
    cluster.create_topic(topic, partitions=8, replication_factor=1)
    produce(cluster, topic, [b"%d" % i for i in range(60)], 0)
    path = create(gateways[0], group, name="racer", format="binary")
    every = [{"topic": topic, "partition": p} for p in range(8)]
    assert gateways[1].post(f"{path}/assignments", json={"partitions": every}).status_code == 204

    def seek(p: int) -> int:
        body = {"offsets": [{"topic": topic, "partition": p, "offset": 100 + p}]}
        return gateways[p % 2].post(f"{path}/positions", json=body).status_code

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(seek, range(1, 8))) == [204] * 7
    data, _ = cluster.zk.get(GatewayZNodes.consumer_instance_path(group, "racer"))
    positions = InstanceState.decode(group, "racer", data).positions
    assert {p: positions[(topic, p)] for p in range(1, 8)} == {p: 100 + p for p in range(1, 8)}

    # Reads racing through both gateways never hand out a record twice.
    beginning = {"partitions": [{"topic": topic, "partition": 0}]}
    assert gateways[0].post(f"{path}/positions/beginning", json=beginning).status_code == 204

    def drain(gw: httpx.Client) -> list[int]:
        seen: list[int] = []
        for _ in range(40):
            got = gw.get(
                f"{path}/records",
                params={"timeout": 0, "max_bytes": 8},
                headers={"Accept": BINARY},
            )
            assert got.status_code == 200, got.text
            seen.extend(r["offset"] for r in got.json())
        return seen

    with ThreadPoolExecutor(4) as pool:
        read_by = list(pool.map(drain, gateways * 2))
    offsets = [o for seen in read_by for o in seen]
    assert len(offsets) == len(set(offsets))
    assert sorted(offsets) == list(range(60))
    assert gateways[1].delete(path).status_code == 204


def test_formats_and_a_mismatched_accept(cluster, gateways: list[httpx.Client]) -> None:  # type: ignore[no-untyped-def]
    a, b = gateways
    topic, group = name("rest-formats"), name("rest-formats-group")
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    produce(cluster, topic, [b'{"n": 1}', b"[2, 3]"], 0, key=b'"k"')
    config = {"auto.offset.reset": "earliest"}
    as_json = create(a, group, format="json", **config)
    as_binary = create(b, name("other-group"), format="binary", **config)
    for path in (as_json, as_binary):
        assert a.post(f"{path}/subscription", json={"topics": [topic]}).status_code == 204

    wrong = b.get(f"{as_json}/records", headers={"Accept": BINARY})
    assert (wrong.status_code, wrong.json()["error_code"]) == (406, 40601)
    wrong = a.get(f"{as_binary}/records", headers={"Accept": JSON})
    assert (wrong.status_code, wrong.json()["error_code"]) == (406, 40601)

    shown = read_until([b], as_json, 2, JSON)
    assert [(r["key"], r["value"]) for r in shown] == [("k", {"n": 1}), ("k", [2, 3])]
    shown = read_until([a], as_binary, 2, BINARY)
    assert [base64.b64decode(r["value"]) for r in shown] == [b'{"n": 1}', b"[2, 3]"]
    assert [base64.b64decode(r["key"]) for r in shown] == [b'"k"', b'"k"']
    for path in (as_json, as_binary):
        assert b.delete(path).status_code == 204


def test_unknown_and_duplicate_instances(gateways: list[httpx.Client]) -> None:
    a, b = gateways
    group = name("rest-unknown")
    path = f"/consumers/{group}/instances/nobody"
    for method, url in (
        ("GET", f"{path}/records"),
        ("POST", f"{path}/offsets"),
        ("GET", f"{path}/subscription"),
        ("DELETE", path),
    ):
        got = a.request(method, url)
        assert (got.status_code, got.json()["error_code"]) == (404, 40403), (method, url)

    create(a, group, name="twice")
    again = b.post(f"/consumers/{group}", json={"name": "twice"})
    assert (again.status_code, again.json()["error_code"]) == (409, 40901)
    bad = b.post(f"/consumers/{group}", json={"format": "avro"})
    assert (bad.status_code, bad.json()["error_code"]) == (422, 42204)
    assert a.delete(f"/consumers/{group}/instances/twice").status_code == 204


def test_idle_instances_expire_and_leave_their_group(cluster) -> None:  # type: ignore[no-untyped-def]
    from services.gateway.app import create_app
    from services.gateway.context import open_context
    from services.gateway.settings import GatewaySettings

    topic, group = name("rest-expiry"), name("rest-expiry-group")
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    settings = GatewaySettings(
        zookeeper=cluster.zk_connect, consumer_instance_timeout_ms=1000, max_poll_ms=5000
    )

    async def scenario() -> None:
        ctx = await open_context(settings)
        transport = httpx.ASGITransport(app=create_app(settings, ctx))
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://gw") as gw:
                member = (await gw.post(f"/consumers/{group}", json={"name": "member"})).json()
                idle = (await gw.post(f"/consumers/{group}", json={"name": "idle"})).json()
                assert member["instance_id"] == "member" and idle["instance_id"] == "idle"
                path = f"/consumers/{group}/instances/member"
                await gw.post(f"{path}/subscription", json={"topics": [topic]})
                got = await gw.get(f"{path}/records", params={"timeout": 0})
                assert got.status_code == 200, got.text

                # Touched more often than the timeout, an instance lives on.
                for _ in range(5):
                    await asyncio.sleep(0.4)
                    assert (await gw.get(f"{path}/subscription")).status_code == 200
                # The sweep removes the idle one without anyone asking for it.
                idle_path = GatewayZNodes.consumer_instance_path(group, "idle")
                assert cluster.zk.exists(idle_path) is None

                await asyncio.sleep(2.0)
                gone = await gw.get(f"{path}/records")
                assert (gone.status_code, gone.json()["error_code"]) == (404, 40403)
                assert (
                    cluster.zk.exists(GatewayZNodes.consumer_instance_path(group, "member")) is None
                )
        finally:
            await ctx.close()

    asyncio.run(scenario())
    # The expired member left the group: nobody is in it.
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        (description,) = admin.describe_groups([group]).values()
        assert description["members"] == []
    finally:
        admin.close()
