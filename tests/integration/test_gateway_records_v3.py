"""Confluent REST v3 produce on real processes: one record, a body of several, and a chunked
stream whose reports come back while it is still being written; records checked with
kafka-python (key, value, headers, timestamp, and the partition its own partitioner picks).
Bad records are answered in the stream, which goes on; a bad request is refused whole."""

from __future__ import annotations

import base64
import json
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.integration.gateway_process import gateway_process
from tests.integration.test_gateway_records import (
    PARTITIONS,
    b64,
    consume_all,
    kafka_python_partitions,
    new_topic,
)


def cluster_id(base: str) -> str:
    return str(httpx.get(f"{base}/v3/clusters").json()["data"][0]["cluster_id"])


def records_path(base: str, topic: str) -> str:
    return f"{base}/v3/clusters/{cluster_id(base)}/topics/{topic}/records"


def reports(body: bytes) -> list[dict[str, Any]]:
    decoder, text, found, at = json.JSONDecoder(), body.decode(), [], 0
    while text[at:].strip():
        at += len(text[at:]) - len(text[at:].lstrip())
        value, at = decoder.raw_decode(text, at)
        found.append(value)
    return found


def produce(base: str, topic: str, *items: Any, raw: bytes | None = None) -> list[dict[str, Any]]:
    body = raw if raw is not None else b"".join(json.dumps(i).encode() for i in items)
    response = httpx.post(
        records_path(base, topic),
        content=body,
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    return reports(response.content)


def read_back(cluster: Any, topic: str, expected: int = 0) -> list[Any]:
    return sorted(consume_all(cluster, topic, expected), key=lambda r: (r.partition, r.offset))


def test_one_record_is_written_and_reported(cluster: Any) -> None:
    base = cluster.gateways[1]
    topic = new_topic(cluster, "v3-one")
    (report,) = produce(
        base,
        topic,
        {
            "partition_id": 1,
            "headers": [{"name": "trace", "value": b64(b"t-1")}, {"name": "empty", "value": None}],
            "key": {"type": "STRING", "data": "user-1"},
            "value": {"type": "JSON", "data": {"amount": 12}},
            "timestamp": "2024-05-01T12:00:00.123Z",
        },
    )
    assert report == {
        "error_code": 200,
        "cluster_id": cluster_id(base),
        "topic_name": topic,
        "partition_id": 1,
        "offset": 0,
        "timestamp": "2024-05-01T12:00:00.123Z",
        "key": {"type": "STRING", "size": 6},
        "value": {"type": "JSON", "size": 13},
    }
    (row,) = read_back(cluster, topic)
    assert (row.partition, row.offset, row.key, row.value) == (1, 0, b"user-1", b'{"amount":12}')
    assert row.headers == [("trace", b"t-1"), ("empty", None)]
    assert row.timestamp == 1714564800123


def test_records_go_where_kafkas_partitioner_puts_them_and_report_in_order(cluster: Any) -> None:
    base = cluster.gateways[1]
    topic = new_topic(cluster, "v3-keys")
    keys = [f"key-{i}".encode() for i in range(12)]
    items = [
        {"key": {"type": "BINARY", "data": b64(k)}, "value": {"type": "STRING", "data": str(i)}}
        for i, k in enumerate(keys)
    ]
    before_ms = int(time.time() * 1000)
    found = produce(base, topic, *items, {"value": {"type": "BINARY", "data": b64(b"keyless")}})
    assert [r["error_code"] for r in found] == [200] * 13
    expected = kafka_python_partitions(cluster, topic, keys)
    assert [r["partition_id"] for r in found[:12]] == expected
    assert "key" not in found[12] and found[12]["value"] == {"type": "BINARY", "size": 7}
    rows = {(r.partition, r.offset): r for r in read_back(cluster, topic)}
    for i, report in enumerate(found[:12]):
        row = rows[(report["partition_id"], report["offset"])]
        assert (row.key, row.value) == (keys[i], str(i).encode())
        assert row.timestamp >= before_ms
        # The report gives the timestamp the record was stored with (the time of its send).
        stamped = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(row.timestamp // 1000))
        assert report["timestamp"] == f"{stamped}.{row.timestamp % 1000:03d}Z"


def test_a_bad_record_is_answered_in_the_stream_which_goes_on(cluster: Any) -> None:
    base = cluster.gateways[1]
    topic = new_topic(cluster, "v3-bad")
    good = b'{"partition_id": 0, "value": {"type": "STRING", "data": "ok"}}'
    body = b"\n".join(
        [
            good,
            b'{"value": {"type": "BINARY", "data": "not base64!"}}',
            b'{"key": {"type": "BINARY", "data": 5}}',
            b'{"value": {"type": "AVRO", "data": {}}}',
            b'{"value": {"data": "no type"}}',
            b'{"partition_id": 99, "value": {"type": "STRING", "data": "x"}}',
            b'{"value" 1}',
            b"[1, 2]",
            b'{"timestamp": "yesterday"}',
            good,
        ]
    )
    found = produce(base, topic, raw=body)
    assert [r["error_code"] for r in found] == [
        200, 42202, 42201, 42202, 42202, 40402, 40001, 42200, 42200, 200,
    ]  # fmt: skip
    assert [r["offset"] for r in (found[0], found[-1])] == [0, 1]
    assert all(r["message"] for r in found[1:-1])


def test_bytes_that_start_no_value_end_the_stream_after_what_came_before(cluster: Any) -> None:
    base = cluster.gateways[1]
    topic = new_topic(cluster, "v3-broken")
    body = b'{"value": {"type": "STRING", "data": "a"}} 42 {"value": {"type": "STRING"}}'
    found = produce(base, topic, raw=body)
    assert [r["error_code"] for r in found] == [200, 40001]
    assert "expected a JSON object" in found[1]["message"]
    cut = produce(base, topic, raw=b'{"value": {"type": "STRING", "data": "b"}} {"value": {')
    assert [r["error_code"] for r in cut] == [200, 40001]


def test_a_bad_request_is_refused_whole(cluster: Any) -> None:
    base = cluster.gateways[1]
    topic = new_topic(cluster, "v3-refused")
    headers = {"Content-Type": "application/json"}
    missing = httpx.post(records_path(base, "no-such-topic-v3"), content=b"{}", headers=headers)
    assert (missing.status_code, missing.json()["error_code"]) == (404, 40401)
    path = f"{base}/v3/clusters/not-this-one/topics/{topic}/records"
    other = httpx.post(path, content=b"{}", headers=headers)
    assert (other.status_code, other.json()["error_code"]) == (404, 40400)
    xml = httpx.post(
        records_path(base, topic), content=b"<a/>", headers={"Content-Type": "text/xml"}
    )
    assert (xml.status_code, xml.json()["error_code"]) == (415, 41501)
    acks = httpx.post(records_path(base, topic) + "?acks=2", content=b"{}", headers=headers)
    assert (acks.status_code, acks.json()["error_code"]) == (422, 42200)


class ChunkedStream:
    """One chunked POST on a raw socket: records written a chunk at a time while the reports
    are read from the same connection."""

    def __init__(self, url: str, headers: str = "") -> None:
        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
        self.sock.sendall(
            f"POST {parts.path} HTTP/1.1\r\nHost: {parts.hostname}\r\n{headers}"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )
        self.received = b""
        self.head = b""

    def write(self, data: bytes) -> None:
        self.sock.sendall(b"%x\r\n%s\r\n" % (len(data), data))

    def end(self) -> None:
        self.sock.sendall(b"0\r\n\r\n")

    def reports(self, count: int) -> list[dict[str, Any]]:
        """Read until ``count`` reports have come in all (the response is chunked too)."""
        while True:
            if not self.head and b"\r\n\r\n" in self.received:
                self.head, self.received = self.received.split(b"\r\n\r\n", 1)
            if self.head:
                found = reports(_dechunked(self.received))
                if len(found) >= count:
                    return found
            data = self.sock.recv(65536)
            assert data, "the gateway closed the stream"
            self.received += data


def _dechunked(data: bytes) -> bytes:
    body, at = b"", 0
    while (line_end := data.find(b"\r\n", at)) >= 0:
        size = int(data[at:line_end], 16)
        if len(data) < line_end + 2 + size + 2:
            break
        body += data[line_end + 2 : line_end + 2 + size]
        at = line_end + 2 + size + 2
    return body


def test_a_chunked_stream_reports_each_record_before_the_body_ends(cluster: Any) -> None:
    base = cluster.gateways[0]
    topic = new_topic(cluster, "v3-stream")
    stream = ChunkedStream(records_path(base, topic))
    try:
        for i in range(5):
            value = base64.b64encode(f"r{i}".encode()).decode()
            stream.write(
                json.dumps({"partition_id": 2, "value": {"type": "BINARY", "data": value}}).encode()
            )
            # Answered while the request is still open: the gateway has not seen its end.
            assert stream.reports(i + 1)[i]["offset"] == i
        stream.write(b'{"partition_id": 2, "value": ')  # a record split across chunks
        stream.write(b'{"type": "STRING", "data": "split"}}\n')
        assert stream.reports(6)[5]["offset"] == 5
        stream.end()
        assert stream.head.startswith(b"HTTP/1.1 200")
        assert b"transfer-encoding: chunked" in stream.head.lower()
    finally:
        stream.sock.close()
    values = [r.value for r in read_back(cluster, topic)]
    assert values == [b"r0", b"r1", b"r2", b"r3", b"r4", b"split"]


@pytest.mark.parametrize("acks", ["1", "all"])
def test_each_partitions_records_are_written_in_the_order_of_the_body(
    cluster: Any, acks: str
) -> None:
    """Chunks spread over every partition, one record in three to a partition of its own:
    whatever the chunks' sends overlap with, each partition holds its records in body order."""
    base = cluster.gateways[1]
    topic = new_topic(cluster, "v3-order")

    def partition_of(n: int) -> int:
        return n % (PARTITIONS - 1) if n % 3 else PARTITIONS - 1

    def body() -> Any:
        for chunk in range(40):
            yield b"".join(
                json.dumps(
                    {"partition_id": partition_of(n), "value": {"type": "JSON", "data": n}}
                ).encode()
                + b"\n"
                for n in range(chunk * 10, chunk * 10 + 10)
            )

    response = httpx.post(
        records_path(base, topic) + f"?acks={acks}",
        content=body(),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    found = reports(response.content)
    assert [r["partition_id"] for r in found] == [partition_of(n) for n in range(400)]
    rows = read_back(cluster, topic, expected=400)
    for partition in range(PARTITIONS):
        values = [int(r.value) for r in rows if r.partition == partition]
        assert values == [n for n in range(400) if partition_of(n) == partition]
        offsets = [r["offset"] for r in found if r["partition_id"] == partition]
        assert offsets == list(range(len(values)))


def test_a_client_that_expects_100_continue_is_told_to_go_on(cluster: Any) -> None:
    parts = urlsplit(records_path(cluster.gateways[0], new_topic(cluster, "v3-expect")))
    body = b'{"value": {"type": "STRING", "data": "after 100"}}'
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(
            f"POST {parts.path} HTTP/1.1\r\nHost: {parts.hostname}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Expect: 100-continue\r\n\r\n".encode()
        )
        assert sock.recv(25).startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(body)
        answer = b""
        while not answer.endswith(b"0\r\n\r\n"):
            answer += sock.recv(65536)
    assert b'"error_code":200' in answer


def test_a_token_limited_to_its_topics_streams_to_them_and_is_refused_others(
    cluster: Any, tmp_path: Path
) -> None:
    """A glob token's check reads no produce body: a stream is answered while it is written."""
    mine, other = new_topic(cluster, "v3-token"), new_topic(cluster, "v3-token-other")
    env = {"PAFKA_GATEWAY_TOKENS": f"narrow {mine}"}
    with gateway_process(cluster.zk_connect, tmp_path, env) as url:
        auth = "Authorization: Bearer narrow\r\n"
        open_base = cluster.gateways[0]  # configured without tokens: the cluster id
        stream = ChunkedStream(records_path(open_base, mine).replace(open_base, url), auth)
        try:
            stream.write(b'{"value": {"type": "STRING", "data": "mine"}}')
            assert stream.reports(1)[0]["error_code"] == 200
            stream.end()
        finally:
            stream.sock.close()
        refused = httpx.post(
            records_path(open_base, other).replace(open_base, url),
            content=b'{"value": {"type": "STRING", "data": "not mine"}}',
            headers={"Content-Type": "application/json", "Authorization": "Bearer narrow"},
        )
        assert (refused.status_code, refused.json()["error_code"]) == (403, 40301)
    assert [r.value for r in read_back(cluster, mine)] == [b"mine"]
    assert read_back(cluster, other) == []
