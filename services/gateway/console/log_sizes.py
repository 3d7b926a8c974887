"""Topics' and partitions' size on disk, from the brokers' DescribeLogDirs.

``GET /v3/clusters/{id}/topic-sizes?topic_name=...`` answers the totals of the topics named (a
page of the topic list asks for its own topics only, so the list stays fast however many
partitions the cluster has); ``GET /v3/clusters/{id}/topics/{t}/partition-sizes`` a topic's
total and, a page at a time, each partition's leader replica and every replica. Each broker
holding a replica is asked once, for just those partitions, all brokers at the same time.

A topic's size is its leader replicas' (the data once); ``replicas_size_bytes`` counts every
copy. A broker that does not answer leaves its replicas' sizes unknown (null, counted in
``unknown_replicas``) rather than failing the page. Kafka's rule: DescribeLogDirs needs DESCRIBE
on the cluster (``rest_acls.py``), so a caller without it gets 403 and the console shows the
rest of its page.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from pafka.client.cluster import PartitionLeader, TopicInfo
from pafka.client.log_dirs import replica_sizes
from pafka.errors import ClusterAuthorizationFailedError, PafkaError, UnknownTopicOrPartitionError
from services.gateway.context import Ctx, GatewayContext
from services.gateway.v3 import At

router = APIRouter(prefix="/v3/clusters/{cluster_id}", tags=["console views"])

MAX_TOPICS = 500
MAX_PAGE = 500

# What each broker reported: (topic, partition) -> bytes; None when it did not answer.
Reported = Mapping[int, Mapping[tuple[str, int], int] | None]

# -- the arithmetic (pure) -----------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionSize:
    partition: int
    leader: int | None  # None while the partition has no leader
    replicas: tuple[tuple[int, int | None], ...]  # (broker, bytes; None when unknown)

    @property
    def leader_bytes(self) -> int | None:
        return None if self.leader is None else dict(self.replicas).get(self.leader)


@dataclass(frozen=True)
class TopicSize:
    leaders_bytes: int
    replicas_bytes: int
    unknown_replicas: int


def partition_sizes(
    topic: str, partitions: Mapping[int, PartitionLeader], reported: Reported
) -> list[PartitionSize]:
    """Each partition's replicas with the size their broker reported, in partition order. A
    replica its broker did not report (no answer, or no log for it yet) is unknown."""
    sizes = []
    for p in sorted(partitions):
        state = partitions[p]
        replicas = tuple(
            (b, None if (answer := reported.get(b)) is None else answer.get((topic, p)))
            for b in state.replicas
        )
        sizes.append(PartitionSize(p, state.leader if state.leader >= 0 else None, replicas))
    return sizes


def topic_size(partitions: Iterable[PartitionSize]) -> TopicSize:
    leaders = replicas = unknown = 0
    for p in partitions:
        leaders += p.leader_bytes or 0
        for _, size in p.replicas:
            if size is None:
                unknown += 1
            else:
                replicas += size
    return TopicSize(leaders, replicas, unknown)


def holdings(topics: Iterable[TopicInfo]) -> dict[int, list[tuple[str, int]]]:
    """The partitions each broker holds a replica of."""
    held: dict[int, list[tuple[str, int]]] = {}
    for info in topics:
        for p, state in sorted(info.partitions.items()):
            for broker in state.replicas:
                held.setdefault(broker, []).append((info.name, p))
    return held


# -- the routes ---------------------------------------------------------------------------------


class TopicSizeModel(BaseModel):
    topic_name: str
    size_bytes: int = Field(description="Its leader replicas' size: the data once")
    replicas_size_bytes: int = Field(description="Every replica's size, summed")
    unknown_replicas: int = Field(description="Replicas whose broker did not report a size")


class TopicSizes(BaseModel):
    data: list[TopicSizeModel]


class ReplicaSizeModel(BaseModel):
    broker_id: int
    size_bytes: int | None = Field(description="null when its broker did not report it")


class PartitionSizeModel(BaseModel):
    partition_id: int
    leader_id: int | None
    size_bytes: int | None = Field(description="The leader replica's size")
    replicas: list[ReplicaSizeModel]


class PartitionSizes(TopicSizeModel):
    total: int = Field(description="The topic's partitions")
    offset: int
    data: list[PartitionSizeModel]


async def _reported(ctx: GatewayContext, topics: Iterable[TopicInfo]) -> Reported:
    held = holdings(topics)
    answers = await asyncio.gather(
        *(replica_sizes(ctx.cluster, b, parts) for b, parts in held.items()),
        return_exceptions=True,
    )
    reported: dict[int, Mapping[tuple[str, int], int] | None] = {}
    for broker, answer in zip(held, answers, strict=True):
        if isinstance(answer, ClusterAuthorizationFailedError):
            raise answer
        if isinstance(answer, BaseException) and not isinstance(answer, PafkaError):
            raise answer
        # One broker down must not blank the sizes the others know.
        reported[broker] = None if isinstance(answer, BaseException) else answer
    return reported


def _topic_model(name: str, size: TopicSize) -> TopicSizeModel:
    return TopicSizeModel(
        topic_name=name,
        size_bytes=size.leaders_bytes,
        replicas_size_bytes=size.replicas_bytes,
        unknown_replicas=size.unknown_replicas,
    )


@router.get(
    "/topic-sizes",
    response_model=TopicSizes,
    summary="Some topics' size on disk (DescribeLogDirs)",
)
async def topic_sizes(
    at: At,
    ctx: Ctx,
    topic_name: list[str] = Query(max_length=MAX_TOPICS, description="The topics, a page's"),
) -> TopicSizes:
    names = list(dict.fromkeys(topic_name))
    await ctx.cluster.refresh(names)
    infos = [ctx.cluster.topics[n] for n in names if n in ctx.cluster.topics]
    reported = await _reported(ctx, infos)
    return TopicSizes(
        data=[
            _topic_model(i.name, topic_size(partition_sizes(i.name, i.partitions, reported)))
            for i in infos
        ]
    )


@router.get(
    "/topics/{topic_name}/partition-sizes",
    response_model=PartitionSizes,
    summary="A topic's size on disk, and its partitions' replicas, a page at a time",
)
async def partition_sizes_view(
    topic_name: str,
    at: At,
    ctx: Ctx,
    offset: int = Query(0, ge=0),
    limit: int = Query(100, ge=1, le=MAX_PAGE),
) -> PartitionSizes:
    info = await ctx.cluster.topic(topic_name, refresh=True)
    if not info.partitions:
        raise UnknownTopicOrPartitionError(f"topic {topic_name!r} has no partitions")
    sizes = partition_sizes(topic_name, info.partitions, await _reported(ctx, [info]))
    whole = _topic_model(topic_name, topic_size(sizes))
    return PartitionSizes(
        **whole.model_dump(),
        total=len(sizes),
        offset=offset,
        data=[
            PartitionSizeModel(
                partition_id=s.partition,
                leader_id=s.leader,
                size_bytes=s.leader_bytes,
                replicas=[ReplicaSizeModel(broker_id=b, size_bytes=n) for b, n in s.replicas],
            )
            for s in sizes[offset : offset + limit]
        ],
    )
