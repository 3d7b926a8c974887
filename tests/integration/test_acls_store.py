"""ACLs in a real ZooKeeper, in Kafka's layout: nodes, change notifications, conditional writes."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from pafka.admin import acls as store
from pafka.security.acls import (
    ANY_BINDING,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    Operation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from pafka.security.principal import KafkaPrincipal
from pafka.zk import znodes

ALICE = KafkaPrincipal.user("alice")


@pytest.fixture
def zk(zk_connect: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zk_connect)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


def _binding(name: str, op: Operation, pattern: PatternType = PatternType.LITERAL) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType.TOPIC, name, pattern),
        AccessControlEntry(ALICE, "*", op, PermissionType.ALLOW),
    )


def test_literal_acls_are_stored_as_kafka_stores_them(zk: KazooClient) -> None:
    store.add_acls(zk, [_binding("orders", Operation.READ), _binding("orders", Operation.WRITE)])
    data, _ = zk.get("/kafka-acl/Topic/orders")
    assert json.loads(data) == {
        "version": 1,
        "acls": [
            {
                "principal": "User:alice",
                "permissionType": "Allow",
                "operation": "Read",
                "host": "*",
            },
            {
                "principal": "User:alice",
                "permissionType": "Allow",
                "operation": "Write",
                "host": "*",
            },
        ],
    }
    changes = zk.get_children(znodes.KAFKA_ACL_CHANGES)
    assert len(changes) == 1 and changes[0].startswith("acl_changes_")
    assert zk.get(f"{znodes.KAFKA_ACL_CHANGES}/{changes[0]}")[0] == b"Topic:orders"


def test_prefixed_acls_use_the_extended_store(zk: KazooClient) -> None:
    store.add_acls(zk, [_binding("ord", Operation.READ, PatternType.PREFIXED)])
    assert zk.exists("/kafka-acl-extended/prefixed/Topic/ord") is not None
    (change,) = zk.get_children(znodes.KAFKA_ACL_EXTENDED_CHANGES)
    payload = json.loads(zk.get(f"{znodes.KAFKA_ACL_EXTENDED_CHANGES}/{change}")[0])
    assert payload == {
        "version": 1,
        "resourceType": "Topic",
        "name": "ord",
        "patternType": "PREFIXED",
    }


def test_removing_the_last_acl_deletes_the_node(zk: KazooClient) -> None:
    store.add_acls(zk, [_binding("t", Operation.READ), _binding("t", Operation.WRITE)])
    only_read = AclBindingFilter(
        ResourcePatternFilter(ResourceType.TOPIC, "t", PatternType.LITERAL),
        AccessControlEntryFilter(None, None, Operation.READ, PermissionType.ANY),
    )
    assert store.remove_acls(zk, only_read) == [_binding("t", Operation.READ)]
    assert zk.exists("/kafka-acl/Topic/t") is not None
    assert store.remove_acls(zk, ANY_BINDING) == [_binding("t", Operation.WRITE)]
    assert zk.exists("/kafka-acl/Topic/t") is None
    # Two writes, two removals: one notification each; an unchanged resource sends none.
    assert store.remove_acls(zk, ANY_BINDING) == []
    assert len(zk.get_children(znodes.KAFKA_ACL_CHANGES)) == 3


def test_concurrent_adds_to_one_resource_all_survive(zk: KazooClient, zk_connect: str) -> None:
    ops = [Operation.READ, Operation.WRITE, Operation.DESCRIBE, Operation.DELETE, Operation.ALTER]

    def add(op: Operation) -> None:
        client = KazooClient(hosts=zk_connect)
        client.start(timeout=15)
        try:
            store.add_acls(client, [_binding("busy", op)])
        finally:
            client.stop()
            client.close()

    threads = [threading.Thread(target=add, args=(op,)) for op in ops]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    listed = store.list_acls(zk, ANY_BINDING)
    pattern = ResourcePattern(ResourceType.TOPIC, "busy", PatternType.LITERAL)
    assert {e.operation for e in listed[pattern]} == set(ops)


def test_a_malformed_node_is_skipped_when_listing(zk: KazooClient) -> None:
    zk.create("/kafka-acl/Topic/x", b"garbage", makepath=True)
    zk.create("/kafka-acl/Topic/y", b'{"version":1,"acls":[{"principal":"nobody"}]}')
    store.add_acls(zk, [_binding("good", Operation.READ)])
    listed = store.list_acls(zk, ANY_BINDING)
    assert list(listed) == [ResourcePattern(ResourceType.TOPIC, "good", PatternType.LITERAL)]
