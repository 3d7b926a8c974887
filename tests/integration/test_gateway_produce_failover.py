"""A partition leader killed -9 while clients produce through the gateway with acks=all.

On a replication-factor-3 topic with min.insync.replicas=2, several clients keep posting
records while the leader dies. Every record the gateway answered 200 for must be readable
afterwards at the offset it reported, with its value; every failure must be a 503 with
Retry-After (a client may retry it), never a 200 for a record that was not acknowledged.
"""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.conftest import ClusterHandle
from tests.integration.conftest import own_cluster as started_cluster

CLIENTS = 4
RECORDS_PER_REQUEST = 5
RUN_BEFORE_KILL_S = 2.0
RUN_AFTER_KILL_S = 14.0  # past the 6 s ZooKeeper session timeout and a new leader's election
V2_JSON = "application/vnd.kafka.json.v2+json"


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with started_cluster(
        tmp_path_factory, "gateway-failover", brokers=3, controllers=2, gateways=1
    ) as handle:
        yield handle


class Client(threading.Thread):
    """Posts numbered records until told to stop; remembers every answer."""

    def __init__(self, base: str, topic: str, name: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.base, self.topic, self.name_, self.stop = base, topic, name, stop
        self.acknowledged: list[tuple[int, str]] = []  # (offset, value) of 200 answers
        self.failures: list[tuple[int, dict[str, Any], str | None]] = []
        self.success_starts: list[float] = []  # when each acknowledged request was sent

    def run(self) -> None:
        with httpx.Client(timeout=90) as http:
            n = 0
            while not self.stop.is_set():
                values = [f"{self.name_}-{n}-{i}" for i in range(RECORDS_PER_REQUEST)]
                n += 1
                started = time.monotonic()
                try:
                    response = http.post(
                        f"{self.base}/topics/{self.topic}?acks=all",
                        json={"records": [{"value": v} for v in values]},
                        headers={"Content-Type": V2_JSON},
                    )
                except httpx.HTTPError as exc:  # the gateway itself never goes away here
                    self.failures.append((0, {"error": repr(exc)}, None))
                    continue
                if response.status_code == 200:
                    for v, o in zip(values, response.json()["offsets"], strict=True):
                        assert o["error_code"] is None and o["partition"] == 0
                        self.acknowledged.append((o["offset"], v))
                    self.success_starts.append(started)
                else:
                    body = response.json()
                    self.failures.append(
                        (response.status_code, body, response.headers.get("retry-after"))
                    )
                    time.sleep(0.05)


def read_partition(base: str, topic: str) -> dict[int, Any]:
    found: dict[int, Any] = {}
    offset = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        response = httpx.get(
            f"{base}/topics/{topic}/partitions/0/records",
            params={"offset": offset, "max_records": 5000},
            headers={"Accept": V2_JSON},
            timeout=60,
        )
        if response.status_code == 503:  # metadata still settling
            time.sleep(0.5)
            continue
        assert response.status_code == 200, response.text
        body = response.json()
        for record in body["records"]:
            found[record["offset"]] = record["value"]
        if body["next_offset"] >= body["high_watermark"]:
            return found
        offset = body["next_offset"]
    raise AssertionError("could not read the partition back")


def test_acknowledged_records_survive_a_leader_kill(own_cluster: ClusterHandle) -> None:
    topic = f"rest-failover-{uuid.uuid4().hex[:6]}"
    own_cluster.create_topic(
        topic, partitions=1, replication_factor=3, config={"min.insync.replicas": "2"}
    )
    base = own_cluster.gateways[0]
    leader = own_cluster.partition_state(topic, 0).leader
    stop = threading.Event()
    clients = [Client(base, topic, f"c{i}", stop) for i in range(CLIENTS)]
    for c in clients:
        c.start()
    time.sleep(RUN_BEFORE_KILL_S)
    killed_at = time.monotonic()
    own_cluster.local.kill(f"broker-{leader}", signal.SIGKILL)
    time.sleep(RUN_AFTER_KILL_S)
    stop.set()
    for c in clients:
        c.join(120)
        assert not c.is_alive()

    new_leader = own_cluster.partition_state(topic, 0).leader
    acknowledged = [a for c in clients for a in c.acknowledged]
    failures = [f for c in clients for f in c.failures]
    # Requests sent after the kill that were acknowledged: the first one ends the outage.
    after_kill = sorted(t for c in clients for t in c.success_starts if t > killed_at)
    stored = read_partition(base, topic)

    statuses = Counter(status for status, _, _ in failures)
    codes = Counter(body.get("error_code") for _, body, _ in failures)
    reasons = Counter(body.get("message", "").split(": ", 1)[-1][:60] for _, body, _ in failures)
    outage = (after_kill[0] - killed_at) if after_kill else None
    print(
        f"\nleader {leader} killed -> new leader {new_leader}; "
        f"{len(acknowledged)} records acknowledged in 200s, {len(failures)} failed requests "
        f"{dict(statuses)} codes {dict(codes)}; first acknowledged request sent "
        f"{outage if outage is None else round(outage, 2)} s after the kill; "
        f"log holds {len(stored)} records; failure reasons {reasons.most_common(4)}"
    )

    assert new_leader not in (-1, leader)
    assert acknowledged, "nothing was acknowledged"
    assert after_kill, "nothing was acknowledged after the leader died"
    offsets = [o for o, _ in acknowledged]
    assert len(set(offsets)) == len(offsets), "two records acknowledged at one offset"
    lost = [(o, v) for o, v in acknowledged if stored.get(o) != v]
    assert not lost, f"{len(lost)} acknowledged records missing or different, e.g. {lost[:5]}"
    for status, body, retry_after in failures:
        assert status == 503, (status, body)
        assert retry_after is not None and body["error_code"] == 50003, body
        # The body still says, record by record, that nothing in it was acknowledged.
        assert all(o["error_code"] in (1, 2) for o in body.get("offsets", [])), body

    own_cluster.local.restart(f"broker-{leader}")
