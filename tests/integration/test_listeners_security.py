"""Named listeners with TLS and SASL, driven by real Kafka clients.

Two brokers, each with PLAINTEXT, SSL (client certificates verified when sent), SASL_SSL and
SASL_PLAINTEXT listeners; they replicate over SASL_SSL as SCRAM user ``broker``. Every topic
has two replicas and every write is acks=all, so each round trip also proves replication over
the secured inter-broker listener.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kazoo.client import KazooClient

from pafka.admin.scram_users import alter_user, combined, upsert
from pafka.client.cluster import ClusterClient
from pafka.client.fetcher import fetch
from pafka.client.producer import OutgoingRecord
from pafka.client.producer import Producer as PafkaProducer
from pafka.local.certs import Pem, ThrowawayCa
from pafka.local.cluster import LocalCluster
from pafka.local.ports import free_port
from pafka.local.zookeeper import ZooKeeperServer
from pafka.security.client_security import ClientSecurity
from pafka.security.listeners import SecurityProtocol
from pafka.security.scram_credentials import ScramCredential
from pafka.security.tls import TlsFiles
from pafka.zk.client import ZkClient

BROKERS = 2
PASSWORDS = {"broker": "broker-secret", "alice": "alice-secret"}
LISTENERS = ("SSL", "SASL_SSL", "SASL_PLAINTEXT")
AUTHENTICATION_TIMEOUT_MS = 2000
# SASL sessions end this often (connections.max.reauth.ms), so every test here also runs across
# re-authentications: librdkafka's (KIP-368), and pafka's connections retiring in time.
REAUTH_MS = 8000


@dataclass
class SecureCluster:
    local: LocalCluster
    zk_connect: str
    ca: ThrowawayCa
    alice: Pem
    ports: dict[int, dict[str, int]]  # broker id -> listener -> port

    def bootstrap(self, listener: str) -> str:
        return ",".join(f"127.0.0.1:{p[listener]}" for p in self.ports.values())

    def confluent(self, listener: str, **extra: Any) -> dict[str, Any]:
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap(listener),
            "security.protocol": listener,
        }
        if listener in ("SSL", "SASL_SSL"):
            config["ssl.ca.location"] = str(self.ca.ca.cert)
        if listener.startswith("SASL"):
            config.update(
                {
                    "sasl.mechanism": "SCRAM-SHA-512",
                    "sasl.username": "alice",
                    "sasl.password": PASSWORDS["alice"],
                }
            )
        config.update(extra)
        return config


def _add_users(zk_connect: str) -> None:
    zk = KazooClient(hosts=zk_connect)
    zk.start(timeout=15)
    try:
        for user, password in PASSWORDS.items():
            alter_user(
                zk,
                user,
                combined(
                    [
                        upsert(m, ScramCredential.from_password(m, password))
                        for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")
                    ]
                ),
            )
    finally:
        zk.stop()
        zk.close()


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureCluster]:
    ca = ThrowawayCa.create(tmp_path_factory.mktemp("ca"))
    server = ca.issue("broker", "/CN=localhost", server=True)
    alice = ca.issue("alice", "/O=pafka/OU=test/CN=alice")
    zk = ZooKeeperServer(Path(tmp_path_factory.mktemp("secure-zk")))
    zk.start()
    try:
        _add_users(zk.connect_string)
        ports = {b: {name: free_port() for name in LISTENERS} for b in range(1, BROKERS + 1)}
        service_env = {}
        for broker_id, named in ports.items():
            service_env[f"broker-{broker_id}"] = {
                "PAFKA_BROKER_LISTENERS": ",".join(
                    ["PLAINTEXT://127.0.0.1:{port}"]
                    + [f"{name}://127.0.0.1:{port}" for name, port in named.items()]
                ),
            }
        local = LocalCluster(
            Path(tmp_path_factory.mktemp("secure")),
            brokers=BROKERS,
            controllers=1,
            zookeeper=zk.connect_string,
            broker_env={
                "PAFKA_BROKER_SSL_CERTFILE": str(server.cert),
                "PAFKA_BROKER_SSL_KEYFILE": str(server.key),
                "PAFKA_BROKER_SSL_CAFILE": str(ca.ca.cert),
                "PAFKA_BROKER_SSL_CLIENT_AUTH": "requested",
                "PAFKA_BROKER_INTER_BROKER_LISTENER_NAME": "SASL_SSL",
                "PAFKA_BROKER_INTER_BROKER_SASL_USERNAME": "broker",
                "PAFKA_BROKER_INTER_BROKER_SASL_PASSWORD": PASSWORDS["broker"],
                "PAFKA_BROKER_AUTHENTICATION_TIMEOUT_MS": str(AUTHENTICATION_TIMEOUT_MS),
                "PAFKA_BROKER_CONNECTIONS_MAX_REAUTH_MS": str(REAUTH_MS),
                "PAFKA_BROKER_DEFAULT_REPLICATION_FACTOR": "2",
                # ACLs decide only for resources that have some (test_certificate_subject_...).
                "PAFKA_BROKER_AUTHORIZER": "acl",
                "PAFKA_BROKER_SUPER_USERS": "User:broker",
                "PAFKA_BROKER_ALLOW_EVERYONE_IF_NO_ACL_FOUND": "true",
            },
            service_env=service_env,
        )
        # Each broker's PLAINTEXT port is the harness's own (readiness, and pafka's tools).
        for broker_id in ports:
            env = local.service_env[f"broker-{broker_id}"]
            port = local.broker(broker_id).port
            env["PAFKA_BROKER_LISTENERS"] = env["PAFKA_BROKER_LISTENERS"].format(port=port)
        try:
            local.start()
            yield SecureCluster(local, zk.connect_string, ca, alice, ports)
        finally:
            local.stop()
    finally:
        zk.stop()


def _topic(cluster: SecureCluster, listener: str) -> str:
    name = f"secure-{listener.lower()}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(cluster.confluent(listener))
    futures = admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=2)])
    futures[name].result(timeout=30)
    return name


def _partition(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def _round_trip(cluster: SecureCluster, listener: str, **extra: Any) -> None:
    topic = _topic(cluster, listener)
    producer = Producer(cluster.confluent(listener, acks="all", **extra))
    sent = [f"{listener}-{i}".encode() for i in range(50)]
    errors: list[KafkaError] = []
    for value in sent:
        producer.produce(topic, value, on_delivery=lambda err, _msg: err and errors.append(err))
    assert producer.flush(30) == 0
    assert errors == []
    consumer = Consumer(
        cluster.confluent(
            listener, **extra, **{"group.id": f"g-{topic}", "auto.offset.reset": "earliest"}
        )
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < len(sent) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    assert sorted(got) == sorted(sent)


@pytest.mark.parametrize("listener", LISTENERS)
def test_librdkafka_produces_and_consumes_over_each_listener(
    secure: SecureCluster, listener: str
) -> None:
    _round_trip(secure, listener)


def test_large_fetches_over_tls_arrive_whole(secure: SecureCluster) -> None:
    """Fetch responses of many megabytes go out over TLS in 64 KiB chunks (regions read into
    them): every byte arrives, in order, to a consumer reading them in large fetches."""
    topic = _topic(secure, "SSL")
    producer = Producer(secure.confluent("SSL", acks="all", **{"linger.ms": 20}))
    sent = [os.urandom(100_000) for _ in range(80)]
    for value in sent:
        producer.produce(topic, value, partition=0)
    assert producer.flush(60) == 0
    consumer = Consumer(
        secure.confluent(
            "SSL",
            **{
                "group.id": f"g-{topic}",
                "enable.auto.commit": False,
                "fetch.max.bytes": 16 * 1024 * 1024,
                "max.partition.fetch.bytes": 8 * 1024 * 1024,
            },
        )
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < len(sent) and time.monotonic() < deadline:
            for message in consumer.consume(100, 1.0):
                assert message.error() is None, message.error()
                got.append(message.value())
    finally:
        consumer.close()
    assert got == sent


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_every_sasl_mechanism_authenticates_against_the_one_credential_store(
    secure: SecureCluster, mechanism: str
) -> None:
    _round_trip(secure, "SASL_SSL", **{"sasl.mechanism": mechanism})


def test_mutual_tls_client_certificate(secure: SecureCluster) -> None:
    _round_trip(
        secure,
        "SSL",
        **{
            "ssl.certificate.location": str(secure.alice.cert),
            "ssl.key.location": str(secure.alice.key),
        },
    )


def test_a_certificate_from_another_authority_is_refused(
    secure: SecureCluster, tmp_path: Path
) -> None:
    stranger = ThrowawayCa.create(tmp_path / "other").issue("mallory", "/CN=mallory")
    context = ssl.create_default_context(cafile=str(secure.ca.ca.cert))
    context.load_cert_chain(str(stranger.cert), str(stranger.key))
    port = next(iter(secure.ports.values()))["SSL"]
    with (
        pytest.raises((ssl.SSLError, ConnectionError, OSError)),
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        # TLS 1.3 reports a refused client certificate at the first read.
        tls.sendall(b"\x00\x00\x00\x00")
        if not tls.recv(1):
            raise ConnectionError("closed")


def test_a_wrong_password_is_sasl_authentication_failed(secure: SecureCluster) -> None:
    seen: list[KafkaError] = []
    producer = Producer(
        secure.confluent("SASL_SSL", **{"sasl.password": "wrong", "error_cb": seen.append})
    )
    try:
        deadline = time.monotonic() + 30
        while not any(e.code() == KafkaError._AUTHENTICATION for e in seen):
            assert time.monotonic() < deadline, f"no authentication error, only {seen}"
            producer.poll(0.5)
    finally:
        producer.flush(0)
    assert any("SASL authentication error" in e.str() for e in seen)


def test_kafka_python_over_sasl_ssl_and_ssl(secure: SecureCluster) -> None:
    for listener in ("SASL_SSL", "SSL"):
        topic = _topic(secure, listener)
        options: dict[str, Any] = {
            "bootstrap_servers": secure.bootstrap(listener),
            "security_protocol": listener,
            "ssl_cafile": str(secure.ca.ca.cert),
        }
        if listener == "SASL_SSL":
            options.update(
                sasl_mechanism="SCRAM-SHA-512",
                sasl_plain_username="alice",
                sasl_plain_password=PASSWORDS["alice"],
            )
        producer = KafkaProducer(acks="all", **options)
        for i in range(20):
            producer.send(topic, f"kp-{i}".encode()).get(timeout=30)
        producer.close()
        consumer = KafkaConsumer(topic, auto_offset_reset="earliest", **options)
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 20 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got += [record.value for record in records]
        consumer.close()
        assert sorted(got) == sorted(f"kp-{i}".encode() for i in range(20))


def test_registration_lists_every_listener_as_kafka_does(secure: SecureCluster) -> None:
    zk = KazooClient(hosts=secure.zk_connect)
    zk.start(timeout=15)
    try:
        for broker_id, named in secure.ports.items():
            payload = json.loads(zk.get(f"/brokers/ids/{broker_id}")[0])
            plaintext_port = secure.local.broker(broker_id).port
            assert (payload["host"], payload["port"]) == ("127.0.0.1", plaintext_port)
            expected = {f"PLAINTEXT://127.0.0.1:{plaintext_port}"} | {
                f"{name}://127.0.0.1:{port}" for name, port in named.items()
            }
            assert set(payload["endpoints"]) == expected
            assert payload["listener_security_protocol_map"] == {
                name: name for name in ("PLAINTEXT", *LISTENERS)
            }
    finally:
        zk.stop()
        zk.close()


def test_metadata_answers_with_the_listener_the_client_came_through(
    secure: SecureCluster,
) -> None:
    for listener in LISTENERS:
        metadata = AdminClient(secure.confluent(listener)).list_topics(timeout=30)
        told = {b.id: b.port for b in metadata.brokers.values()}
        assert told == {b: named[listener] for b, named in secure.ports.items()}


def test_pafka_client_over_sasl_ssl_found_through_zookeeper(secure: SecureCluster) -> None:
    topic = _topic(secure, "SASL_SSL")
    security = ClientSecurity(
        protocol=SecurityProtocol.SASL_SSL,
        tls=TlsFiles(cafile=str(secure.ca.ca.cert)),
        sasl_mechanism="SCRAM-SHA-256",
        sasl_username="alice",
        sasl_password=PASSWORDS["alice"],
    )

    async def scenario() -> list[bytes]:
        zk = ZkClient(secure.zk_connect, session_timeout_ms=6000, name="test-client")
        await zk.start(timeout_s=15)
        client = ClusterClient(zk=zk, client_id="secure-test", security=security)
        try:
            await client.start()
            assert {port for _, port in client.brokers.values()} == {
                named["SASL_SSL"] for named in secure.ports.values()
            }
            producer = PafkaProducer(client)
            records = [OutgoingRecord(f"pafka-{i}".encode()) for i in range(10)]
            await producer.send(topic, 0, records, acks=-1)
            got = await fetch(
                client, topic, 0, 0, max_records=10, max_bytes=1 << 20, max_wait_ms=1000
            )
            return [r.value for r in got.records]
        finally:
            await client.close()
            await zk.close()

    assert asyncio.run(scenario()) == [f"pafka-{i}".encode() for i in range(10)]


def _closed_within(sock: socket.socket, timeout_s: float) -> bool:
    sock.settimeout(timeout_s)
    try:
        while sock.recv(4096):
            pass
        return True
    except TimeoutError:
        return False
    except OSError:  # reset, or TLS torn down
        return True


def test_requests_before_authentication_close_the_connection(secure: SecureCluster) -> None:
    port = next(iter(secure.ports.values()))["SASL_PLAINTEXT"]
    # A Metadata v1 request for all topics, with no SASL exchange first.
    body = b"\x00\x03\x00\x01\x00\x00\x00\x07\x00\x04test\xff\xff\xff\xff"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(len(body).to_bytes(4, "big") + body)
        assert _closed_within(sock, 10)


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SSL"])
def test_a_client_that_never_authenticates_is_closed(secure: SecureCluster, listener: str) -> None:
    port = next(iter(secure.ports.values()))[listener]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        # Connected, then silent: no TLS ClientHello, no SaslHandshake.
        assert _closed_within(sock, AUTHENTICATION_TIMEOUT_MS / 1000 * 2 + 5)


def test_clients_connect_again_after_refusal_and_others_are_unaffected(
    secure: SecureCluster,
) -> None:
    garbage = [b"\x00\x00\x00\x05hello", b"\xff" * 64, b"\x00\x00\x00\x00"]
    port = next(iter(secure.ports.values()))["SASL_SSL"]
    context = ssl.create_default_context(cafile=str(secure.ca.ca.cert))
    for payload in garbage:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            context.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            tls.sendall(payload)
            assert _closed_within(tls, 10)
    _round_trip(secure, "SASL_SSL")


def test_sessions_outlive_their_sasl_lifetime_by_reauthenticating(secure: SecureCluster) -> None:
    """Three session lifetimes of steady acks=all writes over SASL_SSL: librdkafka
    re-authenticates in place, followers reconnect; no send fails, nothing is lost. (A
    connection librdkafka had not re-authenticated in time is closed by the broker, as Kafka
    does; librdkafka may report that as a transient error and reconnects: allowed, fatal ones
    are not.)"""
    topic = _topic(secure, "SASL_SSL")
    client_errors: list[KafkaError] = []
    failed: list[KafkaError] = []
    delivered: list[int] = []
    producer = Producer(
        secure.confluent("SASL_SSL", acks="all", error_cb=client_errors.append, **{"linger.ms": 5})
    )
    deadline = time.monotonic() + 3 * REAUTH_MS / 1000
    sent = 0
    while time.monotonic() < deadline:
        producer.produce(
            topic,
            str(sent).encode(),
            on_delivery=lambda err, msg: failed.append(err) if err else delivered.append(1),
        )
        sent += 1
        producer.poll(0.02)
    assert producer.flush(30) == 0
    assert failed == []
    assert len(delivered) == sent
    assert not [e for e in client_errors if e.fatal()], client_errors
    low, high = Consumer(
        secure.confluent("SASL_SSL", **{"group.id": "offsets"})
    ).get_watermark_offsets(_partition(topic, 0), timeout=10)
    assert low == 0 and high > 0


def _pafka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pafka.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_pafka_tools_take_a_kafka_command_config(secure: SecureCluster, tmp_path: Path) -> None:
    """The same client properties file a Kafka user hands kafka-topics.sh (a JAAS line, a PEM
    truststore) drives pafka's tools over SASL_SSL, through a bootstrap server or ZooKeeper."""
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'    username="alice" password="{PASSWORDS["alice"]}";\n'
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={secure.ca.ca.cert}\n"
    )
    bootstrap = [
        "--bootstrap-server",
        secure.bootstrap("SASL_SSL"),
        "--command-config",
        str(config),
    ]
    topic = f"cli-{uuid.uuid4().hex[:8]}"
    created = _pafka(
        "topics", "create", topic, "--partitions", "2", "--replication-factor", "2", *bootstrap
    )
    assert created.returncode == 0, created.stderr
    produced = _pafka("produce", topic, "--value", "one", "--value", "two", *bootstrap)
    assert produced.returncode == 0, produced.stderr
    by_zookeeper = ["--zookeeper", secure.zk_connect, "--command-config", str(config)]
    consumed = _pafka("consume", topic, "--from-beginning", "--max-messages", "2", *by_zookeeper)
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.split()) == ["one", "two"]
    config.write_text(config.read_text().replace(PASSWORDS["alice"], "wrong"))
    refused = _pafka("topics", "list", *bootstrap)
    assert refused.returncode != 0
    # At once and by name, as Kafka's tools fail (not a bootstrap timeout).
    assert "Authentication failed" in refused.stderr, refused.stderr


@pytest.mark.parametrize(
    ("listener", "sasl_mechanism", "client_certificate"),
    [
        ("SSL", None, False),
        ("SSL", None, True),
        ("SASL_SSL", "scram-sha-512", False),
        ("SASL_SSL", "plain", False),
        ("SASL_PLAINTEXT", "scram-sha-256", False),
    ],
)
def test_kafkajs_over_each_listener(
    secure: SecureCluster, listener: str, sasl_mechanism: str | None, client_certificate: bool
) -> None:
    from tests.compat.drivers import node_driver

    topic = _topic(secure, listener)
    security: dict[str, Any] = {}
    if listener != "SASL_PLAINTEXT":
        security["ssl"] = {"ca": str(secure.ca.ca.cert)}
        if client_certificate:
            security["ssl"].update(cert=str(secure.alice.cert), key=str(secure.alice.key))
    if sasl_mechanism:
        security["sasl"] = {
            "mechanism": sasl_mechanism,
            "username": "alice",
            "password": PASSWORDS["alice"],
        }
        # kafkajs re-authenticates this long before a session ends; at its default (10 s,
        # above this cluster's 8 s sessions) it would re-authenticate before every request.
        security["reauthenticationThreshold"] = REAUTH_MS // 4
    driver = node_driver()
    records = [{"partition": 0, "key": f"k{i}", "value": f"kafkajs-{i}"} for i in range(10)]
    common = {"bootstrap": secure.bootstrap(listener), "security": security}
    driver.run("produce", topic=topic, codec="none", records=records, **common)
    got = driver.run("consume", topic=topic, partition=0, offset=0, count=10, **common)
    assert [r["value"] for r in got["records"]] == [r["value"] for r in records]


def test_kafkajs_with_a_wrong_password_is_refused(secure: SecureCluster) -> None:
    from tests.compat.drivers import DriverError, node_driver

    security = {
        "ssl": {"ca": str(secure.ca.ca.cert)},
        "sasl": {"mechanism": "scram-sha-512", "username": "alice", "password": "wrong"},
    }
    with pytest.raises(DriverError, match="SASL SCRAM SHA512 authentication failed"):
        node_driver().run(
            "metadata", bootstrap=secure.bootstrap("SASL_SSL"), security=security, timeout_s=120
        )


def test_gateway_serves_https_and_reaches_brokers_over_sasl_ssl(
    secure: SecureCluster, tmp_path: Path
) -> None:
    """The gateway as a client of a SASL_SSL-only path (brokers found in ZooKeeper, its
    listener picked by protocol) and as an HTTPS server with a certificate of its own CA."""
    import httpx

    server = secure.ca.issue("gateway", "/CN=localhost", server=True)
    port = free_port()
    env = {
        **os.environ,
        "PAFKA_GATEWAY_ZOOKEEPER": secure.zk_connect,
        "PAFKA_GATEWAY_HOST": "127.0.0.1",
        "PAFKA_GATEWAY_PORT": str(port),
        "PAFKA_GATEWAY_SECURITY_PROTOCOL": "SASL_SSL",
        "PAFKA_GATEWAY_SSL_CAFILE": str(secure.ca.ca.cert),
        "PAFKA_GATEWAY_SASL_MECHANISM": "SCRAM-SHA-512",
        "PAFKA_GATEWAY_SASL_USERNAME": "alice",
        "PAFKA_GATEWAY_SASL_PASSWORD": PASSWORDS["alice"],
        "PAFKA_GATEWAY_HTTPS_CERTFILE": str(server.cert),
        "PAFKA_GATEWAY_HTTPS_KEYFILE": str(server.key),
    }
    log = (tmp_path / "gateway.log").open("wb")
    gateway = subprocess.Popen(
        [sys.executable, "-m", "pafka.cli.main", "gateway"], env=env, stdout=log, stderr=log
    )
    base = f"https://127.0.0.1:{port}"
    try:
        with httpx.Client(verify=str(secure.ca.ca.cert), timeout=30) as http:
            deadline = time.monotonic() + 60
            while True:
                assert gateway.poll() is None, (tmp_path / "gateway.log").read_text()
                try:
                    if http.get(f"{base}/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, (tmp_path / "gateway.log").read_text()
                time.sleep(0.2)
            topic = _topic(secure, "SASL_SSL")
            body = {"records": [{"value": "over https"}]}
            produced = http.post(
                f"{base}/topics/{topic}/partitions/0",
                json=body,
                headers={"Content-Type": "application/vnd.kafka.json.v2+json"},
            )
            assert produced.status_code == 200, produced.text
            read = http.get(
                f"{base}/topics/{topic}/partitions/0/records",
                params={"offset": 0, "max_records": 1},
                headers={"Accept": "application/vnd.kafka.json.v2+json"},
            )
            assert read.status_code == 200, read.text
            assert [r["value"] for r in read.json()["records"]] == ["over https"]
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{base}/readyz", timeout=10)  # the system's CAs do not know ours
    finally:
        gateway.terminate()
        gateway.wait(30)
        log.close()


def test_a_client_certificate_subject_is_the_principal_acls_name(secure: SecureCluster) -> None:
    """mTLS: ``User:CN=alice,OU=test,O=pafka`` (RFC 2253, most specific first) gets the rights
    an ACL gives that principal; the same connection without a certificate (User:ANONYMOUS) and
    SASL's ``User:alice`` do not."""
    topic = _topic(secure, "SSL")
    subject = "User:CN=alice,OU=test,O=pafka"
    for operation in ("Write", "Describe"):
        granted = _pafka(
            "acls", "add", "--allow-principal", subject, "--operation", operation,
            "--topic", topic, "--zookeeper", secure.zk_connect,
        )  # fmt: skip
        assert granted.returncode == 0, granted.stderr
    certificate = {
        "ssl.certificate.location": str(secure.alice.cert),
        "ssl.key.location": str(secure.alice.key),
    }

    def produces(listener: str, **extra: Any) -> bool:
        errors: list[KafkaError] = []
        producer = Producer(secure.confluent(listener, **{"message.timeout.ms": 10_000}, **extra))
        producer.produce(topic, b"x", on_delivery=lambda err, _m: err and errors.append(err))
        producer.flush(15)
        assert all(e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED for e in errors), errors
        return not errors

    deadline = time.monotonic() + 15
    while not produces("SSL", **certificate):
        assert time.monotonic() < deadline, "the certificate's principal was not allowed"
        time.sleep(0.5)
    assert not produces("SSL")
    assert not produces("SASL_SSL")


def test_kafka_python_with_a_wrong_password_is_refused(
    secure: SecureCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """kafka-python gets SASL_AUTHENTICATION_FAILED (58) on every login, reports it in its log
    and, unable to bootstrap, fails the send."""
    from kafka.errors import KafkaTimeoutError

    with pytest.raises(KafkaTimeoutError):
        KafkaProducer(
            bootstrap_servers=secure.bootstrap("SASL_SSL"),
            security_protocol="SASL_SSL",
            ssl_cafile=str(secure.ca.ca.cert),
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username="alice",
            sasl_plain_password="wrong",
            max_block_ms=8_000,
            # Known up front: no version probe, which retries the refused login for its own 30 s.
            api_version=(2, 5, 0),
        ).send("any", b"x").get(timeout=20)
    assert "[Error 58] SaslAuthenticationFailedError" in caplog.text
