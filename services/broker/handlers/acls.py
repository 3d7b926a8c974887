"""DescribeAcls, CreateAcls and DeleteAcls (Kafka 2.8: versions 0-2 of each).

Without an authorizer every answer is SECURITY_DISABLED. Describing needs DESCRIBE on the
cluster, creating and deleting ALTER (CLUSTER_AUTHORIZATION_FAILED otherwise, for the whole
answer or each creation and filter). A creation or filter with unknown codes, an empty name,
a cluster resource not named ``kafka-cluster`` or a malformed principal is INVALID_REQUEST on
its own. Descriptions come from the authorizer's snapshot; creations and deletions are written
to ZooKeeper (``pafka.admin.acls``), after which this broker catches up with the change
notifications so its next answer shows them.
"""

from __future__ import annotations

from typing import Any

from pafka.admin import acls as store
from pafka.errors import (
    ClusterAuthorizationFailedError,
    InvalidRequestError,
    PafkaError,
    SecurityDisabledError,
)
from pafka.protocol.messages import response_class
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
    wire_fields,
)
from services.broker.handlers.authorization import cluster_allowed
from services.broker.handlers.context import RequestContext

DISABLED = "No Authorizer is configured on the broker"
UNKNOWN_SERVER_ERROR = -1


def _pattern_type(request: Any, field: str, version: int) -> PatternType:
    # v0 knows literal patterns only.
    return PatternType.from_code(getattr(request, field)) if version >= 1 else PatternType.LITERAL


def binding_filter(request: Any, version: int) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(
            ResourceType.from_code(request.resource_type_filter),
            request.resource_name_filter,
            _pattern_type(request, "pattern_type_filter", version),
        ),
        AccessControlEntryFilter(
            request.principal_filter,
            request.host_filter,
            Operation.from_code(request.operation),
            PermissionType.from_code(request.permission_type),
        ),
    )


def _binding(creation: Any, version: int) -> AclBinding:
    binding = AclBinding(
        ResourcePattern(
            ResourceType.from_code(creation.resource_type),
            creation.resource_name,
            _pattern_type(creation, "resource_pattern_type", version),
        ),
        AccessControlEntry(
            parse_principal(creation.principal),
            creation.host,
            Operation.from_code(creation.operation),
            PermissionType.from_code(creation.permission_type),
        ),
    )
    binding.validate()
    store.resource_path(binding.pattern)
    return binding


def _refusal(ctx: RequestContext, operation: Operation) -> PafkaError | None:
    if not ctx.broker.authorizer.enabled:
        return SecurityDisabledError(DISABLED)
    if not cluster_allowed(ctx, operation):
        return ClusterAuthorizationFailedError(
            f"{ctx.principal} may not {operation.name} the cluster's ACLs"
        )
    return None


def _code(exc: PafkaError) -> int:
    return int(getattr(exc, "code", UNKNOWN_SERVER_ERROR))


async def handle_describe_acls(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    refused = _refusal(ctx, Operation.DESCRIBE)
    if refused is None:
        try:
            acl_filter = binding_filter(request, ctx.api_version)
        except InvalidRequestError as exc:
            refused = exc
    if refused is not None:
        return cls(
            throttle_time_ms=0,
            error_code=ctx.error(_code(refused)),
            error_message=refused.message,
            resources=[],
        )
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for binding in ctx.broker.authorizer.snapshot.bindings():
        if acl_filter.matches(binding):
            by_pattern.setdefault(binding.pattern, []).append(binding.entry)
    resource_cls = cls.DescribeAclsResource
    resources = [
        resource_cls(
            resource_type=int(pattern.resource_type),
            resource_name=pattern.name,
            pattern_type=int(pattern.pattern_type),
            acls=[
                resource_cls.AclDescription(
                    principal=str(e.principal),
                    host=e.host,
                    operation=int(e.operation),
                    permission_type=int(e.permission),
                )
                for e in entries
            ],
        )
        for pattern, entries in sorted(by_pattern.items())
    ]
    return cls(throttle_time_ms=0, error_code=0, error_message=None, resources=resources)


async def handle_create_acls(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    result_cls = cls.AclCreationResult
    refused = _refusal(ctx, Operation.ALTER)
    if refused is not None:
        code = _code(refused)
        results = [
            result_cls(error_code=ctx.error(code), error_message=refused.message)
            for _ in request.creations
        ]
        return cls(throttle_time_ms=0, results=results)
    outcomes: list[PafkaError | None] = []
    for creation in request.creations:
        try:
            binding = _binding(creation, ctx.api_version)
            await ctx.broker.zk.run(store.add_acls, ctx.broker.zk.kazoo, [binding])
            outcomes.append(None)
        except PafkaError as exc:
            outcomes.append(exc)
    await ctx.broker.authorizer.catch_up()
    results = [
        result_cls(error_code=0, error_message=None)
        if exc is None
        else result_cls(error_code=ctx.error(_code(exc)), error_message=exc.message)
        for exc in outcomes
    ]
    return cls(throttle_time_ms=0, results=results)


async def handle_delete_acls(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    result_cls = cls.DeleteAclsFilterResult
    matching_cls = result_cls.DeleteAclsMatchingAcl
    refused = _refusal(ctx, Operation.ALTER)
    results = []
    for raw in request.filters:
        error = refused
        deleted: list[AclBinding] = []
        if error is None:
            try:
                acl_filter = binding_filter(raw, ctx.api_version)
                deleted = await ctx.broker.zk.run(
                    store.remove_acls, ctx.broker.zk.kazoo, acl_filter
                )
            except PafkaError as exc:
                error = exc
        matching = [
            matching_cls(
                error_code=0,
                error_message=None,
                pattern_type=int(b.pattern.pattern_type),
                **wire_fields(b),
            )
            for b in deleted
        ]
        results.append(
            result_cls(
                error_code=0 if error is None else ctx.error(_code(error)),
                error_message=None if error is None else error.message,
                matching_acls=matching,
            )
        )
    if refused is None:
        await ctx.broker.authorizer.catch_up()
    return cls(throttle_time_ms=0, filter_results=results)
