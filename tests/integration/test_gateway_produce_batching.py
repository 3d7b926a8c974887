"""Concurrent small produces through the gateway share record batches, and one caller's refused
record fails only that caller's request, on the shared cluster."""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from pafka.records.batch import iter_batches

BATCHES = "application/vnd.pafka.batches"


def _post_all(url: str, bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    with httpx.Client(timeout=30) as client, ThreadPoolExecutor(32) as pool:
        return list(pool.map(lambda body: client.post(url, content=json.dumps(body)), bodies))


def test_concurrent_one_record_produces_share_batches_and_keep_their_offsets(
    cluster: Any,
) -> None:
    base = cluster.gateways[0]
    topic = f"merged-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    sends = 200
    answers = _post_all(
        f"{base}/topics/{topic}/partitions/0",
        [{"records": [{"key": f"k{i}", "value": i}]} for i in range(sends)],
    )
    assert [a.status_code for a in answers] == [200] * sends
    offsets = {a.json()["offsets"][0]["offset"]: i for i, a in enumerate(answers)}
    assert sorted(offsets) == list(range(sends))  # every offset once, no gap

    read = httpx.get(
        f"{base}/topics/{topic}/partitions/0/records",
        params={"offset": 0, "max_records": sends},
        timeout=30,
    )
    assert read.status_code == 200, read.text
    assert {r["offset"]: r["value"] for r in read.json()["records"]} == offsets

    raw = httpx.get(
        f"{base}/topics/{topic}/partitions/0/records",
        params={"offset": 0, "max_records": sends},
        headers={"Accept": BATCHES},
        timeout=30,
    )
    assert raw.status_code == 200, raw.text
    batches = [header for _, header in iter_batches(raw.content)]
    assert sum(h.records_count for h in batches) == sends
    assert len(batches) < sends  # sends of the same linger were written as one batch


def test_a_refused_record_fails_only_its_own_request(cluster: Any) -> None:
    base = cluster.gateways[1]
    topic = f"merged-compacted-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(
        topic, partitions=1, replication_factor=3, config={"cleanup.policy": "compact"}
    )
    # A compacted topic refuses a keyless record; the broker refuses the whole record set it
    # came in, so the good requests merged with it must be sent again on their own.
    bodies: list[dict[str, Any]] = [{"records": [{"key": f"k{i}", "value": i}]} for i in range(60)]
    for bad in (7, 31, 52):
        bodies[bad] = {"records": [{"value": "no key"}]}
    answers = _post_all(f"{base}/topics/{topic}/partitions/0", bodies)
    for i, answer in enumerate(answers):
        if i in (7, 31, 52):
            assert answer.status_code == 400, answer.text
            assert "record 0 of its batch" in answer.json()["message"], answer.text
            assert answer.json()["offsets"][0]["offset"] is None
        else:
            assert answer.status_code == 200, (i, answer.text)
    written = sorted(a.json()["offsets"][0]["offset"] for a in answers if a.status_code == 200)
    assert written == list(range(57))
