"""``GET /v3/clusters/{id}/group-search``: consumer groups found a page at a time, filtered by
name, state and kind on the gateway, so a cluster of thousands of groups stays quick.

The groups are those of ZooKeeper's ``/consumers`` registry (every group pafka keeps, and the
ZooKeeper-era groups, marked ``zookeeper``: their clients coordinate themselves, as Kafka's
``--zookeeper`` tool listed them apart), read in three pipelined rounds whatever their number.
Only the page's broker-coordinated groups are described, for their state and assignor. The
brokers' ListGroups (which visits every group it holds, seconds for thousands of groups) is
asked only when every group's state is needed, to filter by state, or when the gateway reaches
no ZooKeeper. The list is filtered to the groups the caller may DESCRIBE, as ListGroups is.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from pafka.client.admin import AdminClient
from pafka.errors import PafkaError
from pafka.groups import zk_coordinated
from pafka.security.acls import ResourceType
from services.gateway.access import visible
from services.gateway.console import group_paging, zk_groups
from services.gateway.console.group_paging import Kind, ListedGroup
from services.gateway.context import Ctx
from services.gateway.v3 import Admin, At

router = APIRouter(prefix="/v3/clusters/{cluster_id}", tags=["console views"])

MAX_PAGE = 500
UNKNOWN = "Unknown"
DESCRIBE_CONCURRENCY = 16


class GroupSummary(BaseModel):
    consumer_group_id: str
    state: str = Field(description="As Kafka spells it: Stable, Empty, ...; Unknown if unanswered")
    kind: Kind = Field(description="broker, or zookeeper for a ZooKeeper-era group")
    partition_assignor: str | None = Field(description="null when not known")
    problem: str | None = Field(description="What in ZooKeeper could not be read")


class GroupSearch(BaseModel):
    total: int = Field(description="Groups matching the filters, over all pages")
    offset: int
    data: list[GroupSummary]


@router.get("/group-search", response_model=GroupSearch, summary="Search groups, a page at a time")
async def group_search(
    request: Request,
    at: At,
    ctx: Ctx,
    client: Admin,
    q: str = Query("", max_length=255, description="Part of the group id, any case"),
    state: str = Query("", max_length=32, description="Stable, Empty, ... (any case)"),
    kind: Kind | None = Query(None, description="broker or zookeeper; both if absent"),
    offset: int = Query(0, ge=0),
    limit: int = Query(50, ge=1, le=MAX_PAGE),
) -> GroupSearch:
    registry = await zk_groups.registries(ctx)
    listed = await client.groups.list() if state or ctx.zk is None else []
    merged = group_paging.merge({g.group_id: g.state for g in listed}, registry)
    shown = visible(request, ctx.authorizer, ResourceType.GROUP, merged)
    page = group_paging.search((merged[g] for g in shown), q, state, kind, offset, limit)
    described = await _described(client, page.items)
    return GroupSearch(
        total=page.total,
        offset=offset,
        data=[
            GroupSummary(
                consumer_group_id=g.group_id,
                state=state or g.state or UNKNOWN,
                kind=g.kind,
                partition_assignor=assignor,
                problem=g.problem,
            )
            for g, (state, assignor) in zip(page.items, described, strict=True)
        ],
    )


async def _described(
    client: AdminClient, groups: tuple[ListedGroup, ...]
) -> list[tuple[str | None, str | None]]:
    """Each group's state and assignor from its coordinator (a ZooKeeper-era group's from
    ZooKeeper); (None, None) where the coordinator did not answer."""
    slots = asyncio.Semaphore(DESCRIBE_CONCURRENCY)

    async def describe(group: ListedGroup) -> tuple[str | None, str | None]:
        if group.kind is Kind.ZOOKEEPER:
            return group.state, zk_coordinated.PROTOCOL
        async with slots:
            try:
                found = (await client.describe_group(group.group_id)).description
            except PafkaError:
                return None, None  # its coordinator is moving: the row lacks only this
        return found.state, found.protocol or None

    return list(await asyncio.gather(*(describe(g) for g in groups)))
