"""REST produce and stateless reads on real processes, checked against a real Kafka client.

Records written through one gateway are read through the other and by kafka-python; records
kafka-python wrote (compressed with every codec) are read through REST; a key lands in the
partition kafka-python's own partitioner picks; idempotency keys write once; a long poll
answers as soon as a record arrives; and bad input is always a 4xx with its code.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from pafka.zk.znodes import TopicZNode

PARTITIONS = 3
V2 = "application/vnd.kafka.v2+json"
V2_JSON = "application/vnd.kafka.json.v2+json"
V2_BINARY = "application/vnd.kafka.binary.v2+json"
CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def new_topic(cluster: Any, prefix: str, partitions: int = PARTITIONS) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=partitions, replication_factor=3)
    return name


def post(base: str, path: str, body: Any, content_type: str = V2_JSON, **kw: Any) -> Any:
    return httpx.post(
        base + path,
        content=json.dumps(body).encode(),
        headers={"Content-Type": content_type, **kw.pop("headers", {})},
        timeout=60,
        **kw,
    )


def read(base: str, topic: str, partition: int, offset: int, accept: str = V2_JSON, **q: Any):  # type: ignore[no-untyped-def]
    return httpx.get(
        f"{base}/topics/{topic}/partitions/{partition}/records",
        params={"offset": offset, **q},
        headers={"Accept": accept},
        timeout=60,
    )


def read_all(base: str, topic: str, partition: int, accept: str = V2_JSON) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    offset = 0
    while True:
        response = read(base, topic, partition, offset, accept, max_records=1000)
        assert response.status_code == 200, response.text
        body = response.json()
        records += body["records"]
        if body["next_offset"] >= body["high_watermark"]:
            return records
        offset = body["next_offset"]


def kafka_python_partitions(cluster: Any, topic: str, keys: list[bytes]) -> list[int]:
    """Where kafka-python's own producer puts each key (it writes them, too)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    try:
        futures = [producer.send(topic, key=k, value=b"from-kafka-python") for k in keys]
        return [f.get(timeout=30).partition for f in futures]
    finally:
        producer.close()


def consume_all(cluster: Any, topic: str, expected: int = 0) -> list[Any]:
    """Every record up to the high watermarks, and at least `expected` of them: after acks=1
    the followers may not have moved the watermark yet when the reads begin."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        rows: list[Any] = []
        deadline = time.monotonic() + 30
        while sum(consumer.position(tp) for tp in tps) < max(sum(ends.values()), expected):
            assert time.monotonic() < deadline, "kafka-python stalled"
            for batch in consumer.poll(timeout_ms=1000).values():
                rows += batch
        return rows
    finally:
        consumer.close()


# -- metadata ----------------------------------------------------------------------------------


def test_topic_metadata(cluster: Any) -> None:
    topic = new_topic(cluster, "meta")
    base = cluster.gateways[0]
    assert topic in httpx.get(f"{base}/topics").json()
    described = httpx.get(f"{base}/topics/{topic}").json()
    assert described["name"] == topic
    assert described["configs"]["cleanup.policy"] == "delete"
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]
    assignment = TopicZNode.decode(topic, cluster.zk.get(TopicZNode.path(topic))[0]).partitions
    for p in described["partitions"]:
        state = cluster.partition_state(topic, p["partition"])
        assert p["leader"] == state.leader
        assert tuple(r["broker"] for r in p["replicas"]) == assignment[p["partition"]]
        assert {r["broker"] for r in p["replicas"] if r["in_sync"]} == set(state.isr)
        assert [r["broker"] for r in p["replicas"] if r["leader"]] == [state.leader]
    partitions = httpx.get(f"{base}/topics/{topic}/partitions").json()
    assert partitions == described["partitions"]
    one = httpx.get(f"{base}/topics/{topic}/partitions/1")
    assert one.status_code == 200
    assert one.headers["content-type"].startswith(V2)
    assert one.json() == described["partitions"][1]


def test_openapi_lists_every_route(cluster: Any) -> None:
    spec = httpx.get(cluster.gateways[1] + "/openapi.json").json()
    for path in (
        "/topics",
        "/topics/{topic}",
        "/topics/{topic}/partitions",
        "/topics/{topic}/partitions/{partition}",
        "/topics/{topic}/partitions/{partition}/records",
        "/topics/{topic}/partitions/{partition}/offsets",
    ):
        assert path in spec["paths"], path
    produce = spec["paths"]["/topics/{topic}"]["post"]
    assert set(produce["requestBody"]["content"]) == {V2_JSON, V2_BINARY, "application/json"}
    assert "503" in produce["responses"] and "422" in produce["responses"]


# -- REST writes, Kafka reads -------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "binary"])
def test_rest_records_are_read_by_kafka_python(cluster: Any, fmt: str) -> None:
    topic = new_topic(cluster, f"rest-{fmt}")
    keys = [f"user-{i}" for i in range(30)]
    if fmt == "json":
        records = [
            {
                "key": k,
                "value": {"n": i, "k": k},
                "headers": [{"name": "i", "value": b64(b"%d" % i)}],
            }
            for i, k in enumerate(keys)
        ]
        stored_keys = [json.dumps(k).encode() for k in keys]
        stored_values = [
            json.dumps({"n": i, "k": k}, separators=(",", ":")).encode() for i, k in enumerate(keys)
        ]
        content_type = V2_JSON
    else:
        stored_keys = [k.encode() for k in keys]
        stored_values = [bytes([i]) * (i + 1) for i in range(len(keys))]
        records = [
            {"key": b64(k), "value": b64(v), "headers": [{"name": "i", "value": b64(b"%d" % i)}]}
            for i, (k, v) in enumerate(zip(stored_keys, stored_values, strict=True))
        ]
        content_type = V2_BINARY
    response = post(cluster.gateways[0], f"/topics/{topic}", {"records": records}, content_type)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith(V2)
    body = response.json()
    assert body["key_schema_id"] is None and body["value_schema_id"] is None
    offsets = body["offsets"]
    assert all(o["error_code"] is None and o["error"] is None for o in offsets)

    # The same keys through kafka-python's producer land in the same partitions.
    assert [o["partition"] for o in offsets] == kafka_python_partitions(cluster, topic, stored_keys)

    by_place = {(r.partition, r.offset): r for r in consume_all(cluster, topic)}
    for i, o in enumerate(offsets):
        record = by_place[(o["partition"], o["offset"])]
        assert record.key == stored_keys[i]
        assert record.value == stored_values[i]
        assert list(record.headers) == [("i", b"%d" % i)]


def test_keyless_requests_take_partitions_in_turn_and_partitions_can_be_named(
    cluster: Any,
) -> None:
    """Keyless records of a request stay together on one partition (as Kafka's sticky
    partitioner keeps them), and successive requests take the partitions in turn."""
    topic = new_topic(cluster, "spread")
    base = cluster.gateways[1]
    taken = []
    for n in range(PARTITIONS):
        records = {"records": [{"value": n * 3 + i} for i in range(3)]}
        response = post(base, f"/topics/{topic}", records)
        assert response.status_code == 200, response.text
        [partition] = {o["partition"] for o in response.json()["offsets"]}
        assert [o["offset"] for o in response.json()["offsets"]] == [0, 1, 2]
        taken.append(partition)
    assert sorted(taken) == list(range(PARTITIONS))
    for _ in range(PARTITIONS):  # one record a request: each partition takes one in turn
        assert post(base, f"/topics/{topic}", {"records": [{"value": "one"}]}).status_code == 200
    assert [end_offset(base, topic, p) for p in range(PARTITIONS)] == [4] * PARTITIONS
    named = post(base, f"/topics/{topic}", {"records": [{"value": "x", "partition": 2}] * 3})
    assert {o["partition"] for o in named.json()["offsets"]} == {2}
    direct = post(
        base,
        f"/topics/{topic}/partitions/1",
        {"records": [{"key": "k", "value": 1}]},
        V2_BINARY.replace("binary", "json"),
    )
    assert direct.status_code == 200, direct.text
    assert direct.json()["offsets"][0]["partition"] == 1
    acks_one = post(
        base, f"/topics/{topic}?acks=1", {"records": [{"value": 1}]}, "application/json"
    )
    assert acks_one.status_code == 200, acks_one.text


# -- Kafka writes, REST reads -------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_records_are_read_through_rest(cluster: Any, codec: str | None) -> None:
    from kafka import KafkaProducer

    topic = new_topic(cluster, f"kp-{codec or 'none'}", partitions=1)
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap, acks="all", compression_type=codec, linger_ms=20
    )
    sent = []
    for i in range(50):
        key = None if i % 4 == 0 else json.dumps(f"key-{i}").encode()
        value = json.dumps({"i": i, "pad": "x" * i}).encode()
        headers = [("h", b"\x00%d" % i)] if i % 2 else []
        producer.send(topic, key=key, value=value, headers=headers, partition=0)
        sent.append((key, value, headers))
    producer.flush()
    producer.close()

    as_json = read_all(cluster.gateways[1], topic, 0, V2_JSON)
    assert [r["offset"] for r in as_json] == list(range(50))
    for record, (key, value, headers) in zip(as_json, sent, strict=True):
        assert record["key"] == (None if key is None else json.loads(key))
        assert record["value"] == json.loads(value)
        assert [(h["name"], base64.b64decode(h["value"])) for h in record["headers"]] == headers
        assert record["timestamp_type"] == "CREATE_TIME" and record["timestamp"] > 0
    as_binary = read_all(cluster.gateways[0], topic, 0, V2_BINARY)
    assert [
        (r["key"] and base64.b64decode(r["key"]), base64.b64decode(r["value"])) for r in as_binary
    ] == [(k, v) for k, v, _ in sent]


def test_reads_start_at_the_offset_and_stop_at_max_records(cluster: Any) -> None:
    topic = new_topic(cluster, "range", partitions=1)
    a, b = cluster.gateways
    for chunk in range(4):  # several batches, so a read starts inside one
        values = [{"value": chunk * 10 + i} for i in range(10)]
        assert post(a, f"/topics/{topic}/partitions/0", {"records": values}).status_code == 200
    response = read(b, topic, 0, 13, max_records=5)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(V2_JSON)
    body = response.json()
    assert [r["value"] for r in body["records"]] == [13, 14, 15, 16, 17]
    assert [r["offset"] for r in body["records"]] == [13, 14, 15, 16, 17]
    assert body["next_offset"] == 18 and body["high_watermark"] == 40
    assert body["log_start_offset"] == 0
    offsets = httpx.get(f"{b}/topics/{topic}/partitions/0/offsets")
    assert offsets.json() == {"beginning_offset": 0, "end_offset": 40}
    tail = read(b, topic, 0, 40)
    assert tail.status_code == 200 and tail.json()["records"] == []
    small = read(b, topic, 0, 0, max_bytes=1)  # at least one batch comes anyway
    assert small.status_code == 200 and small.json()["records"]


def test_long_poll_answers_when_a_record_arrives(cluster: Any) -> None:
    topic = new_topic(cluster, "poll", partitions=1)
    a, b = cluster.gateways
    result: dict[str, Any] = {}

    def poll() -> None:
        started = time.monotonic()
        result["response"] = read(b, topic, 0, 0, timeout_ms=20_000)
        result["waited_s"] = time.monotonic() - started

    poller = threading.Thread(target=poll)
    poller.start()
    time.sleep(1.0)
    # Meanwhile other requests on the same gateway are not held up by the poll.
    started = time.monotonic()
    assert httpx.get(f"{b}/topics/{topic}/partitions/0/offsets").status_code == 200
    assert time.monotonic() - started < 2
    sent_at = time.monotonic()
    assert post(a, f"/topics/{topic}", {"records": [{"value": "wake"}]}).status_code == 200
    poller.join(30)
    response = result["response"]
    assert response.status_code == 200, response.text
    assert [r["value"] for r in response.json()["records"]] == ["wake"]
    assert 1.0 <= result["waited_s"] < 20
    assert time.monotonic() - sent_at < 3
    empty_started = time.monotonic()
    empty = read(b, topic, 0, 1, timeout_ms=800)
    assert empty.json()["records"] == [] and time.monotonic() - empty_started >= 0.7


# -- idempotency keys ---------------------------------------------------------------------------


def end_offset(base: str, topic: str, partition: int = 0) -> int:
    return int(
        httpx.get(f"{base}/topics/{topic}/partitions/{partition}/offsets").json()["end_offset"]
    )


def test_idempotency_key_writes_once(cluster: Any) -> None:
    topic = new_topic(cluster, "idem", partitions=1)
    a, b = cluster.gateways
    key = str(uuid.uuid4())
    body = {"records": [{"value": i} for i in range(5)]}
    first = post(a, f"/topics/{topic}", body, headers={"Idempotency-Key": key})
    assert first.status_code == 200, first.text
    again = post(b, f"/topics/{topic}", body, headers={"Idempotency-Key": key})
    assert again.status_code == 200
    assert again.json() == first.json()
    assert again.headers.get("idempotent-replayed") == "true"
    assert end_offset(a, topic) == 5
    other = post(
        a, f"/topics/{topic}", {"records": [{"value": 9}]}, headers={"Idempotency-Key": key}
    )
    assert other.status_code == 409 and other.json()["error_code"] == 40904
    bad = post(a, f"/topics/{topic}", body, headers={"Idempotency-Key": "a/b"})
    assert bad.status_code == 400 and bad.json()["error_code"] == 40002


def test_concurrent_duplicates_write_once(cluster: Any) -> None:
    topic = new_topic(cluster, "idem-race", partitions=1)
    key = str(uuid.uuid4())
    body = {"records": [{"value": "once"}] * 3}

    def send(i: int) -> httpx.Response:
        return post(
            cluster.gateways[i % 2], f"/topics/{topic}", body, headers={"Idempotency-Key": key}
        )

    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(send, range(8)))
    statuses = sorted(r.status_code for r in responses)
    assert set(statuses) <= {200, 409}, [r.text for r in responses]
    assert all(r.json()["error_code"] == 40905 for r in responses if r.status_code == 409)
    winners = {json.dumps(r.json(), sort_keys=True) for r in responses if r.status_code == 200}
    assert len(winners) == 1
    assert end_offset(cluster.gateways[0], topic) == 3
    # Once the first finished, every retry is a replay.
    late = send(3)
    assert late.status_code == 200 and json.dumps(late.json(), sort_keys=True) in winners
    assert end_offset(cluster.gateways[1], topic) == 3


def test_large_requests_go_out_in_several_batches(cluster: Any) -> None:
    topic = new_topic(cluster, "large", partitions=1)
    base = cluster.gateways[0]
    # Together far above max.message.bytes (1 MiB), each well below it.
    values = [b64(bytes([i]) * 400_000) for i in range(4)]
    response = post(
        base, f"/topics/{topic}", {"records": [{"value": v} for v in values]}, V2_BINARY
    )
    assert response.status_code == 200, response.text[:300]
    assert [o["offset"] for o in response.json()["offsets"]] == [0, 1, 2, 3]
    assert [r["value"] for r in read_all(base, topic, 0, V2_BINARY)] == values


def test_partial_failure_lists_each_record_and_a_retry_writes_only_the_rest(cluster: Any) -> None:
    topic = f"partial-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(
        topic, partitions=2, replication_factor=3, config={"max.message.bytes": "2000"}
    )
    base = cluster.gateways[1]
    body = {"records": [{"value": "small", "partition": 0}, {"value": "x" * 5000, "partition": 1}]}
    key = str(uuid.uuid4())
    first = post(base, f"/topics/{topic}", body, headers={"Idempotency-Key": key})
    assert first.status_code == 413, first.text
    payload = first.json()
    assert payload["error_code"] == 41301 and "1 of 2 records not written" in payload["message"]
    ok, too_big = payload["offsets"]
    assert (ok["partition"], ok["offset"], ok["error_code"]) == (0, 0, None)
    assert (too_big["partition"], too_big["offset"], too_big["error_code"]) == (1, None, 1)
    # The retry sends only the record that failed: partition 0 still holds one record.
    again = post(cluster.gateways[0], f"/topics/{topic}", body, headers={"Idempotency-Key": key})
    assert again.status_code == 413
    assert again.json()["offsets"][0] == ok
    assert end_offset(base, topic, 0) == 1
    assert end_offset(base, topic, 1) == 0


def test_expired_idempotency_keys_are_swept(cluster: Any) -> None:
    import asyncio

    from pafka.zk.client import ZkClient
    from pafka.zk.znodes import GatewayZNodes
    from services.gateway.idempotency import RETENTION_MS, sweep_expired

    keys = [f"sweep-{uuid.uuid4().hex}" for _ in range(3)]
    for key in keys:
        cluster.zk.create(GatewayZNodes.idempotency_path(key), b"{}", makepath=True)

    async def sweep(now_ms: int) -> None:
        zk = ZkClient(cluster.zk_connect, session_timeout_ms=6000, name="sweep-test")
        await zk.start()
        try:
            await zk.run(sweep_expired, zk, "", now_ms)
        finally:
            await zk.close()

    asyncio.run(sweep(int(time.time() * 1000)))
    assert all(cluster.zk.exists(GatewayZNodes.idempotency_path(k)) for k in keys)
    asyncio.run(sweep(int(time.time() * 1000) + RETENTION_MS + 60_000))
    assert not any(cluster.zk.exists(GatewayZNodes.idempotency_path(k)) for k in keys)


# -- bad input ---------------------------------------------------------------------------------


def raw_request(base: str, head: str, body: bytes = b"") -> tuple[int, dict[str, Any]]:
    """A hand-written HTTP/1.1 request: for bodies an HTTP client would not send."""
    url = urlsplit(base)
    with socket.create_connection((url.hostname, url.port), timeout=30) as sock:
        sock.sendall(head.encode() + b"\r\n\r\n" + body)
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < _length(data):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, json.loads(data.split(b"\r\n\r\n", 1)[1])


def _length(data: bytes) -> int:
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 0


def test_bad_input_is_4xx_with_its_code(cluster: Any) -> None:
    topic = new_topic(cluster, "bad")
    base = cluster.gateways[0]
    ok_body = json.dumps({"records": [{"value": 1}]}).encode()
    cases: list[tuple[str, httpx.Response, int]] = [
        (
            "malformed json",
            httpx.post(
                f"{base}/topics/{topic}",
                content=b'{"records": [',
                headers={"Content-Type": V2_JSON},
            ),
            40001,
        ),
        (
            "wrong content type",
            httpx.post(
                f"{base}/topics/{topic}", content=ok_body, headers={"Content-Type": "text/plain"}
            ),
            41501,
        ),
        (
            "avro",
            httpx.post(
                f"{base}/topics/{topic}",
                content=ok_body,
                headers={"Content-Type": "application/vnd.kafka.avro.v2+json"},
            ),
            41501,
        ),
        (
            "bad base64 value",
            post(base, f"/topics/{topic}", {"records": [{"value": "!!"}]}, V2_BINARY),
            42202,
        ),
        (
            "bad base64 key",
            post(
                base, f"/topics/{topic}", {"records": [{"key": "!!", "value": "YQ=="}]}, V2_BINARY
            ),
            42201,
        ),
        ("no records", post(base, f"/topics/{topic}", {"records": []}), 42200),
        ("not records", post(base, f"/topics/{topic}", [1, 2]), 42200),
        (
            "bad partition field",
            post(base, f"/topics/{topic}", {"records": [{"value": 1, "partition": "x"}]}),
            42200,
        ),
        (
            "unknown topic",
            post(base, "/topics/no-such-topic-x", {"records": [{"value": 1}]}),
            40401,
        ),
        (
            "unknown partition",
            post(base, f"/topics/{topic}/partitions/7", {"records": [{"value": 1}]}),
            40402,
        ),
        (
            "named unknown partition",
            post(base, f"/topics/{topic}", {"records": [{"value": 1, "partition": 99}]}),
            40402,
        ),
        (
            "negative path partition",
            post(base, f"/topics/{topic}/partitions/-1", {"records": [{"value": 1}]}),
            40402,
        ),
        ("bad acks", post(base, f"/topics/{topic}?acks=2", {"records": [{"value": 1}]}), 42200),
        (
            "too many records",
            post(base, f"/topics/{topic}", {"records": [{"value": 0}] * 10_001}),
            41302,
        ),
        ("describe unknown topic", httpx.get(f"{base}/topics/no-such-topic-x"), 40401),
        ("describe unknown partition", httpx.get(f"{base}/topics/{topic}/partitions/3"), 40402),
        ("non-numeric partition", httpx.get(f"{base}/topics/{topic}/partitions/one"), 42200),
        ("negative offset", read(base, topic, 0, -1), 42200),
        ("huge offset", read(base, topic, 0, 2**70), 42200),
        ("offset past the end", read(base, topic, 0, 10**12), 41601),
        ("zero max_records", read(base, topic, 0, 0, max_records=0), 42200),
        ("negative timeout", read(base, topic, 0, 0, timeout_ms=-5), 42200),
        ("missing offset", httpx.get(f"{base}/topics/{topic}/partitions/0/records"), 42200),
        ("unacceptable accept", read(base, topic, 0, 0, "text/html"), 40601),
        ("read unknown topic", read(base, "no-such-topic-x", 0, 0), 40401),
        ("read unknown partition", read(base, topic, 5, 0), 40402),
        (
            "offsets unknown partition",
            httpx.get(f"{base}/topics/{topic}/partitions/5/offsets"),
            40402,
        ),
    ]
    for what, response, code in cases:
        assert 400 <= response.status_code < 500, (what, response.status_code, response.text)
        assert response.json()["error_code"] == code, (what, response.text)
        assert response.status_code == code // 100, (what, response.status_code)
        assert response.json()["message"], what


def test_non_json_records_read_as_json_is_406_and_binary_works(cluster: Any) -> None:
    topic = new_topic(cluster, "raw", partitions=1)
    base = cluster.gateways[1]
    assert (
        post(
            base, f"/topics/{topic}", {"records": [{"value": b64(b"\x00\x01not json")}]}, V2_BINARY
        ).status_code
        == 200
    )
    as_json = read(base, topic, 0, 0)
    assert as_json.status_code == 406 and as_json.json()["error_code"] == 40601
    as_binary = read(base, topic, 0, 0, V2_BINARY)
    assert as_binary.json()["records"][0]["value"] == b64(b"\x00\x01not json")


def test_oversized_bodies_are_refused_unread(cluster: Any) -> None:
    topic = new_topic(cluster, "big", partitions=1)
    base = cluster.gateways[0]
    # A declared length over the limit is refused before a byte of the body is read.
    started = time.monotonic()
    status, body = raw_request(
        base,
        f"POST /topics/{topic} HTTP/1.1\r\nHost: x\r\nContent-Type: {V2_JSON}\r\n"
        f"Content-Length: {64 * 1024 * 1024}\r\nConnection: close",
        b'{"records": [',
    )
    assert (status, body["error_code"]) == (413, 41301)
    assert time.monotonic() - started < 5
    # A chunked body is cut off once it passes the limit.
    chunk = b" " * (1024 * 1024)
    chunks = b"".join(b"%x\r\n" % len(chunk) + chunk + b"\r\n" for _ in range(17))
    status, body = raw_request(
        base,
        f"POST /topics/{topic} HTTP/1.1\r\nHost: x\r\nContent-Type: {V2_JSON}\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close",
        chunks + b"0\r\n\r\n",
    )
    assert (status, body["error_code"]) == (413, 41301)
    assert end_offset(base, topic) == 0


def test_a_bug_in_a_produce_served_whole_is_a_counted_500_and_the_connection_goes_on(
    cluster: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An in-process gateway on its own HTTP server (produce requests served whole): a produce
    whose route fails with a bug is answered 500 with the internal error body, logged and
    counted under its route; the next request on the same connection is answered."""
    import asyncio
    import logging

    from pafka.httpserver import start_http
    from services.gateway.app import create_app
    from services.gateway.context import open_context
    from services.gateway.routers import records
    from services.gateway.settings import GatewaySettings

    topic = new_topic(cluster, "bug-whole")
    settings = GatewaySettings(zookeeper=cluster.zk_connect)
    route = records.produce_to_partition
    failing = [True]

    async def produce_once_failing(topic: str, partition: int, request: Any) -> Any:
        if failing.pop() if failing else False:
            raise RuntimeError("a bug")
        return await route(topic, partition, request)

    monkeypatch.setattr(records, "produce_to_partition", produce_once_failing)
    body = json.dumps({"records": [{"value": b64(b"v")}]}).encode()

    async def scenario() -> tuple[list[httpx.Response], str]:
        ctx = await open_context(settings)
        app = create_app(settings, ctx)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        assert app.hot is not None
        server, serving = await start_http(app, "127.0.0.1", port, whole_route=app.hot.whole_route)
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                path = f"/topics/{topic}/partitions/0"
                headers = {"Content-Type": V2_BINARY}
                answers = [await client.post(path, content=body, headers=headers) for _ in "ab"]
                return answers, (await client.get("/metrics")).text
        finally:
            server.should_exit = True
            await serving
            await ctx.close()

    with caplog.at_level(logging.ERROR, logger="pafka.gateway"):
        (failed, written), metrics = asyncio.run(scenario())
    assert failed.status_code == 500 and failed.json()["error_code"] == 50000
    assert "a bug" not in failed.text
    assert any(
        r.exc_info and f"POST /topics/{topic}/partitions/0" in r.getMessage()
        for r in caplog.records
    )
    assert written.status_code == 200 and written.json()["offsets"][0]["offset"] == 0
    counted = 'http_requests_total{handler="/topics/{topic}/partitions/{partition}",method="POST"'
    assert f'{counted},status="500"}} 1.0' in metrics
    assert f'{counted},status="200"}} 1.0' in metrics
