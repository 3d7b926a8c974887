"""Old message formats against a real cluster: kafka-python speaking Kafka 0.8.2 (Produce v0 /
Fetch v0, magic 0) and 0.10 (Produce v2 / Fetch v2, magic 1) with each codec it supports, read
back by a v2 client (confluent-kafka), and the reverse; ``message.downconversion.enable=false``
refusing old fetches as Kafka does, while v2 fetches of the same topic are served.

Consumers seek to explicit offsets: ListOffsets v0 (what these api_versions use to find the
beginning) is another part of the compatibility work.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.integration.partition_reads import confluent_messages, kafka_python_records

OLD_APIS = {"0.8.2": (0, 8, 2), "0.10": (0, 10)}
# The versions kafka-python sends as those clients: magic 0 for 0.8.2, magic 1 for 0.10.
OLD_PRODUCE_VERSION = {"0.8.2": 0, "0.10": 2}
OLD_FETCH_VERSION = {"0.8.2": 0, "0.10": 2}
# kafka-python writes magic 0 lz4 (Kafka 0.8's framing) with the xxhash package (dev extra).
OLD_CODECS = {"0.8.2": ["none", "gzip", "snappy", "lz4"], "0.10": ["none", "gzip", "snappy", "lz4"]}
CASES = [(api, codec) for api, codecs in OLD_CODECS.items() for codec in codecs]
RECORDS = 40

Record = tuple[bytes | None, bytes | None]


def _records(tag: str) -> list[Record]:
    """Keyed and unkeyed records, some with null values (never both null: kafka-python)."""
    out: list[Record] = []
    for i in range(RECORDS):
        key = None if i % 5 == 0 else f"key-{i}".encode()
        value = None if i % 7 == 3 and key is not None else f"{tag}-{i}".encode() * (1 + i % 4) * 8
        out.append((key, value))
    return out


def _topic(cluster: Any, prefix: str, config: dict[str, str] | None = None) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=1, replication_factor=3, config=config)
    return name


def _confluent_read(cluster: Any, topic: str, count: int) -> list[tuple[int, Record, int]]:
    return [
        (msg.offset(), (msg.key(), msg.value()), msg.timestamp()[1])
        for msg in confluent_messages(cluster.bootstrap, topic, count)
    ]


def _old_read(cluster: Any, topic: str, api: tuple[int, ...], count: int) -> list[Any]:
    return kafka_python_records(
        cluster.bootstrap,
        topic,
        count,
        api_version=api,
        max_partition_fetch_bytes=4096,  # several fetches, partial messages at their ends
        fetch_max_bytes=4096,
    )


@pytest.mark.parametrize(("api", "codec"), CASES)
def test_old_producer_read_by_v2_consumer(cluster: Any, api: str, codec: str) -> None:
    from kafka import KafkaProducer

    topic = _topic(cluster, f"legacy-in-{codec}")
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap,
        api_version=OLD_APIS[api],
        acks="all",
        compression_type=None if codec == "none" else codec,
        linger_ms=20,
    )
    produces_before = _requests(cluster, "Produce", OLD_PRODUCE_VERSION[api])
    sent = _records(f"{api}-{codec}")
    futures = [producer.send(topic, key=k, value=v, timestamp_ms=1_700_000_000_000 + i)
               for i, (k, v) in enumerate(sent)]  # fmt: skip
    offsets = [f.get(timeout=30).offset for f in futures]
    producer.close()
    stamps = [1_700_000_000_000 + i for i in range(RECORDS)]
    assert offsets == list(range(RECORDS))
    assert _requests(cluster, "Produce", OLD_PRODUCE_VERSION[api]) > produces_before
    assert _leader_sample(cluster, topic, "producemessageconversions") == RECORDS
    rows = _confluent_read(cluster, topic, RECORDS)
    assert [(o, r) for o, r, _ in rows] == list(enumerate(sent))
    # magic 0 has no timestamps (NO_TIMESTAMP); magic 1 keeps the producer's
    expected_stamps = [-1] * RECORDS if api == "0.8.2" else stamps
    assert [t for _, _, t in rows] == expected_stamps


@pytest.mark.parametrize(("api", "codec"), [*CASES, ("0.10", "zstd-refused")])
def test_v2_producer_read_by_old_consumer(cluster: Any, api: str, codec: str) -> None:
    from confluent_kafka import Producer

    topic = _topic(cluster, f"legacy-out-{codec}")
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "compression.type": "zstd" if codec == "zstd-refused" else codec,
            "linger.ms": 20,
            # many batches: each old fetch (4 KiB per partition) ends inside a converted one
            "batch.size": 1000,
        }
    )
    sent = _records(f"v2-{codec}")
    for i, (key, value) in enumerate(sent):
        producer.produce(
            topic, key=key, value=value, headers=[("h", b"dropped")], timestamp=1_000 + i
        )
    assert producer.flush(30) == 0
    if codec == "zstd-refused":
        _assert_old_fetch_error(cluster, topic, 2, 76)  # UNSUPPORTED_COMPRESSION_TYPE
        return
    fetches_before = _requests(cluster, "Fetch", OLD_FETCH_VERSION[api])
    rows = _old_read(cluster, topic, OLD_APIS[api], RECORDS)
    assert _requests(cluster, "Fetch", OLD_FETCH_VERSION[api]) > fetches_before
    assert [(m.offset, (m.key, m.value)) for m in rows] == list(enumerate(sent))
    if api == "0.10":
        assert [m.timestamp for m in rows] == [1_000 + i for i in range(RECORDS)]
    assert all(not m.headers for m in rows)


def _fetch(cluster: Any, topic: str, version: int, partition_max_bytes: int = 1 << 20) -> Any:
    from kafka.protocol.consumer import FetchRequest, FetchResponse

    from tests.integration.wire import request_once

    cls = FetchRequest[version]
    request = cls(
        replica_id=-1,
        max_wait_ms=100,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        topics=[
            cls.FetchTopic(
                topic=topic,
                partitions=[
                    cls.FetchTopic.FetchPartition(
                        partition=0,
                        fetch_offset=0,
                        log_start_offset=-1,
                        partition_max_bytes=partition_max_bytes,
                    )
                ],
            )
        ],
    )
    response = request_once(cluster.leader_address(topic, 0), request, FetchResponse, version)
    return response.responses[0].partitions[0]


def _assert_old_fetch_error(cluster: Any, topic: str, version: int, code: int) -> None:
    partition = _fetch(cluster, topic, version)
    assert partition.error_code == code
    assert not partition.records


def test_downconversion_disabled_refuses_old_fetches_only(cluster: Any) -> None:
    from confluent_kafka import Producer

    topic = _topic(cluster, "legacy-noconv", {"message.downconversion.enable": "false"})
    empty = _topic(cluster, "legacy-noconv-empty", {"message.downconversion.enable": "false"})
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    producer.produce(topic, key=b"k", value=b"v")
    assert producer.flush(30) == 0
    for version in (0, 1, 2, 3):
        _assert_old_fetch_error(cluster, topic, version, 35)  # UNSUPPORTED_VERSION
        # nothing to convert, nothing refused (Kafka converts only what it returns)
        assert _fetch(cluster, empty, version).error_code == 0
    served = _fetch(cluster, topic, 4)
    assert served.error_code == 0 and served.records
    # a topic configured for zstd is closed to them whatever it holds (Kafka: Fetch < v10)
    zstd = _topic(cluster, "legacy-zstd-topic", {"compression.type": "zstd"})
    assert _fetch(cluster, zstd, 3).error_code == 76  # UNSUPPORTED_COMPRESSION_TYPE
    # and so is it to v2 consumers below Fetch v10 (KIP-110), by the topic's config
    assert [_fetch(cluster, zstd, v).error_code for v in (4, 9, 10)] == [76, 76, 0]
    # an old producer still writes to it: up-conversion is not down-conversion
    from kafka import KafkaProducer

    old = KafkaProducer(bootstrap_servers=cluster.bootstrap, api_version=(0, 10))
    assert old.send(topic, value=b"old").get(timeout=30).offset == 1
    old.close()
    rows = _confluent_read(cluster, topic, 2)
    assert [r for _, r, _ in rows] == [(b"k", b"v"), (None, b"old")]


def _produce(cluster: Any, topic: str, version: int, records: bytes) -> Any:
    from kafka.protocol.producer import ProduceRequest, ProduceResponse

    from tests.integration.wire import request_once

    cls = ProduceRequest[version]
    request = cls(
        transactional_id=None,
        acks=1,
        timeout_ms=10_000,
        topic_data=[
            cls.TopicProduceData(
                name=topic,
                partition_data=[
                    cls.TopicProduceData.PartitionProduceData(index=0, records=records)
                ],
            )
        ],
    )
    response = request_once(cluster.leader_address(topic, 0), request, ProduceResponse, version)
    return response.responses[0].partition_responses[0]


def test_produce_versions_and_magics_as_kafka_answers_them(cluster: Any) -> None:
    from pafka.records.encoding import build_batch
    from pafka.records.legacy import write_message

    topic = _topic(cluster, "legacy-magics")
    v0, v1 = bytearray(), bytearray()
    write_message(v0, 0, 0, b"k0", b"magic 0")
    write_message(v1, 0, 1, b"k1", b"magic 1", timestamp=42)
    v2 = build_batch([(b"k2", b"magic 2", ())], timestamp_ms=43)
    # Kafka checks the magic only from Produce v3 on: a v2 batch in v0-v2 is appended as is
    assert [
        _produce(cluster, topic, 0, v2).error_code,
        _produce(cluster, topic, 2, v2).error_code,
    ] == [0, 0]
    assert _produce(cluster, topic, 0, bytes(v1)).error_code == 0  # magic 1 in Produce v0
    assert _produce(cluster, topic, 1, bytes(v0)).base_offset == 3
    assert _produce(cluster, topic, 3, bytes(v1)).error_code == 87  # INVALID_RECORD
    assert _produce(cluster, topic, 2, bytes(v0 + v1)).error_code == 87  # mixed magics
    assert _produce(cluster, topic, 2, bytes(v1) + v2).error_code == 87
    corrupt = bytearray(v1)
    corrupt[-1] ^= 1
    assert _produce(cluster, topic, 2, bytes(corrupt)).error_code == 2  # CORRUPT_MESSAGE
    assert _produce(cluster, topic, 2, bytes(v1[:-3])).error_code == 2
    # Kafka's ProduceMessageConversionsPerSec: the two legacy records that were appended
    assert _leader_sample(cluster, topic, "producemessageconversions") == 2
    rows = _confluent_read(cluster, topic, 4)
    assert [(o, r, t) for o, r, t in rows] == [
        (0, (b"k2", b"magic 2"), 43),
        (1, (b"k2", b"magic 2"), 43),
        (2, (b"k1", b"magic 1"), 42),
        (3, (b"k0", b"magic 0"), -1),
    ]


def test_old_fetch_limits(cluster: Any) -> None:
    from confluent_kafka import Producer

    from pafka.records.legacy import iter_records

    topic = _topic(cluster, "legacy-limits")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 50})
    for i in range(20):
        producer.produce(topic, value=b"%02d" % i * 100)  # one batch of about 4 KB
    assert producer.flush(30) == 0
    for version in (0, 1, 2):
        # the batch exceeds the partition's limit: no whole message, as Kafka's v0-v2
        part = _fetch(cluster, topic, version, partition_max_bytes=1000)
        assert part.error_code == 0 and len(part.records) == 0
    part = _fetch(cluster, topic, 3, partition_max_bytes=1000)  # KIP-74: a whole first batch
    assert [m.value for m in iter_records(part.records)] == [b"%02d" % i * 100 for i in range(20)]
    part = _fetch(cluster, topic, 1, partition_max_bytes=1 << 20)
    assert [m.offset for m in iter_records(part.records)] == list(range(20))
    # FetchMessageConversionsPerSec: the two fetches that returned the batch's 20 records
    assert _leader_sample(cluster, topic, "fetchmessageconversions") == 40


def _samples(cluster: Any, broker_id: int, name: str, **labels: str) -> float:
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    url = cluster.local.broker(broker_id).http_url + "/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return sum(
        float(s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def _leader_sample(cluster: Any, topic: str, metric: str) -> float:
    leader = cluster.partition_state(topic, 0).leader
    name = f"kafka_server_brokertopicmetrics_{metric}_total"
    return _samples(cluster, leader, name, topic=topic)


def _requests(cluster: Any, api: str, version: int) -> float:
    """Requests of one API version the whole cluster has received."""
    name = "kafka_network_requestmetrics_requests_total"
    return sum(
        _samples(cluster, b, name, request=api, version=str(version)) for b in cluster.broker_ids()
    )


def test_magic_0_lz4_both_ways(cluster: Any) -> None:
    """kafka-python cannot write or read magic 0 lz4 here (it needs xxhash): the wrapper is
    built by hand with Kafka's broken frame checksum, and read back by confluent-kafka; lz4
    data from confluent-kafka is fetched with Fetch v0 and must carry that checksum again."""
    from confluent_kafka import Producer

    from pafka.records.batch import Codec
    from pafka.records.compression import xxh32_short
    from pafka.records.legacy import iter_messages, iter_records, write_message, write_wrapper

    topic = _topic(cluster, "legacy-lz4-m0")
    inner = bytearray()
    sent = _records("m0-lz4")
    for i, (key, value) in enumerate(sent):
        write_message(inner, i, 0, key, value)
    wrapper = bytearray()
    write_wrapper(wrapper, Codec.LZ4, 0, bytes(inner), len(sent) - 1)
    assert _produce(cluster, topic, 0, bytes(wrapper)).error_code == 0
    assert [r for _, r, _ in _confluent_read(cluster, topic, RECORDS)] == sent

    other = _topic(cluster, "legacy-lz4-out")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "compression.type": "lz4"})
    for key, value in sent:
        producer.produce(other, key=key, value=value)
    assert producer.flush(30) == 0
    part = _fetch(cluster, other, 0)
    wrappers = list(iter_messages(part.records))
    assert wrappers and all(w.codec is Codec.LZ4 and w.magic == 0 for w in wrappers)
    frame = wrappers[0].value or b""
    assert frame[6] == (xxh32_short(frame[:6]) >> 8) & 0xFF  # KAFKA-3160's checksum
    assert [(m.key, m.value) for m in iter_records(part.records)] == sent


def test_zstd_batches_need_produce_v7(cluster: Any) -> None:
    """Kafka refuses a zstd batch in Produce v3-v6 (UNSUPPORTED_COMPRESSION_TYPE): producers that
    old cannot have meant it (KIP-110)."""
    from pafka.records.batch import Codec
    from pafka.records.encoding import build_batch

    topic = _topic(cluster, "legacy-zstd-produce")
    batch = build_batch([(b"k", b"zstd" * 50, ())], compression=Codec.ZSTD)
    plain = build_batch([(b"k", b"plain", ())])
    assert [_produce(cluster, topic, v, batch).error_code for v in (0, 3, 6)] == [76, 76, 76]
    assert _produce(cluster, topic, 6, plain).error_code == 0
    assert _produce(cluster, topic, 7, batch).base_offset == 1
    rows = _confluent_read(cluster, topic, 2)
    assert [r for _, r, _ in rows] == [(b"k", b"plain"), (b"k", b"zstd" * 50)]
