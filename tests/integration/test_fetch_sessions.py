"""Fetch sessions (KIP-227) on a real broker, spoken raw: a new session answers every
partition, an incremental fetch only those with news; forgotten partitions leave; unknown ids
and wrong epochs are refused; a follower in a session still moves the high watermark and the
ISR. A cluster of its own (one broker): one test plays a follower, broker 99, that is not running.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.protocol.consumer import FetchRequest, FetchResponse

from pafka.zk.znodes import TopicConfigZNode, TopicZNode
from tests.integration.conftest import ClusterHandle, own_cluster
from tests.integration.wire import roundtrip

FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71
FAKE_FOLLOWER = 99
V = 11
R = FetchRequest[V]


@pytest.fixture(scope="module")
def one_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with own_cluster(tmp_path_factory, "sessions", brokers=1, controllers=1) as handle:
        yield handle


class Session:
    """One client's fetch session over its own connection."""

    def __init__(self, cluster: ClusterHandle, topic: str, replica_id: int = -1) -> None:
        self.sock = socket.create_connection(cluster.leader_address(topic, 0), timeout=30)
        self.replica_id = replica_id
        self.session_id = 0
        self.epoch = 0
        self.cid = 0

    def close(self) -> None:
        self.sock.close()

    def fetch(
        self,
        partitions: list[tuple[str, int, int]],
        *,
        forgotten: list[tuple[str, int]] = (),  # type: ignore[assignment]
        max_wait_ms: int = 0,
        session_id: int | None = None,
        epoch: int | None = None,
    ) -> Any:
        """Fetch (topic, partition, offset)s; a successful answer moves the session on."""
        by_topic: dict[str, list[Any]] = {}
        for topic, index, offset in partitions:
            by_topic.setdefault(topic, []).append(
                R.FetchTopic.FetchPartition(
                    partition=index, fetch_offset=offset, partition_max_bytes=1 << 20
                )
            )
        gone: dict[str, list[int]] = {}
        for topic, index in forgotten:
            gone.setdefault(topic, []).append(index)
        request = R(
            replica_id=self.replica_id,
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_bytes=1 << 22,
            isolation_level=0,
            session_id=self.session_id if session_id is None else session_id,
            session_epoch=self.epoch if epoch is None else epoch,
            topics=[R.FetchTopic(topic=t, partitions=p) for t, p in by_topic.items()],
            forgotten_topics_data=[
                R.ForgottenTopic(topic=t, partitions=p) for t, p in gone.items()
            ],
            rack_id="",
        )
        self.cid += 1
        response = roundtrip(self.sock, request, FetchResponse, V, self.cid)
        if response.error_code == 0 and epoch is None:
            self.session_id = response.session_id
            self.epoch += 1
        return response


def answered(response: Any) -> dict[tuple[str, int], Any]:
    return {(t.topic, p.partition_index): p for t in response.responses for p in t.partitions}


def create_topic(cluster: ClusterHandle, partitions: dict[int, tuple[int, ...]]) -> str:
    """Written straight to ZooKeeper: the admin path refuses a replica on a broker not running."""
    name = f"sessions-{uuid.uuid4().hex[:8]}"
    cluster.zk.create(TopicConfigZNode.path(name), TopicConfigZNode({}).encode(), makepath=True)
    node = TopicZNode(topic_id=uuid.uuid4(), partitions=partitions)
    cluster.zk.create(TopicZNode.path(name), node.encode(), makepath=True)
    cluster.wait_for_leaders(name, len(partitions))
    return name


def produce(cluster: ClusterHandle, topic: str, partition: int, value: bytes) -> None:
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks=1, linger_ms=0)
    producer.send(topic, value=value, partition=partition).get(15)
    producer.close()


def test_a_new_session_answers_every_partition_then_only_those_with_news(
    one_broker: ClusterHandle,
) -> None:
    topic = create_topic(one_broker, {p: (1,) for p in range(4)})
    session = Session(one_broker, topic)
    try:
        full = session.fetch([(topic, p, 0) for p in range(4)])
        assert full.error_code == 0 and full.session_id != 0
        assert set(answered(full)) == {(topic, p) for p in range(4)}

        produce(one_broker, topic, 2, b"news for two")
        news = session.fetch([], max_wait_ms=20_000)
        assert news.session_id == full.session_id
        parts = answered(news)
        assert set(parts) == {(topic, 2)}
        assert b"news for two" in bytes(parts[(topic, 2)].records)
        assert parts[(topic, 2)].high_watermark == 1

        started = time.monotonic()
        idle = session.fetch([(topic, 2, 1)], max_wait_ms=300)
        assert idle.error_code == 0 and answered(idle) == {}
        assert time.monotonic() - started >= 0.25, "an idle session fetch waits max_wait_ms"
    finally:
        session.close()


def test_forgotten_partitions_leave_the_session(one_broker: ClusterHandle) -> None:
    topic = create_topic(one_broker, {p: (1,) for p in range(2)})
    session = Session(one_broker, topic)
    try:
        session.fetch([(topic, 0, 0), (topic, 1, 0)])
        session.fetch([], forgotten=[(topic, 0)])
        produce(one_broker, topic, 0, b"unheard")
        produce(one_broker, topic, 1, b"heard")
        parts = answered(session.fetch([], max_wait_ms=20_000))
        assert set(parts) == {(topic, 1)}
        # Named again, the partition is back, with everything from the offset asked.
        parts = answered(session.fetch([(topic, 0, 0), (topic, 1, 1)], max_wait_ms=20_000))
        assert set(parts) == {(topic, 0)} and b"unheard" in bytes(parts[(topic, 0)].records)
    finally:
        session.close()


def test_unknown_sessions_and_wrong_epochs_are_refused_whole(one_broker: ClusterHandle) -> None:
    topic = create_topic(one_broker, {0: (1,)})
    session = Session(one_broker, topic)
    try:
        opened = session.fetch([(topic, 0, 0)])
        wrong = session.fetch([(topic, 0, 0)], epoch=session.epoch + 5)
        assert (wrong.error_code, wrong.session_id, wrong.responses) == (
            INVALID_FETCH_SESSION_EPOCH,
            0,
            [],
        )
        assert session.fetch([]).error_code == 0, "a refused epoch does not end the session"

        unknown = session.fetch([], session_id=opened.session_id ^ 0x5A5A5A5, epoch=1)
        assert (unknown.error_code, unknown.responses) == (FETCH_SESSION_ID_NOT_FOUND, [])

        closing = session.fetch([(topic, 0, 0)], epoch=-1)
        assert closing.error_code == 0 and closing.session_id == 0
        assert set(answered(closing)) == {(topic, 0)}
        gone = session.fetch([], epoch=session.epoch)
        assert gone.error_code == FETCH_SESSION_ID_NOT_FOUND
    finally:
        session.close()


def test_a_follower_in_a_session_joins_the_isr_and_moves_the_high_watermark(
    one_broker: ClusterHandle,
) -> None:
    topic = create_topic(one_broker, {0: (1, FAKE_FOLLOWER)})
    assert one_broker.partition_state(topic, 0).isr == (1,)
    produce(one_broker, topic, 0, b"before")
    follower = Session(one_broker, topic, replica_id=FAKE_FOLLOWER)
    consumer = Session(one_broker, topic)
    try:
        leader_epoch = one_broker.partition_state(topic, 0).leader_epoch
        assert leader_epoch >= 0
        got = answered(follower.fetch([(topic, 0, 0)]))[(topic, 0)]
        assert got.error_code == 0 and b"before" in bytes(got.records)
        follower.fetch([(topic, 0, 1)])  # caught up: admitted to the ISR
        deadline = time.monotonic() + 30
        while FAKE_FOLLOWER not in one_broker.partition_state(topic, 0).isr:
            assert time.monotonic() < deadline, "the caught-up follower never joined the ISR"
            time.sleep(0.05)

        assert answered(consumer.fetch([(topic, 0, 1)]))[(topic, 0)].high_watermark == 1
        produce(one_broker, topic, 0, b"after")  # acks=1: the follower holds the HW back
        waiting: list[Any] = []
        reader = threading.Thread(
            target=lambda: waiting.append(consumer.fetch([], max_wait_ms=20_000))
        )
        reader.start()
        got = answered(follower.fetch([], max_wait_ms=20_000))[(topic, 0)]
        assert b"after" in bytes(got.records) and got.high_watermark == 1
        follower.fetch([(topic, 0, 2)])  # the follower has it: the high watermark moves
        reader.join(30)
        parts = answered(waiting[0])
        assert b"after" in bytes(parts[(topic, 0)].records)
        assert parts[(topic, 0)].high_watermark == 2
    finally:
        follower.close()
        consumer.close()


def test_a_kafka_python_consumer_reads_everything_through_a_session(
    one_broker: ClusterHandle,
) -> None:
    topic = create_topic(one_broker, {p: (1,) for p in range(3)})
    producer = KafkaProducer(bootstrap_servers=one_broker.bootstrap, acks=1)
    sent = {f"r{i}".encode() for i in range(60)}
    for i, value in enumerate(sorted(sent)):
        producer.send(topic, value=value, partition=i % 3)
    producer.flush(15)
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=one_broker.bootstrap,
        enable_incremental_fetch_sessions=True,
        fetch_max_wait_ms=100,
        consumer_timeout_ms=10_000,
    )
    consumer.assign([TopicPartition(topic, p) for p in range(3)])
    consumer.seek_to_beginning()
    seen: set[bytes] = set()
    for message in consumer:
        seen.add(message.value)
        if seen == sent:
            break
    metrics = urllib.request.urlopen(
        one_broker.local.broker(1).http_url + "/metrics", timeout=10
    ).read()
    consumer.close()
    assert seen == sent
    sessions = [
        line
        for line in metrics.decode().splitlines()
        if line.startswith("kafka_server_fetchsessioncache_numincrementalfetchsessions ")
    ]
    assert sessions and float(sessions[0].split()[1]) >= 1
