"""Deleting a consumer group and resetting its offsets, as ``kafka-consumer-groups --delete``
and ``--reset-offsets`` do.

``DELETE /v3/clusters/{id}/consumer-groups/{g}`` (Confluent's v3 route) sends DeleteGroups to
the group's coordinator: refused with Kafka's NON_EMPTY_GROUP while the group has members.
``POST .../consumer-groups/{g}/offsets:reset`` moves a group's committed offsets on every
partition of one topic to the earliest or latest offset or to a given one (clamped into the
log, as Kafka's tool does); with ``dry_run`` (the default) it only answers what it would
commit. A real reset needs the group without members, as Kafka's tool does, and commits as an
admin (generation -1), which the coordinator accepts only then. Rights: DELETE on the group;
READ on the group and the topic for a reset (OffsetCommit's).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Literal

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from pafka.client.fetcher import offsets
from pafka.client.groups import OffsetAndMetadata
from pafka.errors import NonEmptyGroupError, RestError, for_code
from pafka.protocol.messages import request_class
from pafka.protocol.versions import ApiKey
from services.gateway.context import Ctx, GatewayContext
from services.gateway.formats import INVALID_REQUEST
from services.gateway.v3 import At

router = APIRouter(prefix="/v3/clusters/{cluster_id}", tags=["consumer groups (v3)"])

DELETE_GROUPS_VERSION = 2
Target = Literal["earliest", "latest", "offset"]


class OffsetsReset(BaseModel):
    topic_name: str = Field(min_length=1, max_length=249)
    to: Target = Field(description="earliest, latest, or `offset`")
    offset: int | None = Field(None, ge=0, description="With to=offset; clamped into the log")
    dry_run: bool = Field(True, description="Only answer what would be committed")


class PartitionReset(BaseModel):
    topic_name: str
    partition_id: int
    current_offset: int | None = Field(description="Committed now; null if none")
    new_offset: int


class OffsetsResetResult(BaseModel):
    dry_run: bool
    data: list[PartitionReset]


def reset_target(to: Target, offset: int | None, earliest: int, latest: int) -> int:
    """Where a partition's committed offset moves (pure): Kafka's tool clamps a given offset
    into [earliest, latest]."""
    if to == "earliest":
        return earliest
    if to == "latest":
        return latest
    if offset is None:
        raise ValueError("to=offset needs an offset")
    return min(max(offset, earliest), latest)


@router.delete("/consumer-groups/{group_id}", status_code=204, summary="Delete an empty group")
async def delete_group(group_id: str, at: At, ctx: Ctx) -> Response:
    cls = request_class(ApiKey.DELETE_GROUPS)[DELETE_GROUPS_VERSION]
    broker = await ctx.groups.coordinator(group_id)
    answer = await ctx.cluster.call(
        broker, ApiKey.DELETE_GROUPS, DELETE_GROUPS_VERSION, cls(groups_names=[group_id])
    )
    (result,) = answer.results
    if result.error_code:
        raise for_code(result.error_code, f"deleting group {group_id!r}")
    return Response(status_code=204)


@router.post(
    "/consumer-groups/{group_id}/offsets:reset",
    response_model=OffsetsResetResult,
    summary="Reset a group's offsets on a topic (dry run by default)",
)
async def reset_offsets(group_id: str, body: OffsetsReset, at: At, ctx: Ctx) -> OffsetsResetResult:
    if body.to == "offset" and body.offset is None:
        raise RestError(INVALID_REQUEST, "to=offset needs an offset")
    topic = body.topic_name
    info = await ctx.cluster.topic(topic, refresh=True)
    ids = sorted(info.partitions)
    committed, ranges = await asyncio.gather(
        ctx.groups.fetch_offsets(group_id, [(topic, p) for p in ids]),
        asyncio.gather(*(offsets(ctx.cluster, topic, p) for p in ids)),
    )
    planned = {
        (topic, p): reset_target(body.to, body.offset, start, end)
        for p, (start, end) in zip(ids, ranges, strict=True)
    }
    if not body.dry_run:
        await _commit_while_empty(ctx, group_id, planned)
    return OffsetsResetResult(
        dry_run=body.dry_run,
        data=[
            PartitionReset(
                topic_name=topic,
                partition_id=p,
                current_offset=c.offset if (c := committed.get((topic, p))) else None,
                new_offset=planned[(topic, p)],
            )
            for p in ids
        ],
    )


async def _commit_while_empty(
    ctx: GatewayContext, group: str, planned: Mapping[tuple[str, int], int]
) -> None:
    described = await ctx.groups.describe(group)
    if described.members:
        raise NonEmptyGroupError(
            f"group {group!r} has {len(described.members)} members: offsets can be reset only "
            "while it has none (stop its consumers first)"
        )
    outcome = await ctx.groups.commit(
        group, {tp: OffsetAndMetadata(offset) for tp, offset in planned.items()}
    )
    for error in outcome.values():
        if error is not None:
            raise error
