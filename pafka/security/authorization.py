"""Kafka 2.8's ``AclAuthorizer.authorize`` decision, as a pure function of an ACL snapshot.

For a principal connecting from a host asking to perform an operation on a resource:

- a super user may do anything;
- the ACLs that apply to the resource are those of its literal name, of the ``*`` literal of
  its type, and of every PREFIXED pattern its name starts with;
- when none apply, ``allow.everyone.if.no.acl.found`` decides;
- an applicable DENY entry for the principal (or ``User:*``) and host (or ``*``) naming the
  operation (or ALL) refuses, whatever else allows;
- otherwise an ALLOW entry must name the operation, ALL, or an operation implying it: READ,
  WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS. A DENY of
  those does not deny what they imply.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pafka.security.acls import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    Operation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
)
from pafka.security.principal import KafkaPrincipal

# The operations whose ALLOW grants the asked one too (Kafka's AclAuthorizer.allowAclExists).
_IMPLIED_BY: Mapping[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset(
        {Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}
    ),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS}),
}


@dataclass(frozen=True)
class AuthorizerConfig:
    super_users: frozenset[KafkaPrincipal] = frozenset()
    allow_everyone_if_no_acl_found: bool = False


def parse_super_users(text: str) -> frozenset[KafkaPrincipal]:
    """Kafka's ``super.users``: principals separated by ``;`` (``User:admin;User:broker``)."""
    return frozenset(KafkaPrincipal.parse(p.strip()) for p in text.split(";") if p.strip())


@dataclass(frozen=True)
class AclSnapshot:
    """Every stored ACL by resource pattern; immutable, replaced whole on each change."""

    acls: Mapping[ResourcePattern, frozenset[AccessControlEntry]] = field(default_factory=dict)

    @classmethod
    def of(cls, bindings: Iterable[AclBinding]) -> AclSnapshot:
        grouped: dict[ResourcePattern, set[AccessControlEntry]] = {}
        for binding in bindings:
            grouped.setdefault(binding.pattern, set()).add(binding.entry)
        return cls({p: frozenset(e) for p, e in grouped.items()})

    def with_resource(
        self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]
    ) -> AclSnapshot:
        """A snapshot where ``pattern`` holds exactly ``entries`` (none: forgotten)."""
        updated = dict(self.acls)
        kept = frozenset(entries)
        if kept:
            updated[pattern] = kept
        else:
            updated.pop(pattern, None)
        return AclSnapshot(updated)

    def bindings(self) -> list[AclBinding]:
        return sorted(AclBinding(p, e) for p, entries in self.acls.items() for e in entries)

    def applicable(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        """The entries of every pattern that applies to the resource ``name``."""
        patterns = [
            ResourcePattern(resource_type, name, PatternType.LITERAL),
            ResourcePattern(resource_type, WILDCARD_RESOURCE, PatternType.LITERAL),
        ]
        # Each prefix of the name (the whole name included) looked up, rather than every
        # stored prefix scanned: the cost follows the name's length, not the ACL count.
        patterns += [
            ResourcePattern(resource_type, name[:end], PatternType.PREFIXED)
            for end in range(1, len(name) + 1)
        ]
        found: list[AccessControlEntry] = []
        for pattern in dict.fromkeys(patterns):
            found.extend(self.acls.get(pattern, ()))
        return found


def _entry_matches(
    entry: AccessControlEntry,
    principal: KafkaPrincipal,
    host: str,
    operations: frozenset[Operation],
    permission: PermissionType,
) -> bool:
    return (
        entry.permission is permission
        and entry.principal in (principal, WILDCARD_PRINCIPAL)
        and entry.host in (host, WILDCARD_HOST)
        and (entry.operation in operations or entry.operation is Operation.ALL)
    )


def authorize(
    snapshot: AclSnapshot,
    config: AuthorizerConfig,
    principal: KafkaPrincipal,
    host: str,
    operation: Operation,
    resource_type: ResourceType,
    name: str,
) -> bool:
    if operation in (Operation.ANY, Operation.ALL) or resource_type is ResourceType.ANY:
        raise ValueError("authorize an operation on a resource, not a filter")
    if principal in config.super_users:
        return True
    entries = snapshot.applicable(resource_type, name)
    if not entries:
        return config.allow_everyone_if_no_acl_found
    asked = frozenset({operation})
    if any(_entry_matches(e, principal, host, asked, PermissionType.DENY) for e in entries):
        return False
    allowing = _IMPLIED_BY.get(operation, asked)
    return any(_entry_matches(e, principal, host, allowing, PermissionType.ALLOW) for e in entries)


def authorize_by_resource_type(
    snapshot: AclSnapshot,
    config: AuthorizerConfig,
    principal: KafkaPrincipal,
    host: str,
    operation: Operation,
    resource_type: ResourceType,
) -> bool:
    """Kafka 2.8's ``authorizeByResourceType`` (KIP-679): whether the principal may perform
    ``operation`` on at least one resource of the type, such as WRITE on some topic for an
    idempotent producer's InitProducerId. An ALLOW counts unless a DENY dominates it: a literal
    DENY of the same name, a prefix DENY its name starts with, or a DENY of ``*``."""
    # A made-up name stands for "some resource": super users and, with no ACL of the type at
    # all, allow-everyone pass here.
    if authorize(snapshot, config, principal, host, operation, resource_type, "hardcode"):
        return True
    asked = frozenset({operation})
    allows: list[ResourcePattern] = []
    deny_literals: set[str] = set()
    deny_prefixes: set[str] = set()
    for pattern, entries in snapshot.acls.items():
        if pattern.resource_type is not resource_type:
            continue
        for entry in entries:
            if _entry_matches(entry, principal, host, asked, PermissionType.DENY):
                if pattern.pattern_type is PatternType.PREFIXED:
                    deny_prefixes.add(pattern.name)
                elif pattern.name == WILDCARD_RESOURCE:
                    return False
                else:
                    deny_literals.add(pattern.name)
            elif _entry_matches(entry, principal, host, asked, PermissionType.ALLOW):
                allows.append(pattern)
    for pattern in allows:
        if pattern.pattern_type is PatternType.LITERAL and pattern.name == WILDCARD_RESOURCE:
            return True
    for pattern in allows:
        if pattern.pattern_type is PatternType.LITERAL and pattern.name in deny_literals:
            continue
        name = pattern.name
        if not any(name[:end] in deny_prefixes for end in range(1, len(name) + 1)):
            return True
    return False
