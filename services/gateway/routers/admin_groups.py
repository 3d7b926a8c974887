"""Consumer groups in Confluent's v3 shape: ``/v3/clusters/{cluster_id}/consumer-groups/...``.

A group's description comes from its coordinator (DescribeGroups), its lags from its committed
offsets (OffsetFetch) against the partition leaders' log ends (ListOffsets). Lags are reported,
as Confluent does, for the partitions the group has committed an offset for; a group with
neither members nor committed offsets does not exist (404).
"""

from __future__ import annotations

import asyncio
import re

from fastapi import APIRouter, Request

from pafka.client.admin import DEAD, AdminClient, GroupView
from pafka.client.group_lags import PartitionLag
from pafka.client.groups import DescribedMember, GroupDescription
from pafka.client.isolation import IsolationLevel
from pafka.errors import GroupIdNotFoundError, PafkaError, RestError
from pafka.security.acls import ResourceType
from services.gateway.access import describable_topics, visible
from services.gateway.context import Ctx
from services.gateway.errors import UNKNOWN_CONSUMER_INSTANCE, UNKNOWN_PARTITION
from services.gateway.models.admin_groups import (
    Consumer,
    ConsumerAssignment,
    ConsumerAssignmentList,
    ConsumerGroup,
    ConsumerGroupList,
    ConsumerLag,
    ConsumerLagList,
    ConsumerList,
    LagSummary,
)
from services.gateway.v3 import Admin, At, Links

# Lags count only what read_committed consumers can read: records of open transactions are
# not behind anyone yet.
COMMITTED_ONLY = IsolationLevel.READ_COMMITTED

router = APIRouter(prefix="/v3/clusters", tags=["admin (v3): consumer groups"])

DESCRIBE_CONCURRENCY = 16


def _state(state: str) -> str:
    """``PreparingRebalance`` → ``PREPARING_REBALANCE``, as Confluent spells group states."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", state).upper() or "UNKNOWN"


# -- consumer groups ---------------------------------------------------------------------------


def _group(at: Links, view: GroupView) -> ConsumerGroup:
    g = view.description
    path = ("consumer-groups", g.group_id)
    return ConsumerGroup(
        kind="KafkaConsumerGroup",
        metadata=at.meta(*path, crn=f"/consumer-group={g.group_id}"),
        cluster_id=at.cluster_id,
        consumer_group_id=g.group_id,
        is_simple=not g.protocol_type,
        partition_assignor=g.protocol,
        state=_state(g.state),
        coordinator=at.rel("brokers", view.coordinator),
        consumers=at.rel(*path, "consumers"),
        lag_summary=at.rel(*path, "lag-summary"),
    )


async def _described(client: AdminClient, group: str) -> GroupView:
    """The group, 404 when it has neither members nor committed offsets."""
    view = await client.describe_group(group)
    if view.description.state == DEAD and not await client.committed_offsets(group):
        raise GroupIdNotFoundError(f"consumer group {group!r} does not exist")
    return view


@router.get("/{cluster_id}/consumer-groups", response_model=ConsumerGroupList)
async def list_groups(request: Request, at: At, client: Admin, ctx: Ctx) -> ConsumerGroupList:
    listed = await client.groups.list()
    shown = set(visible(request, ctx.authorizer, ResourceType.GROUP, (g.group_id for g in listed)))
    listed = [g for g in listed if g.group_id in shown]
    slots = asyncio.Semaphore(DESCRIBE_CONCURRENCY)

    async def describe(group: str) -> GroupView | None:
        async with slots:
            try:
                return await client.describe_group(group)
            except PafkaError:
                return None

    described = await asyncio.gather(*(describe(g.group_id) for g in listed))
    data = [
        _group(
            at,
            view
            or GroupView(
                GroupDescription(g.group_id, g.state, g.protocol_type, "", ()), g.coordinator
            ),
        )
        for g, view in zip(listed, described, strict=True)
    ]
    return ConsumerGroupList(
        kind="KafkaConsumerGroupList", metadata=at.listing("consumer-groups"), data=data
    )


@router.get("/{cluster_id}/consumer-groups/{group_id}", response_model=ConsumerGroup)
async def get_group(group_id: str, at: At, client: Admin) -> ConsumerGroup:
    return _group(at, await _described(client, group_id))


def _consumer(at: Links, group: str, member: DescribedMember) -> Consumer:
    path = ("consumer-groups", group, "consumers", member.member_id)
    return Consumer(
        kind="KafkaConsumer",
        metadata=at.meta(*path, crn=f"/consumer-group={group}/consumer={member.member_id}"),
        cluster_id=at.cluster_id,
        consumer_group_id=group,
        consumer_id=member.member_id,
        instance_id=member.instance_id,
        client_id=member.client_id,
        assignments=at.rel(*path, "assignments"),
    )


def _member(view: GroupView, consumer_id: str) -> DescribedMember:
    for member in view.description.members:
        if member.member_id == consumer_id:
            return member
    raise RestError(
        UNKNOWN_CONSUMER_INSTANCE,
        f"consumer {consumer_id!r} is not in group {view.description.group_id!r}",
    )


@router.get("/{cluster_id}/consumer-groups/{group_id}/consumers", response_model=ConsumerList)
async def list_consumers(group_id: str, at: At, client: Admin) -> ConsumerList:
    view = await _described(client, group_id)
    return ConsumerList(
        kind="KafkaConsumerList",
        metadata=at.listing("consumer-groups", group_id, "consumers"),
        data=[_consumer(at, group_id, m) for m in view.description.members],
    )


@router.get(
    "/{cluster_id}/consumer-groups/{group_id}/consumers/{consumer_id}", response_model=Consumer
)
async def get_consumer(
    group_id: str,
    consumer_id: str,
    at: At,
    client: Admin,
) -> Consumer:
    return _consumer(at, group_id, _member(await _described(client, group_id), consumer_id))


@router.get(
    "/{cluster_id}/consumer-groups/{group_id}/consumers/{consumer_id}/assignments",
    response_model=ConsumerAssignmentList,
)
async def list_assignments(
    group_id: str,
    consumer_id: str,
    at: At,
    client: Admin,
) -> ConsumerAssignmentList:
    member = _member(await _described(client, group_id), consumer_id)
    path = ("consumer-groups", group_id, "consumers", consumer_id, "assignments")
    data = [
        ConsumerAssignment(
            kind="KafkaConsumerAssignment",
            metadata=at.meta(
                *path,
                topic,
                "partitions",
                p,
                crn=f"/consumer-group={group_id}/consumer={consumer_id}/assignment={topic}/{p}",
            ),
            cluster_id=at.cluster_id,
            consumer_group_id=group_id,
            consumer_id=consumer_id,
            topic_name=topic,
            partition_id=p,
            partition=at.rel("topics", topic, "partitions", p),
            lag=at.rel("consumer-groups", group_id, "lags", topic, "partitions", p),
        )
        for topic, p in sorted(member.assigned_partitions())
    ]
    return ConsumerAssignmentList(
        kind="KafkaConsumerAssignmentList", metadata=at.listing(*path), data=data
    )


# -- lags --------------------------------------------------------------------------------------


def _lags(at: Links, group: str, lags: list[PartitionLag]) -> list[ConsumerLag]:
    """Partitions with a committed offset and a known log end, as Confluent reports them."""
    return [
        ConsumerLag(
            kind="KafkaConsumerLag",
            metadata=at.meta(
                "consumer-groups",
                group,
                "lags",
                x.topic,
                "partitions",
                x.partition,
                crn=f"/consumer-group={group}/lag={x.topic}/partition={x.partition}",
            ),
            cluster_id=at.cluster_id,
            consumer_group_id=group,
            topic_name=x.topic,
            partition_id=x.partition,
            current_offset=x.current_offset,
            log_end_offset=x.log_end_offset,
            lag=x.lag,
            consumer_id=x.owner.member_id if x.owner else None,
            instance_id=x.owner.instance_id if x.owner else None,
            client_id=x.owner.client_id if x.owner else None,
        )
        for x in lags
        if x.current_offset is not None and x.log_end_offset is not None and x.lag is not None
    ]


@router.get("/{cluster_id}/consumer-groups/{group_id}/lags", response_model=ConsumerLagList)
async def list_lags(
    group_id: str, request: Request, at: At, client: Admin, ctx: Ctx
) -> ConsumerLagList:
    return ConsumerLagList(
        kind="KafkaConsumerLagList",
        metadata=at.listing("consumer-groups", group_id, "lags"),
        data=await _visible_lags(request, at, client, ctx, group_id),
    )


async def _visible_lags(
    request: Request, at: At, client: Admin, ctx: Ctx, group_id: str
) -> list[ConsumerLag]:
    _, lags = await client.group_lags(group_id, COMMITTED_ONLY)
    shown = describable_topics(request, ctx.authorizer, {x.topic for x in lags})
    return _lags(at, group_id, [x for x in lags if x.topic in shown])


@router.get(
    "/{cluster_id}/consumer-groups/{group_id}/lags/{topic_name}/partitions/{partition_id}",
    response_model=ConsumerLag,
)
async def get_lag(
    group_id: str,
    topic_name: str,
    partition_id: int,
    at: At,
    client: Admin,
) -> ConsumerLag:
    _, lags = await client.group_lags(group_id, COMMITTED_ONLY)
    for lag in _lags(at, group_id, lags):
        if (lag.topic_name, lag.partition_id) == (topic_name, partition_id):
            return lag
    raise RestError(
        UNKNOWN_PARTITION,
        f"group {group_id!r} has committed no offset for {topic_name}-{partition_id}",
    )


@router.get("/{cluster_id}/consumer-groups/{group_id}/lag-summary", response_model=LagSummary)
async def lag_summary(
    group_id: str, request: Request, at: At, client: Admin, ctx: Ctx
) -> LagSummary:
    lags = await _visible_lags(request, at, client, ctx, group_id)
    top = max(lags, key=lambda x: x.lag, default=None)
    return LagSummary(
        kind="KafkaConsumerGroupLagSummary",
        metadata=at.meta(
            "consumer-groups",
            group_id,
            "lag-summary",
            crn=f"/consumer-group={group_id}/lag-summary",
        ),
        cluster_id=at.cluster_id,
        consumer_group_id=group_id,
        max_lag_consumer_id=top.consumer_id if top else None,
        max_lag_instance_id=top.instance_id if top else None,
        max_lag_client_id=top.client_id if top else None,
        max_lag_topic_name=top.topic_name if top else None,
        max_lag_partition_id=top.partition_id if top else None,
        max_lag=top.lag if top else 0,
        total_lag=sum(x.lag for x in lags),
    )
