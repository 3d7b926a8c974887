"""ZooKeeper-era consumer groups, read straight from ``/consumers``, as
``kafka-consumer-groups.sh --zookeeper`` read them (read-only).

``GET /v3/clusters/{id}/zookeeper-groups/{g}`` answers a group's registered consumers (with
their hosts where their ids say), each partition's owner, the offset committed in ZooKeeper,
the log end and the lag. Garbage in a node marks only its member or partition (a ``problem``
naming the node), never the whole answer. :func:`registries` tells, for the group search,
which groups are of this kind. Rights: DESCRIBE on the group, and the partitions of topics the
caller may not DESCRIBE left out, as for any group's offsets.

Reads are pipelined (every request of a round sent before the first answer is awaited): a
group costs four rounds, the whole registry three, whatever the number of groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import APIRouter, Request
from kazoo.client import KazooClient
from pydantic import BaseModel, Field

from pafka.client import group_lags
from pafka.client.isolation import IsolationLevel
from pafka.errors import GroupIdNotFoundError, RestError
from pafka.zk.client import children_many, children_or_empty, get_many
from pafka.zk.znodes import CONSUMERS
from pafka.zk.znodes import ConsumerGroupZNodes as Z
from services.gateway.access import describable_topics
from services.gateway.console import zk_group_view
from services.gateway.console.group_paging import Kind, ZkRegistry
from services.gateway.context import Ctx
from services.gateway.errors import ILLEGAL_STATE
from services.gateway.v3 import At

router = APIRouter(prefix="/v3/clusters/{cluster_id}", tags=["console views"])

IDS, OWNERS = "ids", "owners"


class ZkMemberModel(BaseModel):
    consumer_id: str
    host: str = Field(description="From the consumer id, as Kafka's tool shows it; '' if none")
    topics: list[str] = Field(description="Its subscription (regexes for a white/black list)")
    pattern: str
    registered_at_ms: int
    problem: str | None = Field(description="Why its registration could not be read")


class ZkPartitionModel(BaseModel):
    topic: str
    partition: int
    owner: str | None = Field(description="The consumer-thread id claiming it")
    committed_offset: int | None = Field(description="From ZooKeeper; null if none or unreadable")
    end_offset: int | None = Field(description="The last stable offset; null if unknown")
    lag: int | None
    problem: str | None = Field(description="Why its owner or offset node could not be read")


class ZkGroupModel(BaseModel):
    group: str
    kind: str = Kind.ZOOKEEPER.value
    state: str = Field(description="Stable while a consumer is registered, else Empty")
    members: list[ZkMemberModel]
    partitions: list[ZkPartitionModel]
    problems: list[str] = Field(description="Nodes naming no partition, and the like")


@dataclass
class _Raw:
    children: list[str] = field(default_factory=list)
    ids: dict[str, bytes] = field(default_factory=dict)
    owners: dict[tuple[str, str], bytes] = field(default_factory=dict)
    offsets: dict[tuple[str, str], bytes] = field(default_factory=dict)


def _read_group(zk: KazooClient, group: str) -> _Raw | None:
    """Every node of the group's registry, pipelined; None when the group has none. Blocking."""
    (children,) = children_many(zk, [Z.group_path(group)])
    if children is None:
        return None
    raw = _Raw(children=sorted(children))
    ids_path, owners_path, offsets_path = (
        Z.ids_path(group),
        Z.owners_path(group),
        Z.offsets_path(group),
    )
    members, owner_topics, offset_topics = children_many(zk, [ids_path, owners_path, offsets_path])
    owner_topics, offset_topics = owner_topics or [], offset_topics or []
    topic_paths = [Z.owners_topic_path(group, t) for t in owner_topics]
    topic_paths += [Z.offsets_topic_path(group, t) for t in offset_topics]
    names = children_many(zk, topic_paths)
    tagged = [(OWNERS, t) for t in owner_topics] + [("offsets", t) for t in offset_topics]
    wanted: list[tuple[str, str, str, str]] = [
        (tree, topic, name, f"{parent}/{name}")
        for (tree, topic), parent, children_of in zip(tagged, topic_paths, names, strict=True)
        for name in children_of or []
    ]
    member_paths = [Z.member_path(group, m) for m in members or []]
    found = get_many(zk, [*member_paths, *(w[3] for w in wanted)])
    for member, got in zip(members or [], found, strict=False):
        if got is not None:
            raw.ids[member] = got[0]
    for (tree, topic, name, _), got in zip(wanted, found[len(member_paths) :], strict=True):
        if got is not None:
            (raw.owners if tree == OWNERS else raw.offsets)[(topic, name)] = got[0]
    return raw


def _read_registries(zk: KazooClient) -> dict[str, ZkRegistry]:
    """What kind each group under ``/consumers`` is, in three pipelined rounds. Blocking."""
    groups = children_or_empty(zk, CONSUMERS)
    children = children_many(zk, [Z.group_path(g) for g in groups])
    with_ids = [g for g, c in zip(groups, children, strict=True) if c and IDS in c]
    ids = children_many(zk, [Z.ids_path(g) for g in with_ids])
    members = [(g, m) for g, ms in zip(with_ids, ids, strict=True) for m in ms or []]
    data = get_many(zk, [Z.member_path(g, m) for g, m in members])
    registrations: dict[str, dict[str, bytes]] = {g: {} for g in with_ids}
    for (g, m), got in zip(members, data, strict=True):
        if got is not None:
            registrations[g][m] = got[0]
    return {
        g: zk_group_view.registry(g, c or [], registrations.get(g, {}))
        for g, c in zip(groups, children, strict=True)
    }


async def registries(ctx: Ctx) -> dict[str, ZkRegistry]:
    """Every group ZooKeeper's registry holds, by kind; none for a gateway without ZooKeeper."""
    if ctx.zk is None:
        return {}
    return await ctx.zk.run(_read_registries, ctx.zk.kazoo)


@router.get(
    "/zookeeper-groups/{group_id}",
    response_model=ZkGroupModel,
    summary="A ZooKeeper-era group: consumers, owners, offsets from ZooKeeper, log end and lag",
)
async def zookeeper_group(group_id: str, request: Request, at: At, ctx: Ctx) -> ZkGroupModel:
    if ctx.zk is None:
        raise RestError(ILLEGAL_STATE, "this gateway reaches no ZooKeeper (bootstrap list only)")
    raw = await ctx.zk.run(_read_group, ctx.zk.kazoo, group_id)
    if raw is None:
        raise GroupIdNotFoundError(f"no group {group_id!r} in ZooKeeper's {CONSUMERS}")
    members = zk_group_view.members(group_id, raw.ids)
    parts, problems = zk_group_view.partitions(group_id, raw.owners, raw.offsets)
    shown = describable_topics(request, ctx.authorizer, {p.topic for p in parts})
    parts = [p for p in parts if p.topic in shown]
    # A partition of a topic deleted since, or without a leader, only lacks its log end.
    ends = await group_lags.log_end_offsets(
        ctx.cluster, {(p.topic, p.partition) for p in parts}, IsolationLevel.READ_COMMITTED
    )
    return ZkGroupModel(
        group=group_id,
        state="Stable" if any(m.problem is None for m in members) else "Empty",
        members=[
            ZkMemberModel(
                consumer_id=m.consumer_id,
                host=m.host,
                topics=list(m.topics),
                pattern=m.pattern,
                registered_at_ms=m.registered_at_ms,
                problem=m.problem,
            )
            for m in members
        ],
        partitions=[
            ZkPartitionModel(
                topic=p.topic,
                partition=p.partition,
                owner=p.owner,
                committed_offset=p.committed_offset,
                end_offset=ends.get((p.topic, p.partition)),
                lag=zk_group_view.lag(p.committed_offset, ends.get((p.topic, p.partition))),
                problem=p.problem,
            )
            for p in parts
        ],
        problems=problems,
    )
