"""Range reads as newline-delimited JSON, and the hot path's answers, on real processes.

An NDJSON read gives the JSON answer's records one a line, where to read on in its headers;
the raw ASGI path keeps the route's metrics labels and FastAPI's own refusals; concurrent
one-record produces still share Produce requests (the producer's linger).
"""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

V2_JSON = "application/vnd.kafka.json.v2+json"
NDJSON = "application/x-ndjson"


def _topic(cluster: Any, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=1, replication_factor=3)
    return name


def _samples(url: str, name: str, **labels: str) -> float:
    text = httpx.get(url + "/metrics", timeout=5).text
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def test_ndjson_reads_are_the_json_reads_records_a_line(cluster: Any) -> None:
    base = cluster.gateways[0]
    topic = _topic(cluster, "ndjson")
    values = [{"n": 1}, "two", [3, 3.5], None, 1e-05]
    records = [{"key": f"k{i}", "value": v} for i, v in enumerate(values)]
    produced = httpx.post(
        f"{base}/topics/{topic}",
        content=json.dumps({"records": records}),
        headers={"Content-Type": V2_JSON},
        timeout=30,
    )
    assert produced.status_code == 200, produced.text
    path = f"{base}/topics/{topic}/partitions/0/records"
    query = {"offset": 1, "max_records": 3}
    whole = httpx.get(path, params=query, headers={"Accept": V2_JSON}, timeout=30)
    lines = httpx.get(path, params=query, headers={"Accept": NDJSON}, timeout=30)
    assert lines.status_code == 200, lines.text
    assert lines.headers["content-type"] == NDJSON
    assert lines.text.endswith("\n")
    expected = whole.json()
    assert [json.loads(line) for line in lines.text.splitlines()] == expected["records"]
    assert [r["value"] for r in expected["records"]] == values[1:4]
    assert int(lines.headers["Pafka-Next-Offset"]) == expected["next_offset"] == 4
    assert int(lines.headers["Pafka-High-Watermark"]) == expected["high_watermark"] == 5
    assert int(lines.headers["Pafka-Log-Start-Offset"]) == expected["log_start_offset"] == 0
    # Past the end: no lines, and the headers still say where to read on.
    end = httpx.get(path, params={"offset": 5}, headers={"Accept": NDJSON}, timeout=30)
    assert (end.status_code, end.content, end.headers["Pafka-Next-Offset"]) == (200, b"", "5")
    # A client preferring another format gets it.
    preferred = httpx.get(
        path, params=query, headers={"Accept": f"{V2_JSON}, {NDJSON}"}, timeout=30
    )
    assert preferred.json() == expected


def test_hot_routes_keep_metrics_and_fastapis_refusals(cluster: Any) -> None:
    base = cluster.gateways[1]
    topic = _topic(cluster, "hot")
    labels = {"handler": "/topics/{topic}", "method": "POST", "status": "200"}
    before = _samples(base, "http_requests_total", **labels)
    body = json.dumps({"records": [{"value": 1}]})
    answer = httpx.post(f"{base}/topics/{topic}", content=body, timeout=30)
    assert answer.status_code == 200, answer.text
    assert _samples(base, "http_requests_total", **labels) == before + 1
    read = f"{base}/topics/{topic}/partitions/0/records"
    refused = httpx.get(read, params={"offset": "-1"}, timeout=30)
    assert refused.status_code == 422
    assert refused.json()["error_code"] == 42200
    assert refused.json()["message"] == "query.offset: Input should be greater than or equal to 0"
    read_labels = {"handler": "/topics/{topic}/partitions/{partition}/records", "status": "422"}
    assert _samples(base, "http_requests_total", **read_labels) >= 1


def test_concurrent_single_record_produces_share_produce_requests(cluster: Any) -> None:
    base = cluster.gateways[0]
    topic = _topic(cluster, "linger")
    leader = cluster.partition_state(topic, 0).leader
    broker = cluster.local.broker(leader).http_url
    name = "kafka_network_requestmetrics_requests_total"
    before = _samples(broker, name, request="Produce")
    sends = 200
    with httpx.Client(timeout=30) as client, ThreadPoolExecutor(32) as pool:
        statuses = list(
            pool.map(
                lambda i: (
                    client.post(
                        f"{base}/topics/{topic}/partitions/0",
                        content=json.dumps({"records": [{"value": i}]}),
                    ).status_code
                ),
                range(sends),
            )
        )
    assert statuses == [200] * sends
    # Every send acknowledged, in fewer Produce requests than sends (other tests' produces
    # to this broker can only add to the count).
    assert _samples(broker, name, request="Produce") - before < sends
