"""Idempotent producers over the wire: duplicates get the original offset, gaps are refused."""

from __future__ import annotations

import socket
import uuid

from kafka.protocol.producer import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
)

from tests.integration.wire import roundtrip
from tests.unit.records_util import build_batch

OUT_OF_ORDER_SEQUENCE_NUMBER = 45


def _produce(sock: socket.socket, topic: str, records: bytes, cid: int):  # type: ignore[no-untyped-def]
    R = ProduceRequest[8]
    req = R(
        transactional_id=None,
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            R.TopicProduceData(
                name=topic,
                partition_data=[R.TopicProduceData.PartitionProduceData(index=0, records=records)],
            )
        ],
    )
    return roundtrip(sock, req, ProduceResponse, 8, cid).responses[0].partition_responses[0]


def test_retried_batches_are_not_written_twice(cluster) -> None:  # type: ignore[no-untyped-def]
    topic = f"idem-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    with socket.create_connection(cluster.leader_address(topic, 0), timeout=15) as sock:
        init = roundtrip(
            sock,
            InitProducerIdRequest[2](transactional_id=None, transaction_timeout_ms=60_000),
            InitProducerIdResponse,
            2,
            1,
        )
        assert init.error_code == 0 and init.producer_id >= 0
        pid = init.producer_id

        def batch(seq: int, n: int) -> bytes:
            return build_batch(
                [b"v%d" % i for i in range(n)], producer_id=pid, producer_epoch=0, base_sequence=seq
            )

        first = _produce(sock, topic, batch(0, 3), 2)
        assert (first.error_code, first.base_offset) == (0, 0)
        retry = _produce(sock, topic, batch(0, 3), 3)
        assert (retry.error_code, retry.base_offset) == (0, 0)
        second = _produce(sock, topic, batch(3, 2), 4)
        assert (second.error_code, second.base_offset) == (0, 3)
        gap = _produce(sock, topic, batch(9, 1), 5)
        assert gap.error_code == OUT_OF_ORDER_SEQUENCE_NUMBER
        after = _produce(sock, topic, batch(5, 1), 6)
        assert (after.error_code, after.base_offset) == (0, 5)
