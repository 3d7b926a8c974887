"""The security tests' shared parts: a ZooKeeper client with the services' identity, and a
round trip through a cluster with a Kafka client."""

from __future__ import annotations

from kazoo.client import KazooClient

from pafka.zk.acl_kazoo import kazoo_client
from pafka.zk.security import ZkSecurity, parse_zk_auth

ZK_AUTH = "digest:pafka:the-right-password"


def authenticated(connect: str, auth: str = ZK_AUTH) -> KazooClient:
    """A client with the services' identity, creating znodes with the same ACLs."""
    security = ZkSecurity(parse_zk_auth(auth, "test"), set_acl=True)
    client = kazoo_client(connect, security)
    client.start(timeout=15)
    return client


def create_topic_and_round_trip(bootstrap: str, topic: str, partitions: int = 2) -> None:
    """CreateTopics through a broker (which writes the znodes), then records produced with
    acks=all (replicated, so brokers' ISR writes work) and read back."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 2)], timeout_ms=30_000)
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=20)
    sent = [(b"k%d" % i, b"v%d" % i) for i in range(20)]
    for key, value in sent:
        producer.send(topic, key=key, value=value).get(timeout=60)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    got: list[tuple[bytes, bytes]] = []
    while len(got) < len(sent):
        batch = consumer.poll(timeout_ms=10_000)
        assert batch, f"consumer stalled after {len(got)} of {len(sent)} records"
        got.extend((m.key, m.value) for msgs in batch.values() for m in msgs)
    consumer.close()
    assert sorted(got) == sorted(sent)
