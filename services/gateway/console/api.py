"""Read-only REST views the console needs and the v3 API lacks: a topic search answered a
page at a time, a topic's partitions with their log offsets, and the cluster's overview (the
active controller and its epoch, brokers with rack, registration time and load, partitions
under-replicated or offline).

Ordinary REST routes, in the OpenAPI and behind the same guard as every other: the topic search
is a list filtered to the topics the caller may DESCRIBE, partitions need DESCRIBE on their
topic, and the overview describes the cluster, which needs nothing (as Kafka's Metadata).
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from pafka.client.fetcher import offsets
from pafka.errors import PafkaError
from pafka.security.acls import ResourceType
from pafka.zk.znodes import BROKER_IDS, BrokerInfo, ControllerEpochZNode, ControllerZNode
from services.gateway.access import visible
from services.gateway.console import summaries
from services.gateway.context import Ctx, GatewayContext
from services.gateway.v3 import At

router = APIRouter(prefix="/v3/clusters/{cluster_id}", tags=["console views"])

MAX_PAGE = 500
UNKNOWN_OFFSET = -1


class TopicSummary(BaseModel):
    topic_name: str
    partitions_count: int
    replication_factor: int
    under_replicated_partitions: int = Field(description="Partitions with a replica out of ISR")
    offline_partitions: int = Field(description="Partitions without a leader")


class TopicSearch(BaseModel):
    total: int = Field(description="Topics matching the filter, over all pages")
    offset: int
    data: list[TopicSummary]


class PartitionSummary(BaseModel):
    partition_id: int
    leader_id: int | None
    leader_epoch: int
    replica_ids: list[int]
    isr_ids: list[int]
    lagging_replica_ids: list[int] = Field(description="Replicas not in the ISR")
    log_start_offset: int = Field(description="-1 when the leader did not answer")
    log_end_offset: int = Field(description="The high watermark; -1 when the leader did not answer")


class PartitionSummaries(BaseModel):
    topic_name: str
    total: int
    offset: int
    data: list[PartitionSummary]


class BrokerSummary(BaseModel):
    broker_id: int
    host: str
    port: int
    rack: str | None
    registered_at_ms: int = Field(description="When it registered in ZooKeeper")
    partitions: int = Field(description="Replicas it holds")
    leaders: int = Field(description="Partitions it leads")


class Overview(BaseModel):
    cluster_id: str
    controller_id: int | None = Field(description="The active controller; null if none")
    controller_epoch: int | None
    brokers: list[BrokerSummary]
    topics: int
    partitions: int
    under_replicated_partitions: int
    offline_partitions: int


@router.get("/topic-search", response_model=TopicSearch, summary="Search topics, a page at a time")
async def topic_search(
    request: Request,
    at: At,
    ctx: Ctx,
    q: str = Query("", max_length=249, description="Part of the name, any case"),
    offset: int = Query(0, ge=0),
    limit: int = Query(50, ge=1, le=MAX_PAGE),
) -> TopicSearch:
    await ctx.cluster.refresh()
    topics = ctx.cluster.topics
    shown = visible(request, ctx.authorizer, ResourceType.TOPIC, topics)
    page = summaries.search(shown, q, offset, limit)
    data = [_topic_summary(summaries.topic_health(n, topics[n].partitions)) for n in page.items]
    return TopicSearch(total=page.total, offset=offset, data=data)


def _topic_summary(health: summaries.TopicHealth) -> TopicSummary:
    return TopicSummary(
        topic_name=health.name,
        partitions_count=health.partitions,
        replication_factor=health.replication_factor,
        under_replicated_partitions=health.under_replicated,
        offline_partitions=health.offline,
    )


@router.get(
    "/topics/{topic_name}/partition-summaries",
    response_model=PartitionSummaries,
    summary="A topic's partitions with replicas, ISR and log offsets, a page at a time",
)
async def partition_summaries(
    topic_name: str,
    at: At,
    ctx: Ctx,
    offset: int = Query(0, ge=0),
    limit: int = Query(100, ge=1, le=MAX_PAGE),
) -> PartitionSummaries:
    info = await ctx.cluster.topic(topic_name, refresh=True)
    ids = sorted(info.partitions)[offset : offset + limit]
    ranges = await asyncio.gather(*(_offsets(ctx, topic_name, p) for p in ids))
    data = []
    for p, (start, end) in zip(ids, ranges, strict=True):
        state = info.partitions[p]
        data.append(
            PartitionSummary(
                partition_id=p,
                leader_id=None if summaries.offline(state) else state.leader,
                leader_epoch=state.leader_epoch,
                replica_ids=list(state.replicas),
                isr_ids=list(state.isr),
                lagging_replica_ids=list(summaries.lagging(state)),
                log_start_offset=start,
                log_end_offset=end,
            )
        )
    return PartitionSummaries(
        topic_name=topic_name, total=len(info.partitions), offset=offset, data=data
    )


async def _offsets(ctx: GatewayContext, topic: str, partition: int) -> tuple[int, int]:
    # One partition without a leader must not blank the page of the others.
    try:
        return await offsets(ctx.cluster, topic, partition)
    except PafkaError:
        return UNKNOWN_OFFSET, UNKNOWN_OFFSET


@router.get("/overview", response_model=Overview, summary="Brokers, controller and health")
async def overview(at: At, ctx: Ctx) -> Overview:
    await ctx.cluster.refresh()
    topics = [t.partitions for t in ctx.cluster.topics.values()]
    loads = summaries.broker_loads(topics)
    registered, controller_id, epoch = await _registrations(ctx)
    healths = [summaries.topic_health(n, t.partitions) for n, t in ctx.cluster.topics.items()]
    return Overview(
        cluster_id=at.cluster_id,
        controller_id=controller_id,
        controller_epoch=epoch,
        brokers=[
            BrokerSummary(
                broker_id=b.id,
                host=b.host,
                port=b.port,
                rack=b.rack,
                registered_at_ms=b.timestamp_ms,
                partitions=loads.get(b.id, summaries.BrokerLoad()).replicas,
                leaders=loads.get(b.id, summaries.BrokerLoad()).leaders,
            )
            for b in registered
        ],
        topics=len(topics),
        partitions=sum(h.partitions for h in healths),
        under_replicated_partitions=sum(h.under_replicated for h in healths),
        offline_partitions=sum(h.offline for h in healths),
    )


async def _registrations(ctx: GatewayContext) -> tuple[list[BrokerInfo], int | None, int | None]:
    """Live brokers' registrations, the active controller and its epoch, from ZooKeeper (a
    gateway with only a bootstrap list knows none of them)."""
    if ctx.zk is None:
        return [], None, None
    ids = [int(c) for c in await ctx.zk.get_children(BROKER_IDS) if c.isdigit()]
    paths = [BrokerInfo.path(b) for b in ids]
    paths += [ControllerZNode.path(), ControllerEpochZNode.path()]
    *brokers, controller, epoch = await ctx.zk.get_many(paths)
    registered = [BrokerInfo.decode(b, got[0]) for b, got in zip(ids, brokers, strict=True) if got]
    return (
        sorted(registered, key=lambda b: b.id),
        ControllerZNode.decode(controller[0]).controller_id if controller else None,
        ControllerEpochZNode.decode(epoch[0]) if epoch else None,
    )
