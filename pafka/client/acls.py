"""The ACL APIs (CreateAcls, DescribeAcls, DeleteAcls v2) on pafka's own client.

Answers are Kafka's: a whole-request error (SECURITY_DISABLED, CLUSTER_AUTHORIZATION_FAILED)
is raised as its exception; a creation or filter refused on its own raises too, naming it.
"""

from __future__ import annotations

from typing import Any

from pafka.client.cluster import ClusterClient
from pafka.errors import for_code
from pafka.protocol.messages import ApiKey, request_class
from pafka.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    Operation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
    parse_principal,
    wire_fields,
)

VERSION = 2


def _check(answer: Any, what: str) -> None:
    """Raise the error an answer (or one item of it) carries, with its message."""
    if answer.error_code:
        detail = f"{what}: {answer.error_message}" if answer.error_message else what
        raise for_code(answer.error_code, detail)


def _binding(item: Any, entry: Any) -> AclBinding:
    return AclBinding(
        ResourcePattern(
            ResourceType.from_code(item.resource_type),
            item.resource_name,
            PatternType.from_code(item.pattern_type),
        ),
        AccessControlEntry(
            parse_principal(entry.principal),
            entry.host,
            Operation.from_code(entry.operation),
            PermissionType.from_code(entry.permission_type),
        ),
    )


def _filter_fields(acl_filter: AclBindingFilter) -> dict[str, Any]:
    return {
        "resource_type_filter": int(acl_filter.pattern.resource_type),
        "resource_name_filter": acl_filter.pattern.name,
        "pattern_type_filter": int(acl_filter.pattern.pattern_type),
        "principal_filter": acl_filter.entry.principal,
        "host_filter": acl_filter.entry.host,
        "operation": int(acl_filter.entry.operation),
        "permission_type": int(acl_filter.entry.permission),
    }


async def create_acls(cluster: ClusterClient, bindings: list[AclBinding]) -> None:
    cls = request_class(ApiKey.CREATE_ACLS)[VERSION]
    creations = [
        cls.AclCreation(resource_pattern_type=int(b.pattern.pattern_type), **wire_fields(b))
        for b in bindings
    ]
    response = await cluster.call_any(ApiKey.CREATE_ACLS, VERSION, cls(creations=creations))
    for binding, result in zip(bindings, response.results, strict=True):
        _check(result, f"creating {binding}")


async def describe_acls(cluster: ClusterClient, acl_filter: AclBindingFilter) -> list[AclBinding]:
    cls = request_class(ApiKey.DESCRIBE_ACLS)[VERSION]
    response = await cluster.call_any(
        ApiKey.DESCRIBE_ACLS, VERSION, cls(**_filter_fields(acl_filter))
    )
    _check(response, "describing ACLs")
    return sorted(_binding(r, a) for r in response.resources for a in r.acls)


async def delete_acls(cluster: ClusterClient, acl_filter: AclBindingFilter) -> list[AclBinding]:
    cls = request_class(ApiKey.DELETE_ACLS)[VERSION]
    body = cls(filters=[cls.DeleteAclsFilter(**_filter_fields(acl_filter))])
    response = await cluster.call_any(ApiKey.DELETE_ACLS, VERSION, body)
    result = response.filter_results[0]
    _check(result, "deleting ACLs")
    for acl in result.matching_acls:
        _check(acl, "deleting an ACL")
    return sorted(_binding(a, a) for a in result.matching_acls)
