"""Native group membership over REST: join, heartbeat, commit, leave, describe.

A REST member is a real member of a Kafka consumer group, speaking the "consumer" protocol through
whichever gateway replica serves each request (a gateway keeps nothing about it):

* ``POST /groups/{g}/members`` long-polls the whole rebalance round: JoinGroup (a new member gets
  its id from the coordinator), the assignment when this member is elected leader, SyncGroup,
  and the committed offsets of what it was given. Kafka-protocol members using the same assignor
  name share the group with REST members and get one consistent assignment.
* Liveness is heartbeats: ``POST /groups/{g}/members/{m}/heartbeat`` at least once per
  ``session_timeout_ms``. When it answers 409 with ``"rejoin": true`` the member stops consuming
  and joins again (same ``member_id``; after 404, without one).
* ``POST /groups/{g}/offsets`` commits for the current generation and owned partitions only.
* ``DELETE /groups/{g}/members/{m}`` leaves at once (the group rebalances without waiting).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Body, Depends, Path, Request, Response
from fastapi.responses import JSONResponse

from pafka.client import group_lags
from pafka.client.group_join import join_consumer, partition_counts
from pafka.client.groups import (
    GroupClient,
    GroupDescription,
    OffsetAndMetadata,
)
from pafka.client.isolation import IsolationLevel
from pafka.errors import (
    CorruptZNodeError,
    FencedInstanceIdError,
    GroupIdNotFoundError,
    IllegalGenerationError,
    InvalidSessionTimeoutError,
    KafkaApiError,
    PafkaError,
    RebalanceInProgressError,
    RestError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
)
from pafka.groups.consumer_protocol import TopicPartition
from pafka.zk.znodes import ConsumerGroupZNodes, GroupZNode
from services.gateway.access import describable_topics
from services.gateway.context import GatewayContext, context
from services.gateway.errors import (
    ILLEGAL_STATE,
    INVALID_CONSUMER_CONFIG,
    UNKNOWN_CONSUMER_INSTANCE,
    UNKNOWN_TOPIC,
    rest_code,
)
from services.gateway.models.groups import (
    AssignedPartition,
    CommitError,
    CommitRequest,
    CommitResponse,
    CommitResult,
    GroupMemberView,
    GroupView,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinRequest,
    JoinResponse,
    MemberPartition,
    PartitionLag,
    RejoinError,
)

router = APIRouter(prefix="/groups", tags=["groups (native membership)"])

STALE_GENERATION = 40901
T = TypeVar("T")

GroupId = Annotated[str, Path(description="Consumer group id", examples=["orders-processors"])]
MemberId = Annotated[str, Path(description="Member id the join returned")]
REJOIN_RESPONSES: dict[int | str, dict[str, Any]] = {
    404: {"model": RejoinError, "description": "Unknown member: join again without member_id"},
    409: {"model": RejoinError, "description": "Rebalancing (40902) or stale generation (40901)"},
}


# -- errors ----------------------------------------------------------------------------------


def membership_error(exc: PafkaError) -> JSONResponse | None:
    """The answer for the errors that tell a member where it stands, with ``rejoin``: join
    again (with the same member id after a 409; as a new member after a 404)."""
    if isinstance(exc, UnknownMemberIdError):
        status, code, rejoin = 404, UNKNOWN_CONSUMER_INSTANCE, True
    elif isinstance(exc, RebalanceInProgressError):
        status, code, rejoin = 409, ILLEGAL_STATE, True
    elif isinstance(exc, IllegalGenerationError):
        status, code, rejoin = 409, STALE_GENERATION, True
    elif isinstance(exc, FencedInstanceIdError):
        # Another process joined with this instance id and took the member's place.
        status, code, rejoin = 409, STALE_GENERATION, False
    else:
        return None
    body = RejoinError(error_code=code, message=exc.message, rejoin=rejoin)
    return JSONResponse(body.model_dump(), status)


async def as_member(call: Awaitable[T]) -> T | JSONResponse:
    """What ``call`` returns, or the answer telling the member where it stands."""
    try:
        return await call
    except InvalidSessionTimeoutError as exc:
        raise RestError(INVALID_CONSUMER_CONFIG, exc.message) from exc
    except PafkaError as exc:
        if (answer := membership_error(exc)) is None:
            raise
        return answer


# -- routes ----------------------------------------------------------------------------------


@router.post(
    "/{group}/members",
    response_model=JoinResponse,
    summary="Join the group (long poll: returns once the rebalance assigned partitions)",
    responses={**REJOIN_RESPONSES, 422: {"description": "Bad assignor or session timeout"}},
)
async def join(
    group: GroupId,
    request: Annotated[JoinRequest, Body()],
    ctx: Annotated[GatewayContext, Depends(context)],
) -> JoinResponse | JSONResponse:
    groups = ctx.groups
    counts = await partition_counts(groups.cluster, request.topics)
    missing = sorted(set(request.topics) - set(counts))
    if missing:
        raise RestError(UNKNOWN_TOPIC, f"topics {missing} do not exist")
    joined = await as_member(
        join_consumer(
            groups,
            group,
            request.topics,
            assignor=request.assignor,
            member_id=request.member_id or "",
            instance_id=request.instance_id,
            session_timeout_ms=request.session_timeout_ms,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
        )
    )
    if isinstance(joined, JSONResponse):
        return joined
    committed = await groups.fetch_offsets(group, joined.partitions) if joined.partitions else {}
    return JoinResponse(
        member_id=joined.member_id,
        generation=joined.generation,
        assignor=joined.protocol,
        leader=joined.is_leader,
        assignment=[
            AssignedPartition(
                topic=t,
                partition=p,
                committed_offset=found.offset if (found := committed.get((t, p))) else -1,
            )
            for t, p in sorted(joined.partitions)
        ],
    )


@router.post(
    "/{group}/members/{member}/heartbeat",
    response_model=HeartbeatResponse,
    summary="Keep the member alive; 409 with rejoin=true when it must join again",
    responses=REJOIN_RESPONSES,
)
async def heartbeat(
    group: GroupId,
    member: MemberId,
    request: Annotated[HeartbeatRequest, Body()],
    ctx: Annotated[GatewayContext, Depends(context)],
) -> HeartbeatResponse | JSONResponse:
    beat = ctx.groups.heartbeat(group, request.generation, member, request.instance_id)
    answer = await as_member(beat)
    return HeartbeatResponse(rejoin=False) if answer is None else answer


@router.post(
    "/{group}/offsets",
    response_model=CommitResponse,
    summary="Commit offsets of partitions the member owns in the current generation",
    responses={
        404: {"model": RejoinError, "description": "Unknown member"},
        409: {
            "model": CommitError,
            "description": "Stale generation, a partition the member does not own, or a "
            "rebalance in progress; offsets lists each partition's outcome",
        },
    },
)
async def commit(
    group: GroupId,
    request: Annotated[CommitRequest, Body()],
    ctx: Annotated[GatewayContext, Depends(context)],
) -> CommitResponse | JSONResponse:
    wanted = {
        (o.topic, o.partition): OffsetAndMetadata(o.offset, o.metadata) for o in request.offsets
    }
    outcome = await as_member(
        ctx.groups.commit(
            group,
            wanted,
            generation=request.generation,
            member_id=request.member_id,
            instance_id=request.instance_id,
        )
    )
    if isinstance(outcome, JSONResponse):
        return outcome
    results = [
        CommitResult(
            topic=t,
            partition=p,
            offset=wanted[(t, p)].offset,
            error_code=error.code if error else 0,
            error=error.message if error else None,
        )
        for (t, p), error in sorted(outcome.items())
    ]
    failures = [e for _, e in sorted(outcome.items()) if e is not None]
    if not failures:
        return CommitResponse(offsets=results)
    # A partition the member does not own decides the answer; else the first failure does.
    first = next((e for e in failures if isinstance(e, IllegalGenerationError)), failures[0])
    status, code = _commit_status(first)
    body = CommitError(error_code=code, message=first.message, offsets=results)
    return JSONResponse(body.model_dump(), status)


def _commit_status(exc: KafkaApiError) -> tuple[int, int]:
    if isinstance(exc, IllegalGenerationError):
        return 409, STALE_GENERATION
    if isinstance(exc, UnknownTopicOrPartitionError):
        return 404, UNKNOWN_TOPIC
    return rest_code(exc)


@router.delete(
    "/{group}/members/{member}",
    status_code=204,
    summary="Leave the group at once",
    responses={404: {"model": RejoinError, "description": "Unknown member"}},
)
async def leave(
    group: GroupId,
    member: MemberId,
    ctx: Annotated[GatewayContext, Depends(context)],
) -> Response:
    answer = await as_member(ctx.groups.leave(group, member))
    return Response(status_code=204) if answer is None else answer


@router.get(
    "/{group}",
    response_model=GroupView,
    summary="Members, their assignments, committed offsets and lag",
    responses={404: {"description": "The group does not exist"}},
)
async def describe(
    group: GroupId, request: Request, ctx: Annotated[GatewayContext, Depends(context)]
) -> GroupView:
    groups = ctx.groups
    description, committed, node = await asyncio.gather(
        groups.describe(group), groups.fetch_offsets(group), _group_node(ctx, group)
    )
    if description.state == "Dead" and not committed:
        raise GroupIdNotFoundError(f"group {group!r} does not exist")
    assigned = {tp for m in description.members for tp in m.assigned_partitions()}
    topics = describable_topics(request, ctx.authorizer, {t for t, _ in {*assigned, *committed}})
    committed = {tp: at for tp, at in committed.items() if tp[0] in topics}
    partitions = await _all_partitions(groups, topics)
    ends = await group_lags.log_end_offsets(ctx.cluster, partitions, IsolationLevel.READ_COMMITTED)
    return GroupView(
        group=group,
        state=description.state,
        protocol=description.protocol or (node.protocol if node else None),
        generation=node.generation if node else None,
        members=_members(description),
        partitions=[
            _lag(tp, committed.get(tp), ends.get(tp)) for tp in sorted({*partitions, *committed})
        ],
    )


def _members(description: GroupDescription) -> list[GroupMemberView]:
    return [
        GroupMemberView(
            member_id=m.member_id,
            instance_id=m.instance_id,
            client_id=m.client_id,
            host=m.client_host,
            assignment=[
                MemberPartition(topic=t, partition=p) for t, p in sorted(m.assigned_partitions())
            ],
        )
        for m in sorted(description.members, key=lambda m: m.member_id)
    ]


def _lag(tp: TopicPartition, committed: OffsetAndMetadata | None, end: int | None) -> PartitionLag:
    lag = group_lags.PartitionLag(tp[0], tp[1], committed.offset if committed else None, end)
    return PartitionLag(
        topic=lag.topic,
        partition=lag.partition,
        committed_offset=-1 if lag.current_offset is None else lag.current_offset,
        end_offset=lag.log_end_offset,
        lag=lag.lag,
    )


async def _group_node(ctx: GatewayContext, group: str) -> GroupZNode | None:
    if ctx.zk is None:
        return None
    try:
        found = await ctx.zk.get(ConsumerGroupZNodes.group_path(group))
    except PafkaError:
        return None
    if not found:
        return None
    try:
        return GroupZNode.decode(group, found[0] or b"")
    except CorruptZNodeError:
        return None  # the group's coordinator reports the node; the view just lacks it


async def _all_partitions(groups: GroupClient, topics: set[str]) -> set[TopicPartition]:
    counts = await partition_counts(groups.cluster, topics)
    return {(t, p) for t, n in counts.items() for p in range(n)}
