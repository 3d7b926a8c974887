"""The range read's record-batch format (``Accept: application/vnd.pafka.batches``) on real
processes: batches as kafka-python and librdkafka wrote them (every codec), read from inside a
batch; an empty partition's long poll; read_committed past an aborted transaction; and the
JSON read's errors.
"""

from __future__ import annotations

import asyncio
import base64
import threading
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pafka.records.batch import iter_batches
from pafka.records.encoding import decode_records

BATCHES = "application/vnd.pafka.batches"
V2_BINARY = "application/vnd.kafka.binary.v2+json"
CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


def new_topic(cluster: Any, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=1, replication_factor=3)
    return name


def read(base: str, topic: str, offset: int, accept: str = BATCHES, partition: int = 0, **q: Any):  # type: ignore[no-untyped-def]
    return httpx.get(
        f"{base}/topics/{topic}/partitions/{partition}/records",
        params={"offset": offset, **q},
        headers={"Accept": accept},
        timeout=60,
    )


def produce_one(base: str, topic: str, value: bytes) -> None:
    produced = httpx.post(
        f"{base}/topics/{topic}",
        json={"records": [{"value": base64.b64encode(value).decode()}]},
        headers={"Content-Type": V2_BINARY},
        timeout=30,
    )
    assert produced.status_code == 200, produced.text


def records_of(body: bytes) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record in the batches of a body."""
    return [
        (r.offset, r.value)
        for pos, header in iter_batches(body)
        for r in decode_records(body[pos : pos + header.size])
    ]


def test_batches_as_written_read_from_inside_a_batch(cluster: Any) -> None:
    """Each codec's batches come back whole, the first one holding the offset asked for;
    the headers say where to read on."""
    from kafka import KafkaProducer

    topic = new_topic(cluster, "batches-codecs")
    sent: list[bytes] = []
    for codec in CODECS:
        producer = KafkaProducer(
            bootstrap_servers=cluster.bootstrap, acks="all", compression_type=codec, linger_ms=50
        )
        for i in range(20):
            value = f"{codec}-{i}".encode() * (i + 1)
            producer.send(topic, value=value, partition=0)
            sent.append(value)
        producer.flush()
        producer.close()
    base = cluster.gateways[0]
    whole = read(base, topic, 0)
    assert whole.status_code == 200 and whole.headers["content-type"] == BATCHES
    assert records_of(whole.content) == list(enumerate(sent))
    assert whole.headers["pafka-high-watermark"] == "100"
    assert whole.headers["pafka-next-offset"] == "100"
    assert whole.headers["pafka-log-start-offset"] == "0"
    assert int(whole.headers["content-length"]) == len(whole.content)

    for offset in (7, 45, 99):  # inside a gzip, lz4 and zstd batch
        mid = read(cluster.gateways[1], topic, offset, max_records=1)
        got = records_of(mid.content)
        first_base = next(iter_batches(mid.content))[1].base_offset
        assert first_base < offset and (offset, sent[offset]) in got
        assert [o for o, _ in got] == list(range(first_base, int(mid.headers["pafka-next-offset"])))
    tail = read(base, topic, 100)
    assert tail.status_code == 200 and tail.content == b""
    assert tail.headers["pafka-next-offset"] == "100"


def test_empty_partition_long_poll_and_a_record_arriving(cluster: Any) -> None:
    topic = new_topic(cluster, "batches-poll")
    a, b = cluster.gateways
    empty = read(a, topic, 0, timeout_ms=300)
    assert empty.status_code == 200 and empty.content == b""
    assert empty.headers["pafka-next-offset"] == "0"
    assert empty.headers["pafka-high-watermark"] == "0"

    result: dict[str, Any] = {}
    poller = threading.Thread(target=lambda: result.update(r=read(b, topic, 0, timeout_ms=20_000)))
    poller.start()
    produce_one(a, topic, b"wake")
    poller.join(30)
    assert records_of(result["r"].content) == [(0, b"wake")]


def test_read_committed_drops_an_aborted_transaction(cluster: Any) -> None:
    from confluent_kafka import Producer

    topic = new_topic(cluster, "batches-txn")
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": f"t-{uuid.uuid4()}"})
    p.init_transactions(60)
    for values, commit in (([b"c0", b"c1"], True), ([b"a0", b"a1"], False), ([b"c2"], True)):
        p.begin_transaction()
        for v in values:
            p.produce(topic, v, partition=0)
        p.flush(30)
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    base = cluster.gateways[0]
    committed = read(base, topic, 0, isolation="read_committed")
    assert [v for _, v in records_of(committed.content)] == [b"c0", b"c1", b"c2"]
    end = committed.headers["pafka-next-offset"]
    assert end == committed.headers["pafka-last-stable-offset"] == "8"  # three markers
    uncommitted = read(base, topic, 0)
    assert [v for _, v in records_of(uncommitted.content)] == [b"c0", b"c1", b"a0", b"a1", b"c2"]
    # No control batch is ever sent: every batch holds records.
    assert all(not h.is_control for _, h in iter_batches(uncommitted.content))


@pytest.mark.parametrize(
    ("partition", "offset", "status", "code"),
    [(5, 0, 404, 40402), (0, 10, 416, 41601)],
)
def test_errors_are_the_json_reads(
    cluster: Any, partition: int, offset: int, status: int, code: int
) -> None:
    topic = new_topic(cluster, "batches-errors")
    base = cluster.gateways[0]
    as_batches = read(base, topic, offset, partition=partition)
    as_json = read(base, topic, offset, V2_BINARY, partition=partition)
    assert as_batches.status_code == as_json.status_code == status
    assert as_batches.json() == as_json.json() and as_batches.json()["error_code"] == code
    missing = read(base, f"no-such-{uuid.uuid4().hex[:6]}", 0)
    assert missing.status_code == 404 and missing.json()["error_code"] == 40401


def test_tokens_guard_batch_reads_as_json_reads(cluster: Any, tmp_path: Path) -> None:
    """An in-process gateway with a token file over the shared cluster: 401 without a token,
    403 for another topic's, the same bodies as the JSON read; the right token reads."""
    from services.gateway.app import create_app
    from services.gateway.context import open_context
    from services.gateway.settings import GatewaySettings

    mine, other = new_topic(cluster, "batches-auth"), new_topic(cluster, "batches-noauth")
    produce_one(cluster.gateways[0], mine, b"x")
    tokens = tmp_path / "tokens"
    tokens.write_text(f"narrow {mine}\n")
    settings = GatewaySettings(zookeeper=cluster.zk_connect, tokens_file=tokens)

    async def scenario() -> None:
        ctx = await open_context(settings)
        transport = httpx.ASGITransport(app=create_app(settings, ctx))
        narrow = {"Authorization": "Bearer narrow"}
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://gw") as gw:

                async def both(topic: str, headers: dict[str, str]) -> list[httpx.Response]:
                    path = f"/topics/{topic}/partitions/0/records?offset=0"
                    return [
                        await gw.get(path, headers={**headers, "Accept": accept})
                        for accept in (BATCHES, V2_BINARY)
                    ]

                for topic, headers, status in ((mine, {}, 401), (other, narrow, 403)):
                    as_batches, as_json = await both(topic, headers)
                    assert as_batches.status_code == as_json.status_code == status
                    assert as_batches.json() == as_json.json()
                allowed, _ = await both(mine, narrow)
                assert allowed.status_code == 200
                assert records_of(allowed.content) == [(0, b"x")]
        finally:
            await ctx.close()

    asyncio.run(scenario())


def bytes_served(cluster: Any, topic: str) -> float:
    """Record bytes every broker has served to Fetch requests for ``topic``."""
    total = 0.0
    for name, service in cluster.local.services.items():
        if not name.startswith("broker-"):
            continue
        with urllib.request.urlopen(service.http_url + "/metrics", timeout=5) as response:
            text = response.read().decode()
        total += sum(
            s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == "kafka_server_brokertopicmetrics_bytesout_total"
            and s.labels.get("topic") == topic
        )
    return total


def test_a_short_read_asks_the_broker_for_what_its_records_need(cluster: Any) -> None:
    """A read of two records at the start of a 1.2 MB log fetches about what they take, not
    the gateway's fetch cap (8 MiB); a read of records larger than the first guess fetches on
    until it has all it asked for."""
    topic = f"batches-sizing-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=1)  # no follower fetching
    base = cluster.gateways[0]
    value = bytes(range(200)) * 100  # 20 KB: one record a batch, sixty batches
    for _ in range(60):
        produce_one(base, topic, value)
    before = bytes_served(cluster, topic)
    short = read(base, topic, 0, max_records=2)
    assert short.status_code == 200
    assert [o for o, _ in records_of(short.content)] == [0, 1]
    assert bytes_served(cluster, topic) - before < 200_000

    longer = read(base, topic, 0, max_records=30)
    assert [o for o, v in records_of(longer.content) if v == value] == list(range(30))
    assert longer.headers["pafka-next-offset"] == "30"


def test_a_batch_larger_than_max_bytes_ends_the_read(cluster: Any) -> None:
    """Kafka answers at least one batch even above the bytes asked for: such a first batch
    ends the read (it is over ``max_bytes`` already), whatever ``max_records`` still wants, and
    no further Fetch is sent for it (the broker serves exactly the bytes answered)."""
    topic = f"batches-oversized-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    base = cluster.gateways[0]
    large = bytes(range(256)) * 800  # 200 KB: one batch above the 100 KB asked for
    produce_one(base, topic, large)
    produce_one(base, topic, b"small")
    before = bytes_served(cluster, topic)
    answer = read(base, topic, 0, max_records=2, max_bytes=100_000)
    assert answer.status_code == 200, answer.text
    assert bytes_served(cluster, topic) - before == len(answer.content)
    assert records_of(answer.content) == [(0, large)]
    assert answer.headers["pafka-next-offset"] == "1"
