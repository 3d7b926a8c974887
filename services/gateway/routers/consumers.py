"""REST Proxy v2 consumer instances: ``/consumers/{group}/instances/{instance}/...``.

Create an instance, subscribe it (it becomes a member of the group) or assign it partitions,
seek, read records, commit, delete it. Unlike Confluent's proxy the instance is not held by the
gateway that created it: its state (:mod:`services.gateway.consumer_instances`) is in ZooKeeper
(:mod:`services.gateway.consumer_instance_store`) and what it does on the brokers is
:mod:`services.gateway.consumer_runtime`, so every request may go to any gateway replica. An
instance unused for ``consumer_instance_timeout_ms`` is removed (it leaves its group).
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError

from pafka.client.batch_reading import FetchedRecord
from pafka.client.isolation import IsolationLevel
from pafka.cluster.names import validate_group_id
from pafka.errors import RestError
from pafka.groups.consumer_protocol import TopicPartition
from pafka.security.acls import Operation
from services.gateway.access import topics_allowed
from services.gateway.consumer_instance_store import InstanceStore
from services.gateway.consumer_instances import (
    EARLIEST,
    LATEST,
    InstanceState,
    check_name,
    new_name,
    now_ms,
)
from services.gateway.consumer_runtime import ConsumerRuntime
from services.gateway.context import Ctx
from services.gateway.errors import FORMAT_MISMATCH, INVALID_CONSUMER_CONFIG
from services.gateway.formats import (
    V2,
    V2_BINARY,
    V2_JSON,
    EmbeddedFormat,
    ErrorBody,
    load_json,
    read_format,
)
from services.gateway.models.consumers import (
    CommittedOffset,
    CommittedOffsets,
    CreateConsumer,
    CreatedConsumer,
    Offsets,
    PartitionOffset,
    PartitionRef,
    Partitions,
    Subscription,
)
from services.gateway.record_rendering import render_records

router = APIRouter(prefix="/consumers", tags=["consumers (REST Proxy v2)"])

DEFAULT_TIMEOUT_MS = 1_000
BodyModel = TypeVar("BodyModel", bound=BaseModel)
INSTANCE = "/{group}/instances/{instance}"
UNKNOWN: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "Unknown consumer instance (40403)"}
}


class V2Response(JSONResponse):
    media_type = V2


# -- plumbing ----------------------------------------------------------------------------------


def runtime(request: Request, ctx: Ctx) -> ConsumerRuntime:
    """One per gateway app; its sweep of idle instances starts with the first request."""
    found: ConsumerRuntime | None = getattr(request.app.state, "consumer_runtime", None)
    if found is None or found.cluster is not ctx.cluster:
        found = ConsumerRuntime(ctx.cluster, ctx.groups, InstanceStore(ctx.zk), ctx.settings)
        request.app.state.consumer_runtime = found
    return found


Runtime = Annotated[ConsumerRuntime, Depends(runtime)]


async def instance(group: str, instance: str, rt: Runtime) -> InstanceState:
    """The instance named in the path, marked as used (404 when unknown or expired)."""
    validate_group_id(group)
    return await rt.open(group, check_name(instance))


Instance = Annotated[InstanceState, Depends(instance)]


def _pairs(refs: list[PartitionRef]) -> list[TopicPartition]:
    return [(r.topic, r.partition) for r in refs]


def _offsets(refs: list[PartitionOffset]) -> dict[TopicPartition, int]:
    return {(r.topic, r.partition): r.offset for r in refs}


def check_accept(accept: str | None, fmt: EmbeddedFormat) -> None:
    """406 unless ``Accept`` allows the instance's format (no Accept: anything goes)."""
    medias = [p.split(";", 1)[0].strip().lower() for p in (accept or "").split(",")]
    medias = [m for m in medias if m]
    if not medias or any(m in ("*/*", "application/*") for m in medias):
        return
    for media in medias:
        try:
            if read_format(media) is fmt:
                return
        except RestError:
            continue
    raise RestError(
        FORMAT_MISMATCH,
        f"the instance was created with format {fmt}; read it with Accept: {fmt.media_type}",
    )


def _parsed(raw: bytes, model: type[BodyModel]) -> BodyModel:
    """``raw`` as ``model``, or a 422 naming the first field that does not fit."""
    try:
        return model.model_validate(load_json(raw))
    except ValidationError as exc:
        raise RestError(42200, f"invalid body: {exc.errors()[0].get('msg')}") from None


async def _optional_body(request: Request) -> Partitions | None:
    """REST Proxy sends a body with GET .../offsets; none means "every assigned partition"."""
    raw = await request.body()
    if not raw.strip():
        return None
    return _parsed(raw, Partitions)


# -- instances ---------------------------------------------------------------------------------


@router.post(
    "/{group}",
    response_model=CreatedConsumer,
    response_class=V2Response,
    summary="Create a consumer instance",
    responses={409: {"model": ErrorBody, "description": "The name is taken (40901)"}},
)
async def create_instance(
    group: str, body: CreateConsumer, request: Request, rt: Runtime
) -> CreatedConsumer:
    validate_group_id(group)
    name = check_name(body.name) if body.name else new_name()
    try:
        fmt = EmbeddedFormat(body.format.lower())
    except ValueError:
        raise RestError(
            INVALID_CONSUMER_CONFIG, f"format {body.format!r} is not supported: json or binary"
        ) from None
    reset = body.auto_offset_reset.lower()
    if reset not in (EARLIEST, LATEST):
        raise RestError(INVALID_CONSUMER_CONFIG, "auto.offset.reset must be earliest or latest")
    try:
        isolation = IsolationLevel.parse(body.isolation_level)
    except ValueError as exc:
        raise RestError(INVALID_CONSUMER_CONFIG, str(exc)) from None
    now = now_ms()
    state = InstanceState(
        group,
        name,
        fmt,
        reset,
        body.auto_commit_enable,
        created_ms=now,
        last_used_ms=now,
        isolation=isolation,
    )
    rt.sweeper.start()
    await rt.store.create(state)
    base = str(request.base_url).rstrip("/")
    return CreatedConsumer(instance_id=name, base_uri=f"{base}/consumers/{group}/instances/{name}")


@router.delete(INSTANCE, status_code=204, summary="Delete the instance (it leaves the group)")
async def delete_instance(state: Instance, rt: Runtime) -> Response:
    await rt.release(state)
    await rt.store.delete(state.group, state.name)
    return Response(status_code=204)


# -- subscription and assignment ---------------------------------------------------------------


@router.post(
    f"{INSTANCE}/subscription",
    status_code=204,
    summary="Subscribe to topics (the instance joins the group on its next read)",
    responses=UNKNOWN,
)
async def subscribe(body: Subscription, state: Instance, rt: Runtime) -> Response:
    if body.topic_pattern is not None:
        raise RestError(INVALID_CONSUMER_CONFIG, "topic_pattern is not supported; name topics")
    if not body.topics:
        raise RestError(42200, "topics must name at least one topic")
    await rt.store.update(state.group, state.name, lambda s: s.subscribe(body.topics))
    return Response(status_code=204)


@router.get(
    f"{INSTANCE}/subscription",
    response_model=Subscription,
    response_model_exclude_none=True,
    response_class=V2Response,
    responses=UNKNOWN,
)
async def subscription(state: Instance) -> Subscription:
    return Subscription(topics=list(state.topics))


@router.delete(f"{INSTANCE}/subscription", status_code=204, summary="Unsubscribe (leave the group)")
async def unsubscribe(state: Instance, rt: Runtime) -> Response:
    await rt.release(state)
    await rt.store.update(state.group, state.name, lambda s: s.unsubscribed())
    return Response(status_code=204)


@router.post(
    f"{INSTANCE}/assignments",
    status_code=204,
    summary="Assign partitions by hand (no group membership)",
    responses=UNKNOWN,
)
async def assign(body: Partitions, state: Instance, rt: Runtime) -> Response:
    await rt.store.update(state.group, state.name, lambda s: s.assign(_pairs(body.partitions)))
    return Response(status_code=204)


@router.get(
    f"{INSTANCE}/assignments",
    response_model=Partitions,
    response_class=V2Response,
    summary="The partitions the instance reads (the group's grant when subscribed)",
    responses=UNKNOWN,
)
async def assignments(state: Instance, rt: Runtime) -> Partitions:
    state = await rt.member(state, join=False)
    return Partitions(
        partitions=[PartitionRef(topic=t, partition=p) for t, p in sorted(state.assignment)]
    )


# -- positions ---------------------------------------------------------------------------------


@router.post(f"{INSTANCE}/positions", status_code=204, summary="Seek", responses=UNKNOWN)
async def seek(body: Offsets, state: Instance, rt: Runtime) -> Response:
    await rt.seek(await rt.member(state, join=False), _offsets(body.offsets))
    return Response(status_code=204)


@router.post(f"{INSTANCE}/positions/beginning", status_code=204, responses=UNKNOWN)
async def seek_to_beginning(body: Partitions, state: Instance, rt: Runtime) -> Response:
    state = await rt.member(state, join=False)
    state.seek(dict.fromkeys(_pairs(body.partitions), 0))  # 409 for unassigned partitions
    await rt.seek(state, await rt.reset_positions(state, _pairs(body.partitions), earliest=True))
    return Response(status_code=204)


@router.post(f"{INSTANCE}/positions/end", status_code=204, responses=UNKNOWN)
async def seek_to_end(body: Partitions, state: Instance, rt: Runtime) -> Response:
    state = await rt.member(state, join=False)
    state.seek(dict.fromkeys(_pairs(body.partitions), 0))
    await rt.seek(state, await rt.reset_positions(state, _pairs(body.partitions), earliest=False))
    return Response(status_code=204)


# -- records and offsets -----------------------------------------------------------------------


@router.get(
    f"{INSTANCE}/records",
    summary="Read the next records (a subscribed instance joins or heartbeats first)",
    responses={
        200: {"content": {V2_JSON: {}, V2_BINARY: {}}},
        406: {"model": ErrorBody, "description": "Accept does not match the format (40601)"},
        **UNKNOWN,
    },
)
async def records(
    request: Request,
    state: Instance,
    rt: Runtime,
    timeout: int = Query(DEFAULT_TIMEOUT_MS, ge=0, description="Wait this long (ms) for records"),
    max_bytes: int | None = Query(None, ge=1, description="About this many bytes of records"),
) -> JSONResponse:
    fmt = state.format
    check_accept(request.headers.get("accept"), fmt)
    settings = rt.settings

    def render(tp: TopicPartition, fetched: list[FetchedRecord]) -> list[Any]:
        return render_records(tp[0], tp[1], fetched, fmt)

    authorizer = request.app.state.ctx.authorizer
    _, shown = await rt.read(
        state,
        render,
        timeout_ms=min(timeout, settings.max_poll_ms),
        max_bytes=min(max_bytes or settings.max_fetch_bytes, settings.max_fetch_bytes),
        may_read=lambda topics: topics_allowed(request, authorizer, Operation.READ, topics),
    )
    return JSONResponse(shown, media_type=fmt.media_type)


@router.post(
    f"{INSTANCE}/offsets",
    summary="Commit the given offsets, or (no body) every position",
    response_class=Response,
    responses={
        200: {"description": "Committed (no body, as in Confluent's REST Proxy)"},
        409: {"model": ErrorBody, "description": "The group rebalanced: read, then commit"},
        **UNKNOWN,
    },
)
async def commit(request: Request, state: Instance, rt: Runtime) -> Response:
    raw = await request.body()
    wanted = _offsets(_parsed(raw, Offsets).offsets) if raw.strip() else dict(state.positions)
    await rt.commit(await rt.member(state, join=False), wanted)
    await rt.store.update(state.group, state.name, lambda s: s.marked_committed(wanted))
    return Response(status_code=200)


@router.get(
    f"{INSTANCE}/offsets",
    response_model=CommittedOffsets,
    response_class=V2Response,
    summary="The group's committed offsets of the given partitions (no body: all assigned)",
    responses=UNKNOWN,
)
async def committed(request: Request, state: Instance, rt: Runtime) -> CommittedOffsets:
    body = await _optional_body(request)
    wanted = _pairs(body.partitions) if body else sorted(state.assignment)
    found = await rt.groups.fetch_offsets(state.group, wanted) if wanted else {}
    return CommittedOffsets(
        offsets=[
            CommittedOffset(topic=t, partition=p, offset=c.offset, metadata=c.metadata or "")
            for (t, p), c in sorted(found.items())
            if c is not None
        ]
    )
