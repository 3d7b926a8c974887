"""Transactions by hand over the wire: a producer id, transactional batches, markers.

The coordinator's side (InitProducerId with a transactional id, EndTxn) is not needed to test
what partitions do: an idempotent producer id writes transactional batches and the test sends
WriteTxnMarkers itself, as a coordinator would.
"""

from __future__ import annotations

import socket
import time
from typing import Any

from kafka.protocol.producer import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceResponse,
)
from kafka.protocol.producer.transaction import WriteTxnMarkersRequest, WriteTxnMarkersResponse

from pafka.records.encoding import build_batch
from tests.integration.wire import produce_request, request_once, roundtrip

MARKERS_VERSION = 1
TRANSACTIONAL_ID = "txn-tests"


def init_producer_id(address: tuple[str, int]) -> int:
    init = request_once(
        address,
        InitProducerIdRequest[2](transactional_id=None, transaction_timeout_ms=60_000),
        InitProducerIdResponse,
        2,
    )
    assert init.error_code == 0
    return int(init.producer_id)


def txn_batch(
    values: list[bytes], producer_id: int, epoch: int, seq: int, *, transactional: bool = True
) -> bytes:
    return build_batch(
        [(None, v, ()) for v in values],
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=transactional,
        timestamp_ms=1_700_000_000_000,
    )


def produce(
    sock: socket.socket,
    topic: str,
    records: bytes,
    cid: int = 1,
    transactional_id: str | None = TRANSACTIONAL_ID,
) -> Any:
    """One batch to partition 0 with acks=all; the partition's response."""
    request = produce_request(topic, 0, records, acks=-1)
    request.transactional_id = transactional_id
    resp = roundtrip(sock, request, ProduceResponse, 8, cid)
    return resp.responses[0].partition_responses[0]


def write_marker(
    address: tuple[str, int],
    topic: str,
    producer_id: int,
    epoch: int,
    *,
    commit: bool,
    coordinator_epoch: int = 0,
    partitions: tuple[int, ...] = (0,),
    version: int = MARKERS_VERSION,
) -> list[int]:
    """WriteTxnMarkers for ``topic``'s partitions; the error code of each."""
    R = WriteTxnMarkersRequest[version]
    marker = R.WritableTxnMarker(
        producer_id=producer_id,
        producer_epoch=epoch,
        transaction_result=commit,
        topics=[
            R.WritableTxnMarker.WritableTxnMarkerTopic(
                name=topic, partition_indexes=list(partitions)
            )
        ],
        coordinator_epoch=coordinator_epoch,
    )
    resp = request_once(address, R(markers=[marker]), WriteTxnMarkersResponse, version)
    (result,) = resp.markers
    assert result.producer_id == producer_id
    return [p.error_code for t in result.topics for p in t.partitions]


def consume(bootstrap: str, topic: str, *, committed: bool) -> list[tuple[int, bytes]]:
    """(offset, value) of every record of partition 0 a kafka-python consumer reads from the
    start up to its end offset (the last stable offset when ``committed``)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        isolation_level="read_committed" if committed else "read_uncommitted",
    )
    tp = TopicPartition(topic, 0)
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        got: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 30
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, f"stalled at {consumer.position(tp)} of {end}"
            for records in consumer.poll(timeout_ms=1000).values():
                got += [(r.offset, r.value) for r in records]
        return got
    finally:
        consumer.close()


def consume_librdkafka(bootstrap: str, topic: str, count: int) -> list[tuple[int, bytes]]:
    """The first ``count`` records a read_committed librdkafka consumer gets (and, to show
    nothing else is returned, whatever more arrives in the following second)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer
    from confluent_kafka import TopicPartition as Tp

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"txn-{topic}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    try:
        consumer.assign([Tp(topic, 0, OFFSET_BEGINNING)])
        got: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 30
        settle: float | None = None
        while settle is None or time.monotonic() < settle:
            assert time.monotonic() < deadline, f"librdkafka got {got}"
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append((message.offset(), message.value()))
            if settle is None and len(got) >= count:
                settle = time.monotonic() + 1.0
        return got
    finally:
        consumer.close()


def list_latest(address: tuple[str, int], topic: str, isolation_level: int) -> int:
    from kafka.protocol.consumer import ListOffsetsRequest, ListOffsetsResponse

    R = ListOffsetsRequest[2]
    req = R(
        replica_id=-1,
        isolation_level=isolation_level,
        topics=[
            R.ListOffsetsTopic(
                name=topic,
                partitions=[
                    R.ListOffsetsTopic.ListOffsetsPartition(partition_index=0, timestamp=-1)
                ],
            )
        ],
    )
    resp = request_once(address, req, ListOffsetsResponse, 2)
    part = resp.topics[0].partitions[0]
    assert part.error_code == 0
    return int(part.offset)


def fetch_raw(
    address: tuple[str, int], topic: str, version: int, isolation_level: int, *, session: bool
) -> Any:
    """One partition of a Fetch from offset 0, sessionless or opening a session (v7+)."""
    from kafka.protocol.consumer import FetchRequest, FetchResponse

    R = FetchRequest[version]
    fields: dict[str, Any] = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": isolation_level,
        "session_id": 0,
        "session_epoch": 0 if session else -1,
        "topics": [
            R.FetchTopic(
                topic=topic,
                partitions=[
                    R.FetchTopic.FetchPartition(
                        partition=0, fetch_offset=0, partition_max_bytes=1 << 20
                    )
                ],
            )
        ],
    }
    resp = request_once(address, R(**fields), FetchResponse, version)
    assert (resp.session_id != 0) == session if version >= 7 else True
    return resp.responses[0].partitions[0]
