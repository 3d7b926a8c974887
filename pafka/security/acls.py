"""Kafka's ACL model: resources, patterns, operations, permissions, bindings and their filters.

An ACL binding is a resource pattern (``Topic`` ``orders`` ``LITERAL``) with an access control
entry (``User:alice`` from host ``*`` is ``Allow``-ed ``Read``). Filters select bindings as
DescribeAcls and DeleteAcls do, including the ``MATCH`` pattern type: every pattern that
applies to a resource name (that literal name, the ``*`` literal, each prefix of the name).

The wire codes are Kafka's (``ResourceType``, ``PatternType``, ``AclOperation``,
``AclPermissionType``); the words stored in ZooKeeper are the ones Kafka's ``SecurityUtils``
writes (``Topic``, ``TransactionalId``, ``ClusterAction``, ``Allow``) and parses (case and
CamelCase insensitive).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Self

from pafka.errors import InvalidPrincipalTypeError, InvalidRequestError
from pafka.security.principal import KafkaPrincipal
from pafka.zk.znodes import AclEntryPayload

WILDCARD_RESOURCE = "*"
WILDCARD_HOST = "*"
WILDCARD_PRINCIPAL = KafkaPrincipal.user("*")
CLUSTER_NAME = "kafka-cluster"

_CAMEL_BOUNDARY = re.compile(r"([a-z])([A-Z])")


class _Coded(enum.IntEnum):
    """An enum with Kafka's wire codes and its CamelCase ZooKeeper words."""

    @classmethod
    def from_code(cls, code: int) -> Self:
        try:
            return cls(code)
        except ValueError:
            raise InvalidRequestError(f"unknown {cls.__name__} code {code}") from None

    @classmethod
    def parse(cls, word: str) -> Self:
        """``Read``, ``READ``, ``read``, ``ClusterAction``, ``cluster_action`` alike."""
        key = _CAMEL_BOUNDARY.sub(r"\1_\2", word.strip()).upper().replace("-", "_")
        try:
            return cls[key]
        except KeyError:
            raise ValueError(f"{word!r} is not a {cls.__name__}") from None

    @property
    def word(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))


class ResourceType(_Coded):
    ANY = 1  # filters only
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6


class PatternType(_Coded):
    ANY = 1  # filters only: either stored type, names compared exactly
    MATCH = 2  # filters only: every pattern that applies to the name
    LITERAL = 3
    PREFIXED = 4


class Operation(_Coded):
    ANY = 1  # filters only
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class PermissionType(_Coded):
    ANY = 1  # filters only
    DENY = 2
    ALLOW = 3


@dataclass(frozen=True, order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def validate(self) -> None:
        """What a stored pattern must be (CreateAcls' INVALID_REQUEST otherwise)."""
        if self.resource_type is ResourceType.ANY:
            raise InvalidRequestError("an ACL's resource type cannot be ANY")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidRequestError(f"an ACL's pattern type cannot be {self.pattern_type.name}")
        if not self.name:
            raise InvalidRequestError("invalid empty resource name")
        if self.resource_type is ResourceType.CLUSTER and self.name != CLUSTER_NAME:
            raise InvalidRequestError(
                f"the only valid name for the CLUSTER resource is {CLUSTER_NAME}"
            )


@dataclass(frozen=True, order=True)
class AccessControlEntry:
    principal: KafkaPrincipal
    host: str
    operation: Operation
    permission: PermissionType

    def validate(self) -> None:
        if self.operation is Operation.ANY:
            raise InvalidRequestError("an ACL's operation cannot be ANY")
        if self.permission is PermissionType.ANY:
            raise InvalidRequestError("an ACL's permission type cannot be ANY")
        if not self.host:
            raise InvalidRequestError("an ACL's host cannot be empty (use * for every host)")


@dataclass(frozen=True, order=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    def validate(self) -> None:
        self.pattern.validate()
        self.entry.validate()

    def __str__(self) -> str:
        p, e = self.pattern, self.entry
        return (
            f"{e.permission.name} {e.principal} from {e.host} to {e.operation.name} "
            f"{p.resource_type.name} {p.name} ({p.pattern_type.name})"
        )


@dataclass(frozen=True)
class ResourcePatternFilter:
    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type not in (ResourceType.ANY, pattern.resource_type):
            return False
        specific = self.pattern_type not in (PatternType.ANY, PatternType.MATCH)
        if specific and self.pattern_type is not pattern.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        # MATCH: the patterns that would apply to a resource of this name.
        if pattern.pattern_type is PatternType.LITERAL:
            return pattern.name in (self.name, WILDCARD_RESOURCE)
        return self.name.startswith(pattern.name)


@dataclass(frozen=True)
class AccessControlEntryFilter:
    principal: str | None
    host: str | None
    operation: Operation
    permission: PermissionType

    def matches(self, entry: AccessControlEntry) -> bool:
        if self.principal is not None and self.principal != str(entry.principal):
            return False
        if self.host is not None and self.host != entry.host:
            return False
        if self.operation not in (Operation.ANY, entry.operation):
            return False
        return self.permission in (PermissionType.ANY, entry.permission)


@dataclass(frozen=True)
class AclBindingFilter:
    pattern: ResourcePatternFilter
    entry: AccessControlEntryFilter

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern.matches(binding.pattern) and self.entry.matches(binding.entry)


ANY_BINDING = AclBindingFilter(
    ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY),
    AccessControlEntryFilter(None, None, Operation.ANY, PermissionType.ANY),
)


def wire_fields(binding: AclBinding) -> dict[str, int | str]:
    """A binding's fields as the ACL APIs name them, but its pattern type, which each message
    names its own way."""
    return {
        "resource_type": int(binding.pattern.resource_type),
        "resource_name": binding.pattern.name,
        "principal": str(binding.entry.principal),
        "host": binding.entry.host,
        "operation": int(binding.entry.operation),
        "permission_type": int(binding.entry.permission),
    }


def parse_principal(text: str) -> KafkaPrincipal:
    """A principal of an ACL request; Kafka answers a malformed one INVALID_REQUEST."""
    try:
        return KafkaPrincipal.parse(text)
    except InvalidPrincipalTypeError as exc:
        raise InvalidRequestError(exc.message) from exc


def entry_to_payload(entry: AccessControlEntry) -> AclEntryPayload:
    return AclEntryPayload(
        principal=str(entry.principal),
        permission_type=entry.permission.word,
        operation=entry.operation.word,
        host=entry.host,
    )


def entry_from_payload(payload: AclEntryPayload) -> AccessControlEntry:
    """The entry a stored ACL means; ValueError for words Kafka would not have written."""
    try:
        principal = KafkaPrincipal.parse(payload.principal)
    except InvalidPrincipalTypeError as exc:
        raise ValueError(exc.message) from exc
    entry = AccessControlEntry(
        principal=principal,
        host=payload.host,
        operation=Operation.parse(payload.operation),
        permission=PermissionType.parse(payload.permission_type),
    )
    if entry.operation is Operation.ANY or entry.permission is PermissionType.ANY:
        raise ValueError(f"a stored ACL cannot hold {entry.operation.name}/{entry.permission.name}")
    return entry
