"""ACL bindings and filters as Confluent REST Proxy v3 spells them, to and from Kafka's (pure).

REST Proxy names every enum value in upper case with underscores (``TRANSACTIONAL_ID``,
``CLUSTER_ACTION``, ``DESCRIBE_CONFIGS``), the names of Kafka's Java enums, which are also
:mod:`pafka.security.acls`' names. It has one value Kafka's wire codes give no binding,
``UNKNOWN``, which it refuses everywhere; its search and deletion need ``resource_type``,
``pattern_type``, ``operation`` and ``permission`` (``ANY`` matches everything; ``MATCH`` every
pattern applying to ``resource_name``), and treat an empty or absent ``resource_name``,
``principal`` or ``host`` as any. A creation needs every field, none of them ``ANY`` or
``MATCH``. A refusal is 400 (``error_code`` 40000) naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from pafka.errors import InvalidRequestError, RestError
from pafka.security.acls import (
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
    parse_principal,
)
from pafka.security.principal import KafkaPrincipal

BAD_REQUEST = 40000
UNKNOWN = "UNKNOWN"
E = TypeVar("E", ResourceType, PatternType, Operation, PermissionType)

# The values each field may take in REST Proxy's OpenAPI (UNKNOWN included, refused on use).
RESOURCE_TYPES = [UNKNOWN, *(t.name for t in ResourceType)]
PATTERN_TYPES = [UNKNOWN, *(t.name for t in PatternType)]
OPERATIONS = [UNKNOWN, *(o.name for o in Operation)]
PERMISSIONS = [UNKNOWN, *(p.name for p in PermissionType)]
# What only a filter may hold.
FILTER_ONLY_PATTERNS = (PatternType.ANY, PatternType.MATCH)


@dataclass(frozen=True)
class AclTerms:
    """One request's seven fields as REST Proxy sends them (query parameters or a body)."""

    resource_type: str | None = None
    resource_name: str | None = None
    pattern_type: str | None = None
    principal: str | None = None
    host: str | None = None
    operation: str | None = None
    permission: str | None = None


def _value(cls: type[E], field: str, text: str | None) -> E:
    if text is None or not text.strip():
        raise RestError(BAD_REQUEST, f"{field} is required")
    name = text.strip().upper()
    if name == UNKNOWN:
        raise RestError(BAD_REQUEST, f"{field} cannot be unspecified or UNKNOWN")
    try:
        return cls[name]
    except KeyError:
        choices = ", ".join(m.name for m in cls)
        raise RestError(BAD_REQUEST, f"{field} {text!r} is not one of {choices}") from None


def _any_if_empty(text: str | None) -> str | None:
    return text if text else None


def binding_filter(terms: AclTerms) -> AclBindingFilter:
    """A search's or deletion's filter."""
    principal = _any_if_empty(terms.principal)
    if principal is not None:
        principal = str(_principal(principal))
    return AclBindingFilter(
        ResourcePatternFilter(
            _value(ResourceType, "resource_type", terms.resource_type),
            _any_if_empty(terms.resource_name),
            _value(PatternType, "pattern_type", terms.pattern_type),
        ),
        AccessControlEntryFilter(
            principal,
            _any_if_empty(terms.host),
            _value(Operation, "operation", terms.operation),
            _value(PermissionType, "permission", terms.permission),
        ),
    )


def binding(terms: AclTerms) -> AclBinding:
    """A creation's binding: every field given, no filter-only value."""
    resource_type = _value(ResourceType, "resource_type", terms.resource_type)
    pattern_type = _value(PatternType, "pattern_type", terms.pattern_type)
    operation = _value(Operation, "operation", terms.operation)
    permission = _value(PermissionType, "permission", terms.permission)
    for field, value in (
        ("resource_type", resource_type),
        ("pattern_type", pattern_type),
        ("operation", operation),
        ("permission", permission),
    ):
        if _filter_only(value):
            raise RestError(BAD_REQUEST, f"{field} cannot be {value.name} in an ACL")
    for field, text in (
        ("resource_name", terms.resource_name),
        ("principal", terms.principal),
        ("host", terms.host),
    ):
        if not text:
            raise RestError(BAD_REQUEST, f"{field} is required")
    assert terms.resource_name and terms.principal and terms.host
    return AclBinding(
        ResourcePattern(resource_type, terms.resource_name, pattern_type),
        AccessControlEntry(_principal(terms.principal), terms.host, operation, permission),
    )


def _filter_only(value: Enum) -> bool:
    if isinstance(value, PatternType):
        return value in FILTER_ONLY_PATTERNS
    return value.name == "ANY"


def _principal(text: str) -> KafkaPrincipal:
    try:
        return parse_principal(text)
    except InvalidRequestError as exc:
        raise RestError(BAD_REQUEST, f"principal {text!r}: {exc.message}") from None


def rest_fields(acl: AclBinding) -> dict[str, str]:
    """A binding's fields in REST Proxy's spelling."""
    return {
        "resource_type": acl.pattern.resource_type.name,
        "resource_name": acl.pattern.name,
        "pattern_type": acl.pattern.pattern_type.name,
        "principal": str(acl.entry.principal),
        "host": acl.entry.host,
        "operation": acl.entry.operation.name,
        "permission": acl.entry.permission.name,
    }
