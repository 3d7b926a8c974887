"""Transactions by hand over the wire: a producer id, transactional batches, markers.

The coordinator's side (InitProducerId with a transactional id, EndTxn) is not needed to test
what partitions do: an idempotent producer id writes transactional batches and the test sends
WriteTxnMarkers itself, as a coordinator would.
"""

from __future__ import annotations

import socket
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


def produce(sock: socket.socket, topic: str, records: bytes, cid: int = 1) -> Any:
    """One batch to partition 0 with acks=all; the partition's response."""
    resp = roundtrip(sock, produce_request(topic, 0, records, acks=-1), ProduceResponse, 8, cid)
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
) -> list[int]:
    """WriteTxnMarkers for ``topic``'s partitions; the error code of each."""
    R = WriteTxnMarkersRequest[MARKERS_VERSION]
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
    resp = request_once(address, R(markers=[marker]), WriteTxnMarkersResponse, MARKERS_VERSION)
    (result,) = resp.markers
    assert result.producer_id == producer_id
    return [p.error_code for t in result.topics for p in t.partitions]
