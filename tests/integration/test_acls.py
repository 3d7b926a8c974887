"""The ACL authorizer on a cluster of its own (3 brokers with PAFKA_BROKER_AUTHORIZER=acl).

Until SASL lands every connection is ``User:ANONYMOUS``, so the tests grant and deny that
principal. ``allow.everyone.if.no.acl.found`` is on: the cluster's own requests (followers'
fetches, transaction markers, the controller's ListOffsets) need no ACL while the cluster
resource has none, and a resource is guarded as soon as it has an ACL for someone else.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import admin as ck
from kafka import KafkaConsumer, KafkaProducer
from kafka import errors as kerrors
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.protocol.admin import DescribeAclsRequest, DescribeAclsResponse

from pafka.zk import znodes
from tests.integration.conftest import TEST_BROKER_ENV, ClusterHandle, own_cluster
from tests.integration.wire import request_once

SECURED_ENV = {
    **TEST_BROKER_ENV,
    "PAFKA_BROKER_AUTHORIZER": "acl",
    "PAFKA_BROKER_ALLOW_EVERYONE_IF_NO_ACL_FOUND": "true",
    "PAFKA_BROKER_SUPER_USERS": "User:admin",
}
# "Within seconds": a change reaches every broker through one ZooKeeper watch.
PROPAGATION_S = 10.0
ANONYMOUS = "User:ANONYMOUS"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with own_cluster(
        tmp_path_factory, "acls", brokers=3, controllers=1, broker_env=SECURED_ENV
    ) as handle:
        yield handle


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def acls_cli(
    cluster: ClusterHandle, *args: str, over_bootstrap: bool = False
) -> subprocess.CompletedProcess[str]:
    target = (
        ["--bootstrap-server", cluster.bootstrap]
        if over_bootstrap
        else ["--zookeeper", cluster.zk_connect]
    )
    done = subprocess.run(
        [sys.executable, "-m", "pafka.cli.main", "acls", *args, *target],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def eventually(check: Callable[[], bool], what: str, timeout_s: float = PROPAGATION_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s:g}s: {what}")
        time.sleep(0.1)


def described_on(cluster: ClusterHandle, broker_id: int, topic: str) -> set[tuple[str, int]]:
    """(principal, operation) of the literal ACLs one broker holds for ``topic``."""
    request = DescribeAclsRequest[1](
        resource_type_filter=2,
        resource_name_filter=topic,
        pattern_type_filter=3,
        principal_filter=None,
        host_filter=None,
        operation=1,
        permission_type=1,
    )
    response: Any = request_once(
        cluster.broker_address(broker_id), request, DescribeAclsResponse, 1
    )
    assert response.error_code == 0
    return {(a.principal, a.operation) for r in response.resources for a in r.acls}


def on_every_broker(cluster: ClusterHandle, topic: str, expected: set[tuple[str, int]]) -> bool:
    return all(described_on(cluster, b, topic) == expected for b in cluster.broker_ids())


READ, WRITE, DESCRIBE = 3, 4, 8


def test_cli_acl_reaches_every_broker_and_its_removal_too(secured: ClusterHandle) -> None:
    topic = _name("seen")
    acls_cli(
        secured, "add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", topic
    )
    eventually(
        lambda: on_every_broker(secured, topic, {("User:alice", READ)}), "added on every broker"
    )
    listed = acls_cli(secured, "list", "--topic", topic)
    assert "principal=User:alice, host=*, operation=READ, permissionType=ALLOW" in listed.stdout
    acls_cli(secured, "remove", "--force", "--topic", topic)
    eventually(lambda: on_every_broker(secured, topic, set()), "removed on every broker")
    assert secured.zk.exists(f"/kafka-acl/Topic/{topic}") is None


def test_cli_over_the_acl_apis(secured: ClusterHandle) -> None:
    topic = _name("api")
    principal = ("--deny-principal", "User:eve", "--deny-host", "10.1.2.3")
    acls_cli(
        secured, "add", *principal, "--operation", "Write", "--topic", topic, over_bootstrap=True
    )
    listed = acls_cli(secured, "list", "--principal", "User:eve", over_bootstrap=True)
    assert f"name={topic}, patternType=LITERAL" in listed.stdout
    assert (
        "(principal=User:eve, host=10.1.2.3, operation=WRITE, permissionType=DENY)" in listed.stdout
    )
    assert secured.zk.exists(f"/kafka-acl/Topic/{topic}") is not None
    removed = acls_cli(secured, "remove", "--force", "--topic", topic, over_bootstrap=True)
    assert "Removed 1 ACLs" in removed.stdout
    assert secured.zk.exists(f"/kafka-acl/Topic/{topic}") is None


def test_a_garbage_znode_does_not_break_the_others(secured: ClusterHandle) -> None:
    bad, good = _name("garbage"), _name("fine")
    secured.zk.create(f"/kafka-acl/Topic/{bad}", b"\xff not json", makepath=True)
    secured.zk.create(
        f"{znodes.KAFKA_ACL_CHANGES}/{znodes.ACL_CHANGE_PREFIX}",
        f"Topic:{bad}".encode(),
        sequence=True,
    )
    secured.zk.create(
        f"{znodes.KAFKA_ACL_CHANGES}/{znodes.ACL_CHANGE_PREFIX}", b"no colon", sequence=True
    )
    acls_cli(
        secured, "add", "--allow-principal", "User:bob", "--operation", "Write", "--topic", good
    )
    eventually(lambda: on_every_broker(secured, good, {("User:bob", WRITE)}), "the good ACL seen")
    assert all(described_on(secured, b, bad) == set() for b in secured.broker_ids())
    acls_cli(secured, "remove", "--force", "--topic", good)
    secured.zk.delete(f"/kafka-acl/Topic/{bad}")


def _kafka_python_acl(topic: str, op: ACLOperation) -> ACL:
    return ACL(
        principal="User:carol",
        host="*",
        operation=op,
        permission_type=ACLPermissionType.ALLOW,
        resource_pattern=ResourcePattern(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL),
    )


def test_acl_apis_with_kafka_python(secured: ClusterHandle) -> None:
    topic = _name("kp")
    admin = KafkaAdminClient(bootstrap_servers=secured.bootstrap)
    try:
        created = admin.create_acls(
            [
                _kafka_python_acl(topic, ACLOperation.READ),
                _kafka_python_acl(topic, ACLOperation.WRITE),
            ]
        )
        assert len(created["succeeded"]) == 2 and not created["failed"]
        bad = ACL(
            principal="User:carol",
            host="*",
            operation=ACLOperation.READ,
            permission_type=ACLPermissionType.ALLOW,
            resource_pattern=ResourcePattern(ResourceType.CLUSTER, "not-the-cluster"),
        )
        refused = admin.create_acls([bad])
        assert refused["failed"] == [kerrors.InvalidRequestError]
        by_topic = ACLFilter(
            principal=None,
            host=None,
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(
                ResourceType.TOPIC, topic, ACLResourcePatternType.MATCH
            ),
        )
        found, error = admin.describe_acls(by_topic)
        assert error is kerrors.NoError
        assert {a.operation for a in found} == {ACLOperation.READ, ACLOperation.WRITE}
        [(_, deleted, error)] = admin.delete_acls([by_topic])
        assert error is kerrors.NoError and len(deleted) == 2
        assert admin.describe_acls(by_topic)[0] == []
    finally:
        admin.close()


def test_acl_apis_with_confluent_kafka(secured: ClusterHandle) -> None:
    prefix = _name("ck")
    admin = ck.AdminClient({"bootstrap.servers": secured.bootstrap})
    binding = ck.AclBinding(
        ck.ResourceType.TOPIC,
        prefix,
        ck.ResourcePatternType.PREFIXED,
        "User:dave",
        "*",
        ck.AclOperation.DESCRIBE,
        ck.AclPermissionType.DENY,
    )
    for future in admin.create_acls([binding], request_timeout=15).values():
        future.result(timeout=15)
    match = ck.AclBindingFilter(
        ck.ResourceType.TOPIC,
        f"{prefix}-orders",
        ck.ResourcePatternType.MATCH,
        None,
        None,
        ck.AclOperation.ANY,
        ck.AclPermissionType.ANY,
    )
    described = admin.describe_acls(match, request_timeout=15).result(timeout=15)
    assert described == [binding]
    deleted = [
        f.result(timeout=15) for f in admin.delete_acls([match], request_timeout=15).values()
    ]
    assert deleted == [[binding]]
    assert admin.describe_acls(match, request_timeout=15).result(timeout=15) == []


def _grant(cluster: ClusterHandle, *args: str) -> None:
    acls_cli(cluster, "add", "--allow-principal", ANONYMOUS, *args)


def _revoke(cluster: ClusterHandle, *args: str) -> None:
    acls_cli(cluster, "remove", "--force", "--allow-principal", ANONYMOUS, *args)


def _produce(cluster: ClusterHandle, topic: str) -> None:
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap, acks=1, retries=0, enable_idempotence=False
    )
    try:
        producer.send(topic, b"guarded").get(timeout=15)
    finally:
        producer.close(timeout=5)


def _raises(fn: Callable[[], object], error: type[BaseException]) -> bool:
    try:
        fn()
    except error:
        return True
    return False


def test_produce_is_refused_until_granted_and_again_after_revoked(secured: ClusterHandle) -> None:
    topic = _name("produce")
    secured.create_topic(topic, partitions=1, replication_factor=3)
    # An ACL for someone else guards the topic; DESCRIBE lets the producer see its metadata.
    _grant(secured, "--operation", "Describe", "--topic", topic)
    refused = kerrors.TopicAuthorizationFailedError
    eventually(lambda: _raises(lambda: _produce(secured, topic), refused), "produce refused")
    _grant(secured, "--operation", "Write", "--topic", topic)
    eventually(lambda: not _raises(lambda: _produce(secured, topic), refused), "produce allowed")
    _revoke(secured, "--operation", "Write", "--topic", topic)
    eventually(lambda: _raises(lambda: _produce(secured, topic), refused), "produce refused again")


def _consume_one(cluster: ClusterHandle, topic: str, group: str | None = None) -> list[bytes]:
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=10_000,
    )
    try:
        if group is None:
            from kafka import TopicPartition

            consumer.assign([TopicPartition(topic, 0)])
        else:
            consumer.subscribe([topic])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            got = consumer.poll(timeout_ms=500)
            values = [r.value for records in got.values() for r in records]
            if values:
                return values
        return []
    finally:
        consumer.close()


def test_fetch_needs_read(secured: ClusterHandle) -> None:
    topic = _name("fetch")
    secured.create_topic(topic, partitions=1, replication_factor=3)
    _grant(secured, "--operation", "Write", "--topic", topic)  # WRITE implies DESCRIBE
    eventually(lambda: not _raises(lambda: _produce(secured, topic), Exception), "produced")
    refused = kerrors.TopicAuthorizationFailedError
    assert _raises(lambda: _consume_one(secured, topic), refused)
    _grant(secured, "--operation", "Read", "--topic", topic)
    eventually(lambda: bool(_consume_one(secured, topic)), "fetch allowed")


def test_metadata_hides_topics_not_described(secured: ClusterHandle) -> None:
    topic = _name("hidden")
    secured.create_topic(topic, partitions=1, replication_factor=1)
    acls_cli(
        secured, "add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", topic
    )
    admin = ck.AdminClient({"bootstrap.servers": secured.bootstrap})

    def listed() -> bool:
        return topic in admin.list_topics(timeout=10).topics

    eventually(lambda: not listed(), "topic hidden")
    asked = admin.list_topics(topic=topic, timeout=10).topics[topic]
    assert asked.error is not None and asked.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _grant(secured, "--operation", "Describe", "--topic", topic)
    eventually(listed, "topic listed")


def test_group_join_needs_read_on_the_group(secured: ClusterHandle) -> None:
    topic, group = _name("grouped"), _name("group")
    secured.create_topic(topic, partitions=1, replication_factor=1)
    _grant(secured, "--operation", "All", "--topic", topic)
    eventually(lambda: not _raises(lambda: _produce(secured, topic), Exception), "produced")
    acls_cli(
        secured, "add", "--allow-principal", "User:bob", "--operation", "Read", "--group", group
    )
    refused = kerrors.GroupAuthorizationFailedError
    eventually(lambda: _raises(lambda: _consume_one(secured, topic, group), refused), "refused")
    _grant(secured, "--operation", "Read", "--group", group)
    eventually(lambda: bool(_consume_one(secured, topic, group)), "group joined")


def test_create_topics_needs_create(secured: ClusterHandle) -> None:
    prefix = _name("nt")
    admin = ck.AdminClient({"bootstrap.servers": secured.bootstrap})
    # The cluster resource gets ACLs (everything the tests and brokers need but CREATE), so
    # allow-everyone no longer grants CREATE on it; the topics' prefix gets one for bob.
    cluster_ops = ["ClusterAction", "IdempotentWrite", "Describe", "Alter", "DescribeConfigs"]
    ops = [arg for op in cluster_ops for arg in ("--operation", op)]
    _grant(secured, *ops, "--cluster")
    prefixed = ("--topic", f"{prefix}-", "--resource-pattern-type", "prefixed")
    acls_cli(secured, "add", "--allow-principal", "User:bob", "--operation", "Create", *prefixed)
    try:

        def create(name: str) -> KafkaException | None:
            new = ck.NewTopic(name, num_partitions=1, replication_factor=1)
            try:
                admin.create_topics([new], request_timeout=15)[name].result(timeout=20)
            except KafkaException as exc:
                return exc
            return None

        def refused(name: str) -> bool:
            error = create(name)
            return error is not None and (
                error.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
            )

        eventually(lambda: refused(f"{prefix}-a"), "CreateTopics refused")
        _grant(
            secured,
            "--operation",
            "Create",
            "--topic",
            f"{prefix}-",
            "--resource-pattern-type",
            "prefixed",
        )
        eventually(lambda: create(f"{prefix}-b") is None, "CreateTopics allowed")
    finally:
        _revoke(secured, *ops, "--cluster")


@pytest.fixture(scope="module")
def unsecured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with own_cluster(
        tmp_path_factory, "no-acls", brokers=1, controllers=1, broker_env=TEST_BROKER_ENV
    ) as handle:
        yield handle


def test_acl_apis_without_an_authorizer_are_security_disabled(unsecured: ClusterHandle) -> None:
    admin = KafkaAdminClient(bootstrap_servers=unsecured.bootstrap)
    try:
        anything = ACLFilter(
            principal=None,
            host=None,
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(
                ResourceType.ANY, None, ACLResourcePatternType.ANY
            ),
        )
        with pytest.raises(kerrors.SecurityDisabledError):
            admin.describe_acls(anything)
        created = admin.create_acls([_kafka_python_acl("t", ACLOperation.READ)])
        assert created["failed"] == [kerrors.SecurityDisabledError]
    finally:
        admin.close()
    ckadmin = ck.AdminClient({"bootstrap.servers": unsecured.bootstrap})
    binding = ck.AclBinding(
        ck.ResourceType.TOPIC,
        "t",
        ck.ResourcePatternType.LITERAL,
        "User:carol",
        "*",
        ck.AclOperation.READ,
        ck.AclPermissionType.ALLOW,
    )
    with pytest.raises(KafkaException) as raised:
        ckadmin.create_acls([binding], request_timeout=15)[binding].result(timeout=15)
    assert raised.value.args[0].code() == KafkaError.SECURITY_DISABLED


def test_authorized_operations_follow_the_acls(secured: ClusterHandle) -> None:
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse

    topic = _name("ops")
    secured.create_topic(topic, partitions=1, replication_factor=1)
    _grant(secured, "--operation", "Write", "--topic", topic)
    request = MetadataRequest[8](
        topics=[MetadataRequest[8].MetadataRequestTopic(name=topic)],
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=True,
        include_topic_authorized_operations=True,
    )

    def topic_operations() -> set[int]:
        address = secured.broker_address(secured.broker_ids()[0])
        response: Any = request_once(address, request, MetadataResponse, 8)
        return set(response.topics[0].authorized_operations)

    # WRITE granted, DESCRIBE implied; the topic's ACLs refuse the rest.
    eventually(lambda: topic_operations() == {WRITE, DESCRIBE}, "the topic's operations")
    address = secured.broker_address(secured.broker_ids()[0])
    response: Any = request_once(address, request, MetadataResponse, 8)
    # No ACL on the cluster, allow-everyone: every cluster operation.
    assert set(response.authorized_operations) == {5, 7, 8, 9, 10, 11, 12}


def test_transactional_id_needs_write(secured: ClusterHandle) -> None:
    topic, txn_id = _name("txn"), _name("app")
    secured.create_topic(topic, partitions=1, replication_factor=1)
    _grant(secured, "--operation", "Write", "--topic", topic)
    bob = ("--allow-principal", "User:bob", "--operation", "Write")
    acls_cli(secured, "add", *bob, "--transactional-id", txn_id)

    def transact() -> None:
        producer = KafkaProducer(bootstrap_servers=secured.bootstrap, transactional_id=txn_id)
        try:
            producer.init_transactions()
            producer.begin_transaction()
            producer.send(topic, b"in a transaction")
            producer.commit_transaction()
        finally:
            producer.close(timeout=5)

    refused = kerrors.TransactionalIdAuthorizationFailedError
    eventually(lambda: _raises(transact, refused), "transactions refused")
    _grant(secured, "--operation", "Write", "--transactional-id", txn_id)
    eventually(lambda: not _raises(transact, Exception), "transactions allowed")
