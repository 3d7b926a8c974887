"""Raw Kafka requests over a socket, encoded by kafka-python (independent of pafka's codec)."""

from __future__ import annotations

import socket
import struct
from typing import Any


def read_exact(sock: socket.socket, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        got = sock.recv(n - len(chunks))
        if not got:
            raise ConnectionError("closed by broker")
        chunks += got
    return bytes(chunks)


def roundtrip(sock: socket.socket, request: Any, response_cls: Any, version: int, cid: int) -> Any:
    request.with_header(correlation_id=cid, client_id="pafka-tests")
    sock.sendall(bytes(request.encode(version=version, header=True, framed=True)))
    (size,) = struct.unpack(">i", read_exact(sock, 4))
    response = response_cls.decode(read_exact(sock, size), version=version, header=True)
    assert response.header.correlation_id == cid
    return response


def request_once(address: tuple[str, int], request: Any, response_cls: Any, version: int) -> Any:
    with socket.create_connection(address, timeout=15) as sock:
        return roundtrip(sock, request, response_cls, version, 1)


def produce_request(topic: str, index: int, records: bytes, acks: int = 1) -> Any:
    """Produce v8 of one record batch to one partition."""
    from kafka.protocol.producer import ProduceRequest

    return ProduceRequest[8](
        transactional_id=None,
        acks=acks,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest[8].TopicProduceData(
                name=topic,
                partition_data=[
                    ProduceRequest[8].TopicProduceData.PartitionProduceData(
                        index=index, records=records
                    )
                ],
            )
        ],
    )
