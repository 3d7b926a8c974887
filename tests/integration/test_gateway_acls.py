"""One principal, one rule set: the same ACLs decide a user's Kafka requests and REST calls.

Brokers authorize with ACLs and replicate over SASL_PLAINTEXT as the super user ``broker``; the
gateway reaches them as the super user ``gateway`` and authorizes each REST call itself by the
same ACLs, for ``alice`` logging in with HTTP Basic (her SCRAM password) and ``bob`` with a
bearer token naming ``User:bob``. One table of (principal, action, allowed) drives both
protocols; a grant and its revocation reach both within seconds.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from pafka.admin.scram_users import alter_user, upsert
from pafka.local.cluster import LocalCluster
from pafka.local.ports import free_port
from pafka.local.zookeeper import ZooKeeperServer
from pafka.security.scram_credentials import ScramCredential

PASSWORDS = {"broker": "b-secret", "gateway": "g-secret", "alice": "a-secret", "bob": "b0b"}
BOB_TOKEN = "bob-token-1234"
MECHANISM = "SCRAM-SHA-512"
SHARED = "shared-topic"
GROUP = "alice-group"
PROPAGATION_S = 15.0
AUTHORIZATION_ERRORS = {
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
}


@dataclass
class Setup:
    local: LocalCluster
    zk_connect: str
    sasl_bootstrap: str
    gateway: str
    cluster_id: str = ""

    def kafka(self, user: str, **extra: Any) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.sasl_bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": MECHANISM,
            "sasl.username": user,
            "sasl.password": PASSWORDS[user],
            **extra,
        }

    def rest_headers(self, user: str) -> dict[str, str]:
        if user == "bob":
            return {"Authorization": f"Bearer {BOB_TOKEN}"}
        basic = base64.b64encode(f"{user}:{PASSWORDS[user]}".encode()).decode()
        return {"Authorization": f"Basic {basic}"}

    def acls(self, *args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "pafka.cli.main", "acls", *args, "--zookeeper", self.zk_connect],
            env=dict(os.environ),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    zk = ZooKeeperServer(Path(tmp_path_factory.mktemp("gw-acls-zk")))
    zk.start()
    try:
        client = KazooClient(hosts=zk.connect_string)
        client.start(timeout=15)
        for user, password in PASSWORDS.items():
            alter_user(
                client, user, upsert(MECHANISM, ScramCredential.from_password(MECHANISM, password))
            )
        client.stop()
        client.close()
        sasl_ports = {1: free_port(), 2: free_port()}
        local = LocalCluster(
            Path(tmp_path_factory.mktemp("gw-acls")),
            brokers=2,
            controllers=1,
            gateways=1,
            zookeeper=zk.connect_string,
            broker_env={
                "PAFKA_BROKER_AUTHORIZER": "acl",
                "PAFKA_BROKER_SUPER_USERS": "User:broker;User:gateway",
                "PAFKA_BROKER_INTER_BROKER_LISTENER_NAME": "SASL_PLAINTEXT",
                "PAFKA_BROKER_SASL_MECHANISM_INTER_BROKER_PROTOCOL": MECHANISM,
                "PAFKA_BROKER_INTER_BROKER_SASL_USERNAME": "broker",
                "PAFKA_BROKER_INTER_BROKER_SASL_PASSWORD": PASSWORDS["broker"],
                "PAFKA_BROKER_GROUP_INITIAL_REBALANCE_DELAY_MS": "300",
            },
            service_env={
                "gateway-1": {
                    "PAFKA_GATEWAY_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
                    "PAFKA_GATEWAY_SASL_MECHANISM": MECHANISM,
                    "PAFKA_GATEWAY_SASL_USERNAME": "gateway",
                    "PAFKA_GATEWAY_SASL_PASSWORD": PASSWORDS["gateway"],
                    "PAFKA_GATEWAY_AUTHORIZER": "acl",
                    "PAFKA_GATEWAY_BASIC_AUTH": "true",
                    "PAFKA_GATEWAY_TOKENS": f"{BOB_TOKEN} User:bob",
                },
            },
        )
        for broker_id, port in sasl_ports.items():
            plain = local.broker(broker_id).port
            local.service_env[f"broker-{broker_id}"] = {
                "PAFKA_BROKER_LISTENERS": (
                    f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{port}"
                )
            }
        try:
            local.start()
            setup = Setup(
                local,
                zk.connect_string,
                ",".join(f"127.0.0.1:{p}" for p in sasl_ports.values()),
                local.gateways()[0].http_url,
            )
            admin = AdminClient(setup.kafka("broker"))
            admin.create_topics([NewTopic(SHARED, 1, 2)])[SHARED].result(30)
            seeder = Producer(setup.kafka("broker"))
            seeder.produce(SHARED, b"seed")
            assert seeder.flush(30) == 0
            with httpx.Client(base_url=setup.gateway, timeout=30) as http:
                answer = http.get("/v3/clusters", headers=setup.rest_headers("bob"))
                setup.cluster_id = answer.json()["data"][0]["cluster_id"]
            yield setup
        finally:
            local.stop()
    finally:
        zk.stop()


# -- the actions, each over both protocols: True allowed, False refused -------------------------


def kafka_produce(s: Setup, user: str, topic: str) -> bool:
    errors: list[KafkaError] = []
    producer = Producer(s.kafka(user, **{"message.timeout.ms": 10_000}))
    producer.produce(topic, b"x", on_delivery=lambda err, _m: err and errors.append(err))
    producer.flush(15)
    return _judge([e.code() for e in errors])


def rest_produce(s: Setup, user: str, topic: str) -> bool:
    return _status(
        s, user, "POST", f"/topics/{topic}/partitions/0", json={"records": [{"value": 1}]}
    )


def kafka_read(s: Setup, user: str, topic: str) -> bool:
    # No commits: closing would otherwise wait out the session timeout for a coordinator
    # the principal may not even look up.
    unused = {"group.id": f"unused-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False}
    consumer = Consumer(s.kafka(user, **unused))
    consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            if message.error() is None:
                return True
            # (librdkafka looks its unused group's coordinator up, which DESCRIBE on the group
            # would allow: not what this reads.)
            if message.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                return False
        raise AssertionError(f"{user} neither read {topic} nor was refused")
    finally:
        consumer.close()


def rest_read(s: Setup, user: str, topic: str) -> bool:
    binary = {"Accept": "application/vnd.kafka.binary.v2+json"}
    path = f"/topics/{topic}/partitions/0/records?offset=0"
    return _status(s, user, "GET", path, extra_headers=binary)


def kafka_create(s: Setup, user: str, topic: str) -> bool:
    admin = AdminClient(s.kafka(user))  # kept: a destroyed client fails its futures
    future = admin.create_topics([NewTopic(topic, 1, 1)])[topic]
    try:
        future.result(30)
        return True
    except KafkaException as exc:
        return _judge([exc.args[0].code()])


def rest_create(s: Setup, user: str, topic: str) -> bool:
    body = {"topic_name": topic, "partitions_count": 1, "replication_factor": 1}
    return _status(s, user, "POST", f"/v3/clusters/{s.cluster_id}/topics", json=body)


def kafka_describe_group(s: Setup, user: str, group: str) -> bool:
    admin = AdminClient(s.kafka(user))
    future = admin.describe_consumer_groups([group])[group]
    try:
        future.result(30)
        return True
    except KafkaException as exc:
        return _judge([exc.args[0].code()])


def rest_describe_group(s: Setup, user: str, group: str) -> bool:
    return _status(s, user, "GET", f"/v3/clusters/{s.cluster_id}/consumer-groups/{group}")


def _judge(codes: list[int]) -> bool:
    refused = [c for c in codes if c in AUTHORIZATION_ERRORS]
    assert len(refused) == len(codes), f"errors other than authorization: {codes}"
    return not refused


def _status(
    s: Setup,
    user: str,
    method: str,
    path: str,
    extra_headers: dict[str, str] | None = None,
    **kwargs: Any,
) -> bool:
    headers = {**s.rest_headers(user), **(extra_headers or {})}
    with httpx.Client(base_url=s.gateway, timeout=30) as http:
        answer = http.request(method, path, headers=headers, **kwargs)
    assert answer.status_code != 401, answer.text
    if answer.status_code == 403:
        assert answer.json()["error_code"] == 40301
        return False
    assert answer.status_code < 400 or answer.status_code == 404, answer.text
    return True


Action = Callable[[Setup, str, str], bool]
ACTIONS: dict[str, tuple[Action, Action]] = {
    "produce": (kafka_produce, rest_produce),
    "read": (kafka_read, rest_read),
    "create topic": (kafka_create, rest_create),
    "describe group": (kafka_describe_group, rest_describe_group),
}
# (principal, action, resource, allowed) under the grants made in test_one_table_for_both.
TABLE = [
    ("alice", "produce", SHARED, True),
    ("alice", "read", SHARED, True),
    ("bob", "produce", SHARED, False),
    ("bob", "read", SHARED, True),
    ("alice", "create topic", "alice-new-{n}", True),
    ("bob", "create topic", "bob-new-{n}", False),
    ("alice", "describe group", GROUP, True),
    ("bob", "describe group", GROUP, False),
]


def test_one_table_for_both_protocols(setup: Setup) -> None:
    setup.acls("add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", SHARED)
    setup.acls("add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", SHARED)
    setup.acls("add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", SHARED)
    setup.acls(
        "add", "--allow-principal", "User:alice", "--operation", "Create",
        "--topic", "alice-", "--resource-pattern-type", "prefixed",
    )  # fmt: skip
    setup.acls(
        "add", "--allow-principal", "User:alice", "--operation", "Describe", "--group", GROUP
    )
    time.sleep(2)  # the grants reach every broker and the gateway
    for n, (user, action, resource, allowed) in enumerate(TABLE):
        name = resource.format(n=n)
        kafka, rest = ACTIONS[action]
        assert kafka(setup, user, name) is allowed, f"Kafka: {user} {action} {name}"
        name = resource.format(n=f"{n}-rest")
        assert rest(setup, user, name) is allowed, f"REST: {user} {action} {name}"


def test_revoking_stops_both_within_seconds(setup: Setup) -> None:
    topic = f"revoke-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(setup.kafka("broker"))
    admin.create_topics([NewTopic(topic, 1, 2)])[topic].result(30)
    setup.acls("add", "--allow-principal", "User:bob", "--operation", "Write", "--topic", topic)
    _eventually(lambda: kafka_produce(setup, "bob", topic) and rest_produce(setup, "bob", topic))
    setup.acls(
        "remove", "--allow-principal", "User:bob", "--operation", "Write", "--topic", topic,
        "--force",
    )  # fmt: skip
    _eventually(
        lambda: not kafka_produce(setup, "bob", topic) and not rest_produce(setup, "bob", topic)
    )


def test_lists_show_only_what_the_principal_may_describe(setup: Setup) -> None:
    setup.acls(
        "add", "--allow-principal", "User:alice", "--operation", "Describe", "--topic", SHARED
    )
    with httpx.Client(base_url=setup.gateway, timeout=30) as http:
        _eventually(
            lambda: SHARED in http.get("/topics", headers=setup.rest_headers("alice")).json()
        )
        shown = http.get("/topics", headers=setup.rest_headers("alice")).json()
        assert all(t == SHARED or t.startswith("alice-new-") for t in shown), shown
        nobody = {"Authorization": "Basic " + base64.b64encode(b"bob:wrong").decode()}
        refused = http.get("/topics", headers=nobody)
        assert refused.status_code == 401 and refused.json()["error_code"] == 40101


def test_a_groups_offsets_and_lags_show_only_describable_topics(setup: Setup) -> None:
    """OffsetFetch for all of a group's topics answers only those the principal may DESCRIBE;
    the gateway's lags, lag summary and group description keep exactly the same topics."""
    hidden, group = f"hidden-{uuid.uuid4().hex[:6]}", f"lagged-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(setup.kafka("broker"))
    admin.create_topics([NewTopic(hidden, 1, 2)])[hidden].result(30)
    Producer(setup.kafka("broker")).produce(hidden, b"unread")
    committer = Consumer(setup.kafka("broker", **{"group.id": group}))
    committer.commit(
        offsets=[TopicPartition(SHARED, 0, 0), TopicPartition(hidden, 0, 0)], asynchronous=False
    )
    committer.close()
    setup.acls(
        "add", "--allow-principal", "User:alice", "--operation", "Describe", "--group", group
    )
    setup.acls(
        "add", "--allow-principal", "User:alice", "--operation", "Describe", "--topic", SHARED
    )

    alice = AdminClient(setup.kafka("alice"))  # kept: a destroyed client fails its futures

    def kafka_topics() -> set[str]:
        answer = alice.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
        return {tp.topic for tp in answer[group].result(30).topic_partitions}

    v3 = f"/v3/clusters/{setup.cluster_id}/consumer-groups/{group}"
    with httpx.Client(base_url=setup.gateway, timeout=30) as http:

        def rest(path: str) -> Any:
            answer = http.get(path, headers=setup.rest_headers("alice"))
            assert answer.status_code == 200, answer.text
            return answer.json()

        _eventually(lambda: kafka_topics() == {SHARED})
        assert {x["topic_name"] for x in rest(f"{v3}/lags")["data"]} == {SHARED}
        assert rest(f"{v3}/lag-summary")["max_lag_topic_name"] == SHARED
        assert {x["topic"] for x in rest(f"/groups/{group}")["partitions"]} == {SHARED}
        hidden_lag = http.get(
            f"{v3}/lags/{hidden}/partitions/0", headers=setup.rest_headers("alice")
        )
        assert hidden_lag.status_code == 403, hidden_lag.text
        # Granting DESCRIBE on the other topic shows it, over both protocols.
        setup.acls(
            "add", "--allow-principal", "User:alice", "--operation", "Describe", "--topic", hidden
        )
        _eventually(lambda: kafka_topics() == {SHARED, hidden})
        lags = rest(f"{v3}/lags")["data"]
        assert {x["topic_name"] for x in lags} == {SHARED, hidden}
        assert rest(f"{v3}/lag-summary")["total_lag"] == sum(x["lag"] for x in lags)


def _eventually(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + PROPAGATION_S
    while not check():
        assert time.monotonic() < deadline, "the ACL change did not apply in time"
        time.sleep(0.5)
