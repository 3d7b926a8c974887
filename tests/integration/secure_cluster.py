"""The security tests' shared parts: a ZooKeeper client with the services' identity, a round
trip through a cluster with a Kafka client, a lone broker with secured listeners, its TLS
settings and its open connections."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from kazoo.client import KazooClient

from pafka.admin.scram_users import alter_user, upsert
from pafka.local.certs import Pem
from pafka.local.cluster import LocalCluster, ServiceProcess
from pafka.security.scram_credentials import ScramCredential
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


def tls_env(server: Pem, ca_file: str) -> dict[str, str]:
    """A broker's TLS listener settings: its certificate and the CA it trusts."""
    return {
        "PAFKA_BROKER_SSL_CERTFILE": str(server.cert),
        "PAFKA_BROKER_SSL_KEYFILE": str(server.key),
        "PAFKA_BROKER_SSL_CAFILE": ca_file,
    }


def open_connections(broker: ServiceProcess) -> float:
    """The broker's connection count, as its /metrics exports it."""
    with urllib.request.urlopen(f"{broker.http_url}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    for line in text.splitlines():
        if line.startswith("kafka_server_socket_server_metrics_connection_count "):
            return float(line.split()[1])
    raise AssertionError("no connection count exported")


def add_scram_user(zk_connect: str, user: str, mechanism: str, password: str) -> None:
    client = KazooClient(hosts=zk_connect)
    client.start(timeout=15)
    try:
        alter_user(
            client, user, upsert(mechanism, ScramCredential.from_password(mechanism, password))
        )
    finally:
        client.stop()
        client.close()


def lone_broker(
    directory: Path, zk_connect: str, listeners: dict[str, int], env: dict[str, str]
) -> LocalCluster:
    """One broker (and its controller) with a PLAINTEXT listener for its own use and the named
    listeners (protocol name -> port) under test; not started."""
    local = LocalCluster(directory, brokers=1, controllers=1, zookeeper=zk_connect, broker_env=env)
    plain = local.broker(1).port
    local.service_env["broker-1"] = {
        "PAFKA_BROKER_LISTENERS": ",".join(
            [f"PLAINTEXT://127.0.0.1:{plain}"]
            + [f"{name}://127.0.0.1:{port}" for name, port in listeners.items()]
        )
    }
    return local
