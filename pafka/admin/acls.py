"""ACLs stored in ZooKeeper in Kafka 2.x's layout, so Kafka's tools and pafka share them.

A resource's ACLs are one node: ``/kafka-acl/{Type}/{name}`` for literal patterns (the ``*``
wildcard included), ``/kafka-acl-extended/prefixed/{Type}/{name}`` for prefixed ones, holding
``{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read",
"host":"*"}]}``. Every change is one ZooKeeper transaction: the node written (created, set at
the version read, or deleted at that version with its last ACL) together with a sequential
change notification (``/kafka-acl-changes/acl_changes_N`` holding ``Topic:name``, or under
``/kafka-acl-extended-changes`` the JSON form) that tells every broker to re-read the node.
A concurrent change fails the transaction, which is then recomputed from a fresh read.

Blocking kazoo calls: run them through ``ZkClient.run`` or in a worker thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError

from pafka.errors import CorruptZNodeError, InvalidRequestError
from pafka.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    PatternType,
    ResourcePattern,
    ResourceType,
    entry_from_payload,
    entry_to_payload,
)
from pafka.zk import znodes
from pafka.zk.client import children_or_empty, get_many
from pafka.zk.znodes import AclChangeZNode, AclZNode

log = logging.getLogger(__name__)

ATTEMPTS = 10
STORED_PATTERNS = (PatternType.LITERAL, PatternType.PREFIXED)
STORED_TYPES = tuple(t for t in ResourceType if t is not ResourceType.ANY)

Change = Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]]


def resource_path(pattern: ResourcePattern) -> str:
    if "/" in pattern.name:
        raise InvalidRequestError(f"resource name {pattern.name!r} cannot hold '/'")
    return AclZNode.path(pattern.pattern_type.name, pattern.resource_type.word, pattern.name)


def decode_entries(path: str, data: bytes) -> frozenset[AccessControlEntry]:
    """The entries a node holds; CorruptZNodeError for a node Kafka would not have written."""
    try:
        return frozenset(entry_from_payload(p) for p in AclZNode.decode(path, data).acls)
    except ValueError as exc:
        raise CorruptZNodeError(path, str(exc)) from exc


def read_resource(
    zk: KazooClient, pattern: ResourcePattern
) -> tuple[frozenset[AccessControlEntry], int]:
    """A resource's entries and its node's version (-1: no node)."""
    path = resource_path(pattern)
    try:
        data, stat = zk.get(path)
    except NoNodeError:
        return frozenset(), -1
    return decode_entries(path, bytes(data)), stat.version


def _commit(
    zk: KazooClient,
    pattern: ResourcePattern,
    entries: frozenset[AccessControlEntry],
    version: int,
) -> bool:
    """Write ``entries`` if the node is still at ``version``, with its change notification."""
    path = resource_path(pattern)
    change = AclChangeZNode(pattern.pattern_type.name, pattern.resource_type.word, pattern.name)
    zk.ensure_path(AclZNode.type_root(pattern.pattern_type.name, pattern.resource_type.word))
    zk.ensure_path(AclChangeZNode.root(pattern.pattern_type.name))
    payload = AclZNode(tuple(entry_to_payload(e) for e in sorted(entries))).encode()
    txn = zk.transaction()
    if not entries:
        txn.delete(path, version=version)
    elif version < 0:
        txn.create(path, payload)
    else:
        txn.set_data(path, payload, version=version)
    txn.create(
        AclChangeZNode.path_prefix(pattern.pattern_type.name), change.encode(), sequence=True
    )
    results = txn.commit()
    failed = [r for r in results if isinstance(r, Exception)]
    if any(isinstance(r, (BadVersionError, NodeExistsError, NoNodeError)) for r in failed):
        return False
    if any(isinstance(r, NotEmptyError) for r in failed):
        # Kafka never nests nodes under a resource; someone else did: not ours to delete.
        raise CorruptZNodeError(path, "has children")
    for result in failed:
        if type(result).__name__ != "RolledBackError":
            raise result
    return True


def update_resource(
    zk: KazooClient, pattern: ResourcePattern, change: Change
) -> tuple[frozenset[AccessControlEntry], frozenset[AccessControlEntry]]:
    """Apply ``change`` to a resource's entries; returns (before, after). Nothing is written
    (and no notification sent) when the entries do not change."""
    for _ in range(ATTEMPTS):
        current, version = read_resource(zk, pattern)
        updated = change(current)
        if updated == current:
            return current, current
        if _commit(zk, pattern, updated, version):
            return current, updated
    raise InvalidRequestError(f"the ACLs of {pattern.name!r} kept changing; try again")


def add_acls(zk: KazooClient, bindings: Iterable[AclBinding]) -> None:
    by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for binding in bindings:
        binding.validate()
        by_pattern.setdefault(binding.pattern, set()).add(binding.entry)
    for pattern, entries in sorted(by_pattern.items()):
        new = frozenset(entries)
        update_resource(zk, pattern, lambda current, new=new: current | new)  # type: ignore[misc]


def stored_patterns(zk: KazooClient) -> list[ResourcePattern]:
    """Every resource pattern that has a node, in both stores."""
    found: list[ResourcePattern] = []
    for pattern_type in STORED_PATTERNS:
        for resource_type in STORED_TYPES:
            root = AclZNode.type_root(pattern_type.name, resource_type.word)
            found += [
                ResourcePattern(resource_type, name, pattern_type)
                for name in children_or_empty(zk, root)
            ]
    return found


def list_acls(
    zk: KazooClient, acl_filter: AclBindingFilter
) -> dict[ResourcePattern, frozenset[AccessControlEntry]]:
    """Every stored ACL matching the filter, by pattern; malformed nodes logged and skipped."""
    patterns = [p for p in stored_patterns(zk) if acl_filter.pattern.matches(p)]
    paths = [resource_path(p) for p in patterns]
    result: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
    for pattern, path, got in zip(patterns, paths, get_many(zk, paths), strict=True):
        if got is None:
            continue
        try:
            entries = decode_entries(path, got[0])
        except CorruptZNodeError as exc:
            log.warning("skipping ACL node: %s", exc)
            continue
        kept = frozenset(e for e in entries if acl_filter.entry.matches(e))
        if kept:
            result[pattern] = kept
    return result


def _unmatched(
    entries: frozenset[AccessControlEntry], acl_filter: AclBindingFilter
) -> frozenset[AccessControlEntry]:
    return frozenset(e for e in entries if not acl_filter.entry.matches(e))


def remove_acls(zk: KazooClient, acl_filter: AclBindingFilter) -> list[AclBinding]:
    """Delete every stored ACL matching the filter; returns those deleted."""
    removed: list[AclBinding] = []
    for pattern in sorted(list_acls(zk, acl_filter)):
        before, after = update_resource(
            zk,
            pattern,
            lambda current: frozenset(e for e in current if not acl_filter.entry.matches(e)),
        )
        removed += [AclBinding(pattern, e) for e in sorted(before - after)]
    return removed


def ensure_acl_roots(zk: KazooClient) -> None:
    """The stores' and change roots' parents, as Kafka's authorizer creates them at start."""
    for path in (
        znodes.KAFKA_ACL,
        znodes.KAFKA_ACL_CHANGES,
        f"{znodes.KAFKA_ACL_EXTENDED}/prefixed",
        znodes.KAFKA_ACL_EXTENDED_CHANGES,
    ):
        zk.ensure_path(path)
