"""The group membership APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
ListGroups, DescribeGroups, DeleteGroups. Decoding and encoding only; the coordinator decides.
"""

from __future__ import annotations

from typing import Any

from pafka.cluster.names import validate_group_id
from pafka.errors import (
    CoordinationError,
    CoordinatorNotAvailableError,
    CorruptZNodeError,
    InvalidRequestError,
    KafkaApiError,
    MemberIdRequiredError,
    PafkaError,
    UnknownServerError,
)
from pafka.groups import zk_coordinated
from pafka.groups.state import GroupState
from pafka.groups.zk_coordinated import ZkConsumers
from pafka.protocol.messages import response_class
from pafka.security.acls import Operation, ResourceType
from pafka.transactions.ids import validate_transactional_id
from services.broker.groups.admission import JoinRequest
from services.broker.groups.runtime import GroupRuntime
from services.broker.handlers.authorization import (
    authorized_operations,
    cluster_allowed,
    group_allowed,
    require_group,
    require_transactional_id,
)
from services.broker.handlers.context import RequestContext

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


def error_code(exc: PafkaError) -> int:
    """Group APIs report ZooKeeper trouble as COORDINATOR_NOT_AVAILABLE: clients retry it. A
    malformed group node will not heal by retrying: UNKNOWN_SERVER_ERROR, for that group only."""
    if isinstance(exc, CorruptZNodeError):
        return UnknownServerError.code
    if isinstance(exc, KafkaApiError):
        return exc.code
    if isinstance(exc, CoordinationError):
        return CoordinatorNotAvailableError.code
    return InvalidRequestError.code if exc.code == InvalidRequestError.code else -1


async def handle_find_coordinator(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    keys = list(request.coordinator_keys) if ctx.api_version >= 4 else [request.key]
    key_type = int(getattr(request, "key_type", GROUP_KEY_TYPE))
    found: list[tuple[str, int, str | None, int, str, int]] = []
    for key in keys:
        try:
            if key_type == TRANSACTION_KEY_TYPE:
                require_transactional_id(ctx, Operation.DESCRIBE, key)
                info = await ctx.broker.transactions.find(validate_transactional_id(key))
            elif key_type != GROUP_KEY_TYPE:
                raise InvalidRequestError(f"unknown coordinator key type {key_type}")
            else:
                require_group(ctx, Operation.DESCRIBE, key)
                validate_group_id(key)
                info = await ctx.broker.groups.find(key)
            address = info.address(ctx.listener)
            if address is None:
                raise CoordinatorNotAvailableError(
                    f"the coordinator of {key} has no {ctx.listener} listener"
                )
            found.append((key, 0, None, info.id, *address))
        except PafkaError as exc:
            found.append((key, ctx.error(error_code(exc)), str(exc), -1, "", -1))
    if ctx.api_version >= 4:
        coordinators = [
            cls.Coordinator(key=k, node_id=n, host=h, port=p, error_code=e, error_message=m)
            for k, e, m, n, h, p in found
        ]
        return cls(throttle_time_ms=0, coordinators=coordinators)
    _, code, message, node, host, port = found[0]
    return cls(
        throttle_time_ms=0,
        error_code=code,
        error_message=message,
        node_id=node,
        host=host,
        port=port,
    )


async def handle_join_group(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    member_id = request.member_id or ""
    try:
        require_group(ctx, Operation.READ, request.group_id)
        validate_group_id(request.group_id)
        session_ms = int(request.session_timeout_ms)
        join = JoinRequest(
            group_id=request.group_id,
            member_id=member_id,
            instance_id=getattr(request, "group_instance_id", None),
            client_id=ctx.client_id or "",
            client_host=ctx.client_host,
            session_timeout_ms=session_ms,
            # v0 has no rebalance timeout (the decoded field reads -1): Kafka takes the session
            # timeout for it.
            rebalance_timeout_ms=(
                int(request.rebalance_timeout_ms) if ctx.api_version >= 1 else session_ms
            ),
            protocol_type=request.protocol_type,
            protocols=tuple((p.name, bytes(p.metadata or b"")) for p in request.protocols),
            require_known_member_id=ctx.api_version >= 4,
        )
        result = await ctx.broker.group_protocol.join(join)
    except PafkaError as exc:
        if isinstance(exc, MemberIdRequiredError):
            member_id = exc.member_id
        return cls(
            throttle_time_ms=0,
            error_code=ctx.error(error_code(exc)),
            generation_id=-1,
            protocol_type=None,
            protocol_name=None if ctx.api_version >= 7 else "",
            leader="",
            member_id=member_id,
            members=[],
        )
    members = [
        cls.JoinGroupResponseMember(member_id=m, group_instance_id=i, metadata=data)
        for m, i, data in result.members
    ]
    return cls(
        throttle_time_ms=0,
        error_code=0,
        generation_id=result.generation,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol,
        leader=result.leader,
        member_id=result.member_id,
        members=members,
    )


async def handle_sync_group(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    protocol_type = getattr(request, "protocol_type", None)
    protocol = getattr(request, "protocol_name", None)
    try:
        require_group(ctx, Operation.READ, request.group_id)
        validate_group_id(request.group_id)
        assignment = await ctx.broker.group_protocol.sync(
            request.group_id,
            int(request.generation_id),
            request.member_id,
            getattr(request, "group_instance_id", None),
            {a.member_id: bytes(a.assignment or b"") for a in request.assignments or []},
        )
        rt = ctx.broker.groups.groups.get(request.group_id)
        if rt is not None:
            protocol_type, protocol = rt.meta.protocol_type, rt.meta.protocol
        code = 0
    except PafkaError as exc:
        assignment, code = b"", ctx.error(error_code(exc))
    return cls(
        throttle_time_ms=0,
        error_code=code,
        protocol_type=protocol_type,
        protocol_name=protocol,
        assignment=assignment,
    )


async def handle_heartbeat(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    try:
        require_group(ctx, Operation.READ, request.group_id)
        validate_group_id(request.group_id)
        await ctx.broker.group_protocol.heartbeat(
            request.group_id,
            int(request.generation_id),
            request.member_id,
            getattr(request, "group_instance_id", None),
        )
        code = 0
    except PafkaError as exc:
        code = ctx.error(error_code(exc))
    return cls(throttle_time_ms=0, error_code=code)


async def handle_leave_group(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    if ctx.api_version >= 3:
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        leaving = [(request.member_id, None)]
    try:
        require_group(ctx, Operation.READ, request.group_id)
        validate_group_id(request.group_id)
        outcomes = await ctx.broker.group_protocol.leave(request.group_id, leaving)
    except PafkaError as exc:
        return cls(throttle_time_ms=0, error_code=ctx.error(error_code(exc)), members=[])
    codes = [ctx.error(error_code(e)) if e is not None else 0 for e in outcomes]
    members = [
        cls.MemberResponse(member_id=m, group_instance_id=i, error_code=c)
        for (m, i), c in zip(leaving, codes, strict=True)
    ]
    top = codes[0] if ctx.api_version < 3 else 0
    return cls(throttle_time_ms=0, error_code=top, members=members)


async def handle_list_groups(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    wanted = {s.lower() for s in (getattr(request, "states_filter", None) or [])}
    coordinator = ctx.broker.groups
    try:
        held = await coordinator.list_groups()
    except PafkaError as exc:
        return cls(throttle_time_ms=0, error_code=ctx.error(error_code(exc)), groups=[])
    listed: list[tuple[str, str, str]] = []
    # DESCRIBE on the cluster lists every group; otherwise only those the caller may DESCRIBE.
    every = cluster_allowed(ctx, Operation.DESCRIBE)
    for rt in held:
        if not every and not group_allowed(ctx, Operation.DESCRIBE, rt.group_id):
            continue
        protocol_type, state = rt.meta.protocol_type or "consumer", rt.meta.state.value
        if not rt.meta.members:
            try:
                if await coordinator.zk_consumers(rt.group_id):
                    protocol_type, state = zk_coordinated.PROTOCOL_TYPE, zk_coordinated.STATE
            except PafkaError:
                continue  # logged; one unreadable group leaves only itself out
        listed.append((rt.group_id, protocol_type, state))
    groups = [
        cls.ListedGroup(group_id=g, protocol_type=t, group_state=s)
        for g, t, s in listed
        if not wanted or s.lower() in wanted
    ]
    return cls(throttle_time_ms=0, error_code=0, groups=groups)


async def handle_describe_groups(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    described = []
    for group in request.groups:
        try:
            require_group(ctx, Operation.DESCRIBE, group)
            validate_group_id(group)
            rt = await ctx.broker.groups.group(group, create=False)
            consumers = (
                await ctx.broker.groups.zk_consumers(group)
                if rt is not None and not rt.meta.members
                else None
            )
        except PafkaError as exc:
            described.append(
                cls.DescribedGroup(
                    error_code=ctx.error(error_code(exc)),
                    error_message=str(exc),
                    group_id=group,
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    members=[],
                )
            )
            continue
        if consumers:
            described.append(_described_zk_coordinated(cls, group, consumers))
            continue
        entry = _described(cls, group, rt)
        if getattr(request, "include_authorized_operations", False):
            entry.authorized_operations = authorized_operations(ctx, ResourceType.GROUP, group)
        described.append(entry)
    return cls(throttle_time_ms=0, groups=described)


def _described(cls: Any, group: str, rt: GroupRuntime | None) -> Any:
    if rt is None:
        state, protocol_type, protocol, members = GroupState.DEAD.value, "", "", []
    else:
        meta = rt.meta
        state, protocol_type = meta.state.value, meta.protocol_type or ""
        stable = meta.state is GroupState.STABLE
        protocol = meta.protocol or "" if stable else ""
        members = [
            cls.DescribedGroup.DescribedGroupMember(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata(meta.protocol)
                if stable and meta.protocol and m.protocols
                else b"",
                member_assignment=m.assignment if stable else b"",
            )
            for m in meta.members.values()
        ]
    return cls.DescribedGroup(
        error_code=0,
        error_message=None,
        group_id=group,
        group_state=state,
        protocol_type=protocol_type,
        protocol_data=protocol,
        members=members,
        authorized_operations=None,  # "not requested" (INT32_MIN on the wire)
    )


def _described_zk_coordinated(cls: Any, group: str, consumers: ZkConsumers) -> Any:
    members = [
        cls.DescribedGroup.DescribedGroupMember(
            member_id=consumer,
            group_instance_id=None,
            # Kafka 0.8 registrations carry no client id; the consumer id is what its logs show.
            client_id=consumer,
            client_host=zk_coordinated.client_host(consumer, group),
            member_metadata=b"",
            member_assignment=assignment,
        )
        for consumer, assignment in consumers.assignments().items()
    ]
    return cls.DescribedGroup(
        error_code=0,
        error_message=None,
        group_id=group,
        group_state=zk_coordinated.STATE,
        protocol_type=zk_coordinated.PROTOCOL_TYPE,
        protocol_data=zk_coordinated.PROTOCOL,
        members=members,
        authorized_operations=None,
    )


async def handle_delete_groups(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    results = []
    for group in request.groups_names:
        try:
            require_group(ctx, Operation.DELETE, group)
            validate_group_id(group)
            await ctx.broker.groups.delete(group)
            code = 0
        except PafkaError as exc:
            code = ctx.error(error_code(exc))
        results.append(cls.DeletableGroupResult(group_id=group, error_code=code))
    return cls(throttle_time_ms=0, results=results)
