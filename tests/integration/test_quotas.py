"""Client quotas enforced on real clients (librdkafka through confluent-kafka).

A producer with ``producer_byte_rate`` set for its client id, sending as fast as it can, is held
to its quota; a consumer with ``consumer_byte_rate`` likewise; librdkafka reports the throttle
times the broker answered (``throttle_cb``). A client without a quota on the same broker, beside
them, keeps its own rate and is never throttled. The measured rate is the assertion (the quota
is a correctness property): it is taken once the rate windows are full, over several windows.
The broker runs with 5 rate windows of 1 s, so the measurement starts after 6 s.
"""

from __future__ import annotations

import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from pafka.admin.client_quotas import alter_quotas
from tests.integration.conftest import TEST_BROKER_ENV, ClusterHandle, own_cluster

WINDOWS = 5
WARM_UP_S = WINDOWS + 1.0
MEASURE_S = 10.0
QUOTA = 256 * 1024  # bytes per second
MESSAGE = 4096
TOLERANCE = 0.10


@pytest.fixture(scope="module")
def quota_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    env = {
        **TEST_BROKER_ENV,
        "PAFKA_BROKER_QUOTA_WINDOW_NUM": str(WINDOWS),
        "PAFKA_BROKER_QUOTA_WINDOW_SIZE_SECONDS": "1",
    }
    with own_cluster(tmp_path_factory, "quotas", brokers=2, controllers=1, broker_env=env) as c:
        deadline = time.monotonic() + 60
        while len(c.broker_ids()) < 2:
            assert time.monotonic() < deadline, "the broker did not register"
            time.sleep(0.1)
        yield c


class Tally:
    """Bytes seen per moment, and the throttle times librdkafka reported."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.events: list[tuple[float, int]] = []
        self.throttles_ms: list[float] = []

    def add(self, size: int) -> None:
        self.events.append((time.monotonic() - self.started, size))

    def throttled(self, event: Any) -> None:
        self.throttles_ms.append(event.throttle_time * 1000)

    def rate(self, since_s: float, until_s: float) -> float:
        total = sum(size for at, size in self.events if since_s <= at < until_s)
        return total / (until_s - since_s)


def _topic(cluster: ClusterHandle) -> str:
    name = f"quota-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=1, replication_factor=1)
    return name


def _side_by_side(*runs: Callable[[], None]) -> None:
    threads = [threading.Thread(target=run) for run in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)


def _assert_held_to_quota(tally: Tally, until_s: float) -> None:
    """The measured rate within the tolerance of the quota, throttles reported."""
    measured = tally.rate(WARM_UP_S, until_s)
    assert abs(measured - QUOTA) <= TOLERANCE * QUOTA, f"{measured:.0f} B/s against {QUOTA}"
    assert tally.throttles_ms and max(tally.throttles_ms) > 0


def _quota_series(cluster: ClusterHandle, broker_id: int, client_id: str) -> dict[str, float]:
    """A broker's quota series of one client id (no SASL user: the user tag is empty)."""
    url = cluster.local.broker(broker_id).http_url + "/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return {
        s.name: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.labels == {"user": "", "client_id": client_id}
    }


def _client_config(cluster: ClusterHandle, client_id: str, tally: Tally) -> dict[str, Any]:
    """A librdkafka client known by ``client_id``, its throttle reports going to ``tally``."""
    return {
        "bootstrap.servers": cluster.bootstrap,
        "client.id": client_id,
        "throttle_cb": tally.throttled,
    }


def _produce(
    cluster: ClusterHandle, topic: str, client_id: str, tally: Tally, until_s: float, pace: float
) -> None:
    """Send 4 KiB messages until ``until_s``: flat out (pace 0) or at ``pace`` bytes/s."""
    producer = Producer(
        {
            **_client_config(cluster, client_id, tally),
            "linger.ms": 5,
            # Small requests, so that a throttle follows a small overshoot and the measured
            # window holds many of them.
            "batch.size": 16 * 1024,
            "acks": 1,
            "queue.buffering.max.kbytes": 1024,
        }
    )
    payload = b"x" * MESSAGE

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            tally.add(len(msg.value()))

    sent = 0
    while (elapsed := time.monotonic() - tally.started) < until_s:
        if pace and sent * MESSAGE > elapsed * pace:
            producer.poll(0.005)
            continue
        try:
            producer.produce(topic, payload, partition=0, on_delivery=delivered)
            sent += 1
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    producer.flush(30)


def test_producer_is_held_to_its_byte_rate(quota_cluster: ClusterHandle) -> None:
    topic = _topic(quota_cluster)
    limited, free = f"limited-{uuid.uuid4().hex[:6]}", f"free-{uuid.uuid4().hex[:6]}"
    alter_quotas(quota_cluster.zk, (None, limited), [("producer_byte_rate", float(QUOTA))], False)
    until_s = WARM_UP_S + MEASURE_S
    limited_tally, free_tally = Tally(), Tally()
    free_pace = 2 * QUOTA
    _side_by_side(
        lambda: _produce(quota_cluster, topic, limited, limited_tally, until_s, 0),
        lambda: _produce(quota_cluster, topic, free, free_tally, until_s, free_pace),
    )
    _assert_held_to_quota(limited_tally, until_s)
    # The client without a quota keeps its pace and hears of no throttle.
    assert free_tally.rate(WARM_UP_S, until_s) >= (1 - TOLERANCE) * free_pace
    assert not any(free_tally.throttles_ms)
    # The leader's quota series, tagged as Kafka tags a client-id quota's sensor.
    leader = quota_cluster.partition_state(topic, 0).leader
    limited_series = _quota_series(quota_cluster, leader, limited)
    assert limited_series["kafka_server_produce_byte_rate"] > 0
    assert limited_series["kafka_server_produce_throttle_time"] > 0
    assert _quota_series(quota_cluster, leader, free)["kafka_server_produce_throttle_time"] == 0


def _consume(
    cluster: ClusterHandle, topic: str, client_id: str, tally: Tally, until_s: float, total: int
) -> None:
    consumer = Consumer(
        {
            **_client_config(cluster, client_id, tally),
            "group.id": client_id,
            "enable.auto.commit": False,
            # Small fetches, so that arrivals are spread finely over the measured window.
            "max.partition.fetch.bytes": 64 * 1024,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen = 0
    try:
        while time.monotonic() - tally.started < until_s and seen < total:
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                size = len(msg.value())
                seen += size
                tally.add(size)
    finally:
        consumer.close()


def test_consumer_is_held_to_its_byte_rate(quota_cluster: ClusterHandle) -> None:
    topic = _topic(quota_cluster)
    count = 12 * 1024 * 1024 // MESSAGE
    # Small batches: a fetch returns whole batches, and the measured window must hold many.
    loader = Producer(
        {"bootstrap.servers": quota_cluster.bootstrap, "linger.ms": 20, "batch.size": 16 * 1024}
    )
    for _ in range(count):
        while True:
            try:
                loader.produce(topic, b"y" * MESSAGE, partition=0)
                break
            except BufferError:
                loader.poll(0.05)
    assert loader.flush(60) == 0
    limited, free = f"climited-{uuid.uuid4().hex[:6]}", f"cfree-{uuid.uuid4().hex[:6]}"
    alter_quotas(quota_cluster.zk, (None, limited), [("consumer_byte_rate", float(QUOTA))], False)
    until_s = WARM_UP_S + MEASURE_S
    limited_tally, free_tally = Tally(), Tally()
    total = count * MESSAGE
    _side_by_side(
        lambda: _consume(quota_cluster, topic, limited, limited_tally, until_s, total),
        lambda: _consume(quota_cluster, topic, free, free_tally, until_s, total),
    )
    _assert_held_to_quota(limited_tally, until_s)
    # The consumer without a quota reads everything, well above the other's quota, unthrottled.
    assert sum(size for _, size in free_tally.events) == total
    free_elapsed = free_tally.events[-1][0]
    assert total / free_elapsed > 3 * QUOTA
    assert not any(free_tally.throttles_ms)


def test_followers_are_never_throttled_by_client_quotas(quota_cluster: ClusterHandle) -> None:
    """With every client held to a few bytes a second by default, replication still keeps up:
    acks=all writes are answered (they wait for the follower's fetches), and the follower's
    fetches are not counted against any client's quota."""
    default = (None, "<default>")
    alter_quotas(quota_cluster.zk, default, [("consumer_byte_rate", 10.0)], False)
    try:
        name = f"quota-rf2-{uuid.uuid4().hex[:8]}"
        quota_cluster.create_topic(name, partitions=1, replication_factor=2)
        producer = Producer(
            {"bootstrap.servers": quota_cluster.bootstrap, "acks": "all", "linger.ms": 5}
        )
        failures: list[Any] = []
        for _ in range(256):  # 1 MiB, far beyond what the default quota lets a client fetch
            producer.produce(
                name,
                b"z" * MESSAGE,
                partition=0,
                on_delivery=lambda err, _msg: failures.append(err) if err else None,
            )
        assert producer.flush(30) == 0
        assert failures == []
    finally:
        alter_quotas(quota_cluster.zk, default, [("consumer_byte_rate", None)], False)
