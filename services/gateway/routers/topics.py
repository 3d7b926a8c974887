"""Topic metadata, REST Proxy v2: ``GET /topics``, ``/topics/{t}``, ``/topics/{t}/partitions``,
``/topics/{t}/partitions/{p}``.

Answers come from a fresh Metadata request (leaders move; a cached answer could name a dead
broker; a topic created a moment ago is awaited, :mod:`services.gateway.topic_metadata`), the
topic's configs from DescribeConfigs, both through any live broker.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from pafka.client.admin import AdminClient
from pafka.client.cluster import PartitionLeader
from pafka.security.acls import ResourceType
from services.gateway.access import visible
from services.gateway.context import Ctx, GatewayContext
from services.gateway.formats import V2, ErrorBody
from services.gateway.topic_metadata import partition_state, topic_info

router = APIRouter(tags=["topics"])


class V2Response(JSONResponse):
    media_type = V2


class Replica(BaseModel):
    broker: int = Field(examples=[1])
    leader: bool = Field(examples=[True])
    in_sync: bool = Field(examples=[True])


class PartitionModel(BaseModel):
    partition: int = Field(examples=[0])
    leader: int = Field(description="Broker id of the leader, -1 if none", examples=[1])
    replicas: list[Replica]


class TopicModel(BaseModel):
    name: str = Field(examples=["orders"])
    configs: dict[str, str | None] = Field(
        examples=[{"cleanup.policy": "delete", "min.insync.replicas": "2"}]
    )
    partitions: list[PartitionModel]


UNKNOWN: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "Unknown topic (40401) or partition (40402)"}
}
UNAVAILABLE: dict[int | str, dict[str, Any]] = {
    503: {"model": ErrorBody, "description": "No broker answered; retry after a while"}
}


def partition_model(index: int, state: PartitionLeader) -> PartitionModel:
    return PartitionModel(
        partition=index,
        leader=state.leader,
        replicas=[
            Replica(broker=b, leader=b == state.leader, in_sync=b in state.isr)
            for b in state.replicas
        ],
    )


async def topic_configs(ctx: GatewayContext, topic: str) -> dict[str, str | None]:
    admin = AdminClient(ctx.cluster, timeout_ms=ctx.settings.request_timeout_ms, groups=ctx.groups)
    return {c.name: c.value for c in await admin.topic_configs(topic)}


# -- routes ------------------------------------------------------------------------------------


@router.get(
    "/topics",
    response_model=list[str],
    response_class=V2Response,
    summary="List topic names",
    responses={200: {"content": {V2: {"example": ["orders", "payments"]}}}, **UNAVAILABLE},
)
async def list_topics(request: Request, ctx: Ctx) -> list[str]:
    await ctx.cluster.refresh()
    names = [name for name, info in ctx.cluster.topics.items() if info.partitions]
    return sorted(visible(request, ctx.authorizer, ResourceType.TOPIC, names))


@router.get(
    "/topics/{topic}",
    response_model=TopicModel,
    response_class=V2Response,
    summary="Describe a topic: configs and partitions",
    responses={**UNKNOWN, **UNAVAILABLE},
)
async def get_topic(topic: str, ctx: Ctx) -> TopicModel:
    info = await topic_info(ctx, topic, refresh=True)
    configs = await topic_configs(ctx, topic)
    return TopicModel(
        name=topic,
        configs=configs,
        partitions=[partition_model(i, s) for i, s in sorted(info.partitions.items())],
    )


@router.get(
    "/topics/{topic}/partitions",
    response_model=list[PartitionModel],
    response_class=V2Response,
    summary="List a topic's partitions with leaders and replicas",
    responses={**UNKNOWN, **UNAVAILABLE},
)
async def list_partitions(topic: str, ctx: Ctx) -> list[PartitionModel]:
    info = await topic_info(ctx, topic, refresh=True)
    return [partition_model(i, s) for i, s in sorted(info.partitions.items())]


@router.get(
    "/topics/{topic}/partitions/{partition}",
    response_model=PartitionModel,
    response_class=V2Response,
    summary="Describe one partition",
    responses={**UNKNOWN, **UNAVAILABLE},
)
async def get_partition(topic: str, partition: int, ctx: Ctx) -> PartitionModel:
    state = await partition_state(ctx, topic, partition, refresh=True)
    return partition_model(partition, state)
