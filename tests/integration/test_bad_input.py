"""Bad input gets a clear error and never crashes, hangs or corrupts a broker.

These talk to a real broker over raw sockets, building requests with kafka-python's message
classes (an independent encoder), so that what is tested is the broker's handling, not our codec.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.admin import CreateTopicsRequest, CreateTopicsResponse
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.record.default_records import DefaultRecordBatchBuilder

from tests.integration.wire import roundtrip

CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
INVALID_TOPIC_EXCEPTION = 17


def _batch(values: list[bytes]) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 24,
    )
    for i, value in enumerate(values):
        builder.append(i, timestamp=None, key=None, value=value, headers=[])
    return bytes(builder.build())


class Conn:
    def __init__(self, address: tuple[str, int]) -> None:
        self.sock = socket.create_connection(address, timeout=15)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def request(self, req, response_cls, version: int):  # type: ignore[no-untyped-def]
        self.correlation_id += 1
        return roundtrip(self.sock, req, response_cls, version, self.correlation_id)

    def is_closed_by_peer(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, TimeoutError):
            return True


def _produce(conn: Conn, topic: str, records: bytes, partition: int = 0):  # type: ignore[no-untyped-def]
    R = ProduceRequest[8]
    req = R(
        transactional_id=None,
        acks=1,
        timeout_ms=10_000,
        topic_data=[
            R.TopicProduceData(
                name=topic,
                partition_data=[
                    R.TopicProduceData.PartitionProduceData(index=partition, records=records)
                ],
            )
        ],
    )
    resp = conn.request(req, ProduceResponse, 8)
    return resp.responses[0].partition_responses[0]


def test_illegal_topic_names_are_refused_without_a_directory(cluster) -> None:  # type: ignore[no-untyped-def]
    c = Conn(cluster.broker_address(cluster.broker_ids()[0]))
    try:
        for name in ["bad name", "..", ".", "x" * 250, "ü-topic", "a/b"]:
            R = CreateTopicsRequest[4]
            req = R(
                topics=[
                    R.CreatableTopic(
                        name=name,
                        num_partitions=1,
                        replication_factor=1,
                        assignments=[],
                        configs=[],
                    )
                ],
                timeout_ms=10_000,
                validate_only=False,
            )
            resp = c.request(req, CreateTopicsResponse, 4)
            assert resp.topics[0].error_code == INVALID_TOPIC_EXCEPTION, name
    finally:
        c.close()
    for data_dir in cluster.broker_data_dirs():
        assert not any(
            p.name.startswith(("bad name", "ü-topic", "x" * 200)) for p in data_dir.iterdir()
        )


def test_negative_and_oversized_frames_close_the_connection(cluster) -> None:  # type: ignore[no-untyped-def]
    address = cluster.broker_address(cluster.broker_ids()[0])
    for length in (-1, -(2**31), 2**31 - 1):
        c = Conn(address)
        c.send_raw(struct.pack(">i", length) + b"\x00" * 16)
        assert c.is_closed_by_peer()
        c.close()
    # The broker still serves other clients.
    c = Conn(address)
    resp = c.request(MetadataRequest[1](topics=None), MetadataResponse, 1)
    assert len(resp.brokers) == len(cluster.broker_ids())
    c.close()


def test_bad_crc_is_refused_and_not_stored(cluster) -> None:  # type: ignore[no-untyped-def]
    topic = f"crc-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    c = Conn(cluster.leader_address(topic, 0))
    try:
        good = _batch([b"fine"])
        assert _produce(c, topic, good).error_code == 0
        bad = bytearray(_batch([b"tampered"]))
        bad[-1] ^= 0xFF
        result = _produce(c, topic, bytes(bad))
        assert result.error_code == CORRUPT_MESSAGE
        after = _produce(c, topic, good)
        assert after.error_code == 0
        assert after.base_offset == 1, "the corrupt batch must not have taken an offset"
    finally:
        c.close()


def test_batch_above_max_message_bytes_is_refused(cluster) -> None:  # type: ignore[no-untyped-def]
    topic = f"big-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(
        topic, partitions=1, replication_factor=1, config={"max.message.bytes": "2048"}
    )
    c = Conn(cluster.leader_address(topic, 0))
    try:
        assert _produce(c, topic, _batch([b"x" * 4096])).error_code == MESSAGE_TOO_LARGE
        ok = _produce(c, topic, _batch([b"x" * 100]))
        assert ok.error_code == 0 and ok.base_offset == 0
    finally:
        c.close()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(garbage=st.binary(min_size=0, max_size=512))
def test_garbage_never_crashes_the_broker(cluster, garbage: bytes) -> None:  # type: ignore[no-untyped-def]
    address = cluster.broker_address(cluster.broker_ids()[0])
    c = Conn(address)
    try:
        c.send_raw(struct.pack(">i", len(garbage)) + garbage)
        c.sock.settimeout(2)
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            c.sock.recv(4096)
    finally:
        c.close()
    probe = Conn(address)
    try:
        resp = probe.request(MetadataRequest[1](topics=None), MetadataResponse, 1)
        assert resp.brokers
    finally:
        probe.close()
