"""The leader's append-time checks on a real cluster, seen through real clients.

* ``message.timestamp.type=LogAppendTime``: librdkafka and kafka-python (v2 batches, and magic 1
  down-converted at api_version 0.10) read the broker's append time with timestamp type
  LogAppendTime, whatever the producer stamped; ListOffsets by time finds records by it.
* ``message.timestamp.difference.max.ms``: a record stamped too long ago is refused with
  INVALID_TIMESTAMP, a fresh one accepted.
* ``cleanup.policy=compact``: a record without a key is refused with INVALID_RECORD (Kafka 2.8's
  answer at every Produce version), keyed records and tombstones are accepted.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from tests.integration.partition_reads import confluent_messages, kafka_python_records

OLD_MS = 1_500_000_000_000  # what producers stamp; far from any append time of this test


def _topic(cluster: Any, prefix: str, config: dict[str, str]) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=1, replication_factor=3, config=config)
    return name


def _now_ms() -> int:
    return int(time.time() * 1000)


def _confluent_produce(cluster: Any, topic: str, rows: list[tuple[bytes | None, bytes | None]],
                       codec: str = "none") -> list[Any]:  # fmt: skip
    """Each row sent and flushed on its own (one batch each); the delivered messages."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": "all", "compression.type": codec}
    )
    delivered: list[Any] = []
    for key, value in rows:
        producer.produce(
            topic, key=key, value=value, timestamp=OLD_MS,
            on_delivery=lambda err, msg: delivered.append((err, msg)),
        )  # fmt: skip
        producer.flush(30)
    assert len(delivered) == len(rows)
    return delivered


def _confluent_read(cluster: Any, topic: str, count: int) -> list[Any]:
    return confluent_messages(cluster.bootstrap, topic, count)


def _kafka_python_read(cluster: Any, topic: str, count: int, **options: Any) -> list[Any]:
    return kafka_python_records(cluster.bootstrap, topic, count, **options)


# -- LogAppendTime ------------------------------------------------------------------------------


def test_log_append_time_topics_carry_the_brokers_time(cluster: Any) -> None:
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    from pafka.records.batch import iter_batches
    from pafka.storage.layout import log_file, partition_dir

    topic = _topic(cluster, "append-time", {"message.timestamp.type": "LogAppendTime"})
    before_ms = _now_ms()
    delivered = _confluent_produce(cluster, topic, [(b"a", b"1"), (b"b", b"2")], codec="lz4")
    middle_ms = _now_ms()
    time.sleep(0.05)  # the second producer's append times fall strictly after middle_ms
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all",
                             compression_type="gzip", linger_ms=20)  # fmt: skip
    futures = [producer.send(topic, key=k, value=v, timestamp_ms=OLD_MS)
               for k, v in [(b"c", b"3"), (None, b"4")]]  # fmt: skip
    metadata = [f.get(timeout=30) for f in futures]
    producer.close()
    # Produce v2, a magic 1 message up-converted: stamped the same way.
    legacy = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", api_version=(0, 10))
    metadata.append(legacy.send(topic, key=b"e", value=b"5", timestamp_ms=OLD_MS).get(timeout=30))
    legacy.close()
    after_ms = _now_ms()

    # The produce answers carry the append time (log_append_time), as Kafka's do.
    assert all(err is None for err, _ in delivered)
    for _, msg in delivered:
        kind, stamp = msg.timestamp()
        assert kind == TIMESTAMP_LOG_APPEND_TIME and before_ms <= stamp <= middle_ms
    assert all(middle_ms <= m.timestamp <= after_ms for m in metadata)

    messages = _confluent_read(cluster, topic, 5)
    assert [(m.key(), m.value()) for m in messages] == [
        (b"a", b"1"), (b"b", b"2"), (b"c", b"3"), (None, b"4"), (b"e", b"5"),
    ]  # fmt: skip
    stamps = [m.timestamp() for m in messages]
    assert all(kind == TIMESTAMP_LOG_APPEND_TIME for kind, _ in stamps)
    assert all(before_ms <= ts <= middle_ms for _, ts in stamps[:2])
    assert all(middle_ms <= ts <= after_ms for _, ts in stamps[2:])
    # One gzip batch of two records: one append time for both.
    assert stamps[2] == stamps[3]

    for options in ({}, {"api_version": (0, 10)}):  # v2 batches, then magic 1 down-converted
        rows = _kafka_python_read(cluster, topic, 5, **options)
        assert [(r.offset, r.timestamp_type, r.timestamp) for r in rows] == [
            (i, 1, ts) for i, (_, ts) in enumerate(stamps)
        ], options

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap)
    tp = TopicPartition(topic, 0)
    found = consumer.offsets_for_times({tp: before_ms})[tp]
    assert found is not None and (found.offset, found.timestamp) == (0, stamps[0][1])
    found = consumer.offsets_for_times({tp: middle_ms + 1})[tp]
    assert found is not None and (found.offset, found.timestamp) == (2, stamps[2][1])
    assert consumer.offsets_for_times({tp: after_ms + 1})[tp] is None
    assert consumer.offsets_for_times({tp: OLD_MS})[tp].offset == 0  # not the producers' stamps
    consumer.close()

    # Followers keep the leader's stamped bytes: every replica's log is the same, byte for byte.
    logs = {
        log_file(partition_dir(d, topic, 0), 0).read_bytes() for d in cluster.broker_data_dirs()
    }
    assert len(logs) == 1
    (log,) = logs
    assert [(h.log_append_time, h.max_timestamp) for _, h in iter_batches(log)] == [
        (True, stamps[0][1]), (True, stamps[1][1]), (True, stamps[2][1]), (True, stamps[4][1]),
    ]  # fmt: skip


# -- message.timestamp.difference.max.ms ----------------------------------------------------------


def test_timestamps_too_far_from_now_are_refused(cluster: Any) -> None:
    from confluent_kafka import KafkaError, Producer
    from kafka import KafkaProducer
    from kafka.errors import InvalidTimestampError

    topic = _topic(cluster, "ts-diff", {"message.timestamp.difference.max.ms": "3600000"})

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    outcomes: list[Any] = []
    for stamp in (OLD_MS, _now_ms(), _now_ms() + 7_200_000):
        producer.produce(topic, key=b"k", value=b"v", timestamp=stamp,
                         on_delivery=lambda err, msg: outcomes.append(err))  # fmt: skip
        producer.flush(30)
    assert outcomes[1] is None
    for err in (outcomes[0], outcomes[2]):
        assert err is not None and err.code() == KafkaError.INVALID_TIMESTAMP, err

    # A refusal is fatal to an idempotent kafka-python producer (its choice): one per outcome.
    kp = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    with pytest.raises(InvalidTimestampError):
        kp.send(topic, key=b"k", value=b"old", timestamp_ms=OLD_MS).get(timeout=30)
    kp.close()
    kp = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    assert kp.send(topic, key=b"k", value=b"new").get(timeout=30).offset == 1
    kp.close()
    assert [(r.offset, r.value) for r in _kafka_python_read(cluster, topic, 2)] == [
        (0, b"v"), (1, b"new"),
    ]  # fmt: skip


# -- compacted topics ---------------------------------------------------------------------------


def test_compacted_topics_refuse_records_without_a_key(cluster: Any) -> None:
    from confluent_kafka import KafkaError
    from kafka import KafkaProducer
    from kafka.errors import InvalidRecordError

    topic = _topic(cluster, "compacted-keys", {"cleanup.policy": "compact"})
    delivered = _confluent_produce(
        cluster, topic, [(b"k1", b"v1"), (None, b"keyless"), (b"k1", None)], codec="snappy"
    )
    errors = [err for err, _ in delivered]
    assert errors[0] is None and errors[2] is None
    assert errors[1] is not None and errors[1].code() == KafkaError.INVALID_RECORD, errors[1]

    for api in (None, (0, 10)):  # Produce v3+ batches, then a magic 1 set up-converted
        options: dict[str, Any] = {} if api is None else {"api_version": api}
        kp = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", **options)
        with pytest.raises(InvalidRecordError):
            kp.send(topic, value=b"keyless").get(timeout=30)
        kp.close()
        kp = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", **options)
        kp.send(topic, key=b"k2", value=b"v2").get(timeout=30)
        kp.close()

    rows = _confluent_read(cluster, topic, 4)
    assert [(m.offset(), m.key(), m.value()) for m in rows] == [
        (0, b"k1", b"v1"), (1, b"k1", None), (2, b"k2", b"v2"), (3, b"k2", b"v2"),
    ]  # fmt: skip


def test_produce_v8_names_the_refused_records(cluster: Any) -> None:
    """KIP-467: the answer's record errors give each refused record's index and Kafka's reason."""
    from kafka.protocol.producer import ProduceRequest, ProduceResponse

    from pafka.records.encoding import build_batch
    from tests.integration.wire import request_once

    topic = _topic(cluster, "compacted-v8", {"cleanup.policy": "compact"})
    batch = build_batch([(b"k", b"v", ()), (None, b"v", ()), (None, b"w", ())])
    R = ProduceRequest[8]
    request = R(
        transactional_id=None,
        acks=1,
        timeout_ms=10_000,
        topic_data=[
            R.TopicProduceData(
                name=topic,
                partition_data=[R.TopicProduceData.PartitionProduceData(index=0, records=batch)],
            )
        ],
    )
    response: Any = request_once(cluster.leader_address(topic, 0), request, ProduceResponse, 8)
    part = response.responses[0].partition_responses[0]
    assert (part.error_code, part.error_message) == (87, "One or more records have been rejected")
    reason = f"Compacted topic cannot accept message without key in topic partition {topic}-0."
    assert [(e.batch_index, e.batch_index_error_message) for e in part.record_errors] == [
        (1, reason), (2, reason),
    ]  # fmt: skip


# -- the gateway --------------------------------------------------------------------------------


def test_gateway_refuses_keyless_records_to_compacted_topics(cluster: Any) -> None:
    import httpx

    topic = _topic(cluster, "rest-compacted", {"cleanup.policy": "compact"})
    url = f"{cluster.gateways[0]}/topics/{topic}"
    headers = {"Content-Type": "application/vnd.kafka.json.v2+json"}

    def post(records: list[dict[str, Any]]) -> httpx.Response:
        return httpx.post(url, json={"records": records}, headers=headers, timeout=60)

    refused = post([{"key": "a", "value": 1, "partition": 0}, {"value": 2, "partition": 0}])
    assert refused.status_code == 400, refused.text
    body = refused.json()
    assert body["error_code"] == 40001
    assert "2 of 2 records not written" in body["message"]  # one batch: refused whole
    reason = f"Compacted topic cannot accept message without key in topic partition {topic}-0."
    for entry in body["offsets"]:
        assert (entry["partition"], entry["offset"], entry["error_code"]) == (0, None, 1)
        assert reason in entry["error"] and "record 1 of its batch" in entry["error"]

    written = post([{"key": "a", "value": 1, "partition": 0}, {"key": "a", "value": None}])
    assert written.status_code == 200, written.text
    assert [o["offset"] for o in written.json()["offsets"]] == [0, 1]


def test_gateway_reads_show_log_append_time(cluster: Any) -> None:
    import httpx

    topic = _topic(cluster, "rest-append-time", {"message.timestamp.type": "LogAppendTime"})
    before_ms = _now_ms()
    _confluent_produce(cluster, topic, [(b"k", b"1")], codec="zstd")
    after_ms = _now_ms()
    response = httpx.get(
        f"{cluster.gateways[1]}/topics/{topic}/partitions/0/records",
        params={"offset": 0},
        headers={"Accept": "application/vnd.kafka.binary.v2+json"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    (record,) = response.json()["records"]
    assert record["timestamp_type"] == "LOG_APPEND_TIME"
    assert before_ms <= record["timestamp"] <= after_ms
