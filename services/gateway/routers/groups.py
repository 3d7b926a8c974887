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
import weakref
from collections.abc import Awaitable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Body, Depends, Path, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from pafka.client import fetcher
from pafka.client.cluster import ClusterClient
from pafka.client.group_join import join_consumer, partition_counts
from pafka.client.groups import (
    GroupClient,
    GroupDescription,
    OffsetAndMetadata,
)
from pafka.errors import (
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
from pafka.groups.assignors import ASSIGNORS
from pafka.groups.consumer_protocol import TopicPartition
from pafka.zk.znodes import ConsumerGroupZNodes, GroupZNode
from services.gateway.context import GatewayContext, context
from services.gateway.errors import (
    ILLEGAL_STATE,
    INVALID_CONSUMER_CONFIG,
    UNKNOWN_CONSUMER_INSTANCE,
    UNKNOWN_TOPIC,
    rest_code,
)

router = APIRouter(prefix="/groups", tags=["groups (native membership)"])

STALE_GENERATION = 40901
T = TypeVar("T")
MAX_INT32 = 2**31 - 1
ASSIGNOR_NAMES: list[JsonValue] = [*sorted(ASSIGNORS)]

GroupId = Annotated[str, Path(description="Consumer group id", examples=["orders-processors"])]
MemberId = Annotated[str, Path(description="Member id the join returned")]


# -- shapes ----------------------------------------------------------------------------------


class JoinRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"topics": ["orders"], "assignor": "range", "session_timeout_ms": 30000},
                {"topics": ["orders"], "member_id": "pafka-gateway-6f1c...", "assignor": "range"},
            ]
        },
    )

    topics: list[Annotated[str, Field(min_length=1)]] = Field(
        min_length=1, description="Topics to consume; each must exist"
    )
    assignor: str = Field(
        "range",
        description="Partition assignor, by its Kafka protocol name",
        json_schema_extra={"enum": ASSIGNOR_NAMES},
    )
    member_id: str | None = Field(
        None, min_length=1, description="Rejoin as this member; omit to join as a new one"
    )
    session_timeout_ms: int = Field(
        30_000,
        gt=0,
        le=MAX_INT32,
        description="Heartbeat at least this often; the broker allows [6000, 1800000]",
    )
    rebalance_timeout_ms: int | None = Field(
        None,
        gt=0,
        le=MAX_INT32,
        description="How long a rebalance waits for members to rejoin (default: the session "
        "timeout); this request may take as long",
    )
    instance_id: str | None = Field(
        None, min_length=1, description="group.instance.id for static membership"
    )

    @field_validator("assignor")
    @classmethod
    def _known_assignor(cls, value: str) -> str:
        if value not in ASSIGNORS:
            raise ValueError(f"unknown assignor {value!r} (known: {', '.join(sorted(ASSIGNORS))})")
        return value


class AssignedPartition(BaseModel):
    topic: str
    partition: int
    committed_offset: int = Field(description="Next offset to consume; -1 when none committed")


class JoinResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "member_id": "pafka-gateway-6f1c2d0e-8a57-4a8e-9f43-3c1d6b0a7e21",
                    "generation": 3,
                    "assignor": "range",
                    "leader": True,
                    "assignment": [{"topic": "orders", "partition": 0, "committed_offset": 42}],
                }
            ]
        }
    )

    member_id: str
    generation: int
    assignor: str = Field(description="The assignor the group chose")
    leader: bool = Field(description="Whether this member computed the group's assignment")
    assignment: list[AssignedPartition]


class HeartbeatRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"generation": 3}]})

    generation: int = Field(ge=0, le=MAX_INT32)
    instance_id: str | None = Field(None, min_length=1)


class HeartbeatResponse(BaseModel):
    rejoin: bool = Field(False, description="Always false here; a rejoin is a 409")


class RejoinError(BaseModel):
    error_code: int
    message: str
    rejoin: bool = True


class OffsetToCommit(BaseModel):
    topic: str = Field(min_length=1)
    partition: int = Field(ge=0, le=MAX_INT32)
    offset: int = Field(ge=0, description="The next offset to consume")
    metadata: str | None = None


class CommitRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "member_id": "pafka-gateway-6f1c2d0e-8a57-4a8e-9f43-3c1d6b0a7e21",
                    "generation": 3,
                    "offsets": [{"topic": "orders", "partition": 0, "offset": 43}],
                }
            ]
        },
    )

    member_id: str = Field(min_length=1)
    generation: int = Field(ge=0, le=MAX_INT32)
    offsets: list[OffsetToCommit] = Field(min_length=1)
    instance_id: str | None = Field(None, min_length=1)


class CommitResult(BaseModel):
    topic: str
    partition: int
    offset: int
    error_code: int = Field(0, description="The Kafka error code; 0: committed")
    error: str | None = None


class CommitResponse(BaseModel):
    offsets: list[CommitResult]


class CommitError(BaseModel):
    error_code: int
    message: str
    offsets: list[CommitResult]


class MemberPartition(BaseModel):
    topic: str
    partition: int


class GroupMemberView(BaseModel):
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: list[MemberPartition]


class PartitionLag(BaseModel):
    topic: str
    partition: int
    committed_offset: int = Field(description="-1 when none committed")
    end_offset: int | None = Field(description="The high watermark; null if unknown")
    lag: int | None = Field(description="end_offset - committed_offset; null without either")


class GroupView(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "group": "orders-processors",
                    "state": "Stable",
                    "protocol": "range",
                    "generation": 3,
                    "members": [
                        {
                            "member_id": "pafka-gateway-6f1c2d0e-8a57-4a8e-9f43-3c1d6b0a7e21",
                            "instance_id": None,
                            "client_id": "pafka-gateway",
                            "host": "10.0.0.7",
                            "assignment": [{"topic": "orders", "partition": 0}],
                        }
                    ],
                    "partitions": [
                        {
                            "topic": "orders",
                            "partition": 0,
                            "committed_offset": 42,
                            "end_offset": 50,
                            "lag": 8,
                        }
                    ],
                }
            ]
        }
    )

    group: str
    state: str
    protocol: str | None
    generation: int | None = Field(description="From ZooKeeper; null when it is not reachable")
    members: list[GroupMemberView]
    partitions: list[PartitionLag]


REJOIN_RESPONSES: dict[int | str, dict[str, Any]] = {
    404: {"model": RejoinError, "description": "Unknown member: join again without member_id"},
    409: {"model": RejoinError, "description": "Rebalancing (40902) or stale generation (40901)"},
}


# -- errors ----------------------------------------------------------------------------------


_clients: weakref.WeakKeyDictionary[ClusterClient, GroupClient] = weakref.WeakKeyDictionary()


def _groups(ctx: GatewayContext) -> GroupClient:
    """One GroupClient per gateway, so coordinator locations are remembered between requests."""
    client = _clients.get(ctx.cluster)
    if client is None:
        client = _clients[ctx.cluster] = GroupClient(ctx.cluster)
    return client


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
    groups = _groups(ctx)
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
    beat = _groups(ctx).heartbeat(group, request.generation, member, request.instance_id)
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
        _groups(ctx).commit(
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
    answer = await as_member(_groups(ctx).leave(group, member))
    return Response(status_code=204) if answer is None else answer


@router.get(
    "/{group}",
    response_model=GroupView,
    summary="Members, their assignments, committed offsets and lag",
    responses={404: {"description": "The group does not exist"}},
)
async def describe(group: GroupId, ctx: Annotated[GatewayContext, Depends(context)]) -> GroupView:
    groups = _groups(ctx)
    description, committed, node = await asyncio.gather(
        groups.describe(group), groups.fetch_offsets(group), _group_node(ctx, group)
    )
    if description.state == "Dead" and not committed:
        raise GroupIdNotFoundError(f"group {group!r} does not exist")
    assigned = {tp for m in description.members for tp in m.assigned_partitions()}
    partitions = await _all_partitions(groups, {t for t, _ in {*assigned, *committed}})
    ends = await _end_offsets(ctx, partitions)
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
    offset = committed.offset if committed else -1
    lag = max(end - offset, 0) if end is not None and offset >= 0 else None
    return PartitionLag(
        topic=tp[0], partition=tp[1], committed_offset=offset, end_offset=end, lag=lag
    )


async def _group_node(ctx: GatewayContext, group: str) -> GroupZNode | None:
    if ctx.zk is None:
        return None
    try:
        found = await ctx.zk.get(ConsumerGroupZNodes.group_path(group))
    except PafkaError:
        return None
    return GroupZNode.decode(group, found[0]) if found else None


async def _all_partitions(groups: GroupClient, topics: set[str]) -> set[TopicPartition]:
    counts = await partition_counts(groups.cluster, topics)
    return {(t, p) for t, n in counts.items() for p in range(n)}


async def _end_offsets(
    ctx: GatewayContext, partitions: set[TopicPartition]
) -> dict[TopicPartition, int]:
    """High watermarks; a partition whose leader cannot answer now is left out."""
    ordered = sorted(partitions)
    found = await asyncio.gather(
        *(fetcher.offsets(ctx.cluster, t, p) for t, p in ordered), return_exceptions=True
    )
    ends: dict[TopicPartition, int] = {}
    for tp, answer in zip(ordered, found, strict=True):
        if isinstance(answer, tuple):
            ends[tp] = answer[1]
        elif not isinstance(answer, PafkaError):
            raise answer
    return ends
