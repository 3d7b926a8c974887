"""Fetch in a session (KIP-227): read only what changed, wait on the session's one event.

``open_session`` applies the request to the cache: epoch 0 opens a session with every named
partition (or none when the cache has no slot: the caller then fetches without one), a later
epoch continues one (unknown id: FETCH_SESSION_ID_NOT_FOUND; wrong epoch:
INVALID_FETCH_SESSION_EPOCH) with the named partitions added or updated and the forgotten ones
removed. ``fetch_in_session`` then reads the session's dirty partitions (all of them for a new
session; for a continued one, those the request named and those that changed since), waits for
more to change until min_bytes or max_wait_ms, and answers: every partition for a new session,
only those with something to tell for a continued one.
"""

from __future__ import annotations

import time
from typing import Any

from pafka.errors import (
    FetchSessionIdNotFoundError,
    InvalidFetchSessionEpochError,
    UnknownServerError,
)
from pafka.protocol.fetch_codec import FetchResponseBody
from services.broker.fetch_session_cache import FetchSession
from services.broker.fetch_sessions import (
    INVALID_SESSION_ID,
    PartitionKey,
    PartitionOutcome,
    PartitionRequest,
    RequestKind,
    apply_request,
    must_respond,
    next_epoch,
    remember_response,
    stays_dirty,
)
from services.broker.handlers.context import RequestContext
from services.broker.handlers.fetch_reads import (
    PartitionFetch,
    ReadBudget,
    by_topic,
    fetch_limits,
    read_each,
    release,
)


def _requested(request: Any) -> list[PartitionRequest]:
    return [
        PartitionRequest(
            (t.topic, int(p.partition)),
            int(p.fetch_offset),
            int(p.partition_max_bytes),
            int(getattr(p, "current_leader_epoch", -1)),
        )
        for t in request.topics
        for p in t.partitions
    ]


def _forgotten(request: Any) -> list[PartitionKey]:
    return [
        (t.topic, int(p))
        for t in getattr(request, "forgotten_topics_data", None) or ()
        for p in t.partitions
    ]


def open_session(
    ctx: RequestContext, request: Any, session_id: int, kind: RequestKind
) -> FetchSession | None:
    """The session this request fetches in, updated by it; None: fetch without a session."""
    cache = ctx.broker.fetch_sessions
    now_ms = int(time.time() * 1000)
    cache.expire_stale(now_ms)
    requested = _requested(request)
    if kind is RequestKind.NEW_SESSION:
        if session_id != INVALID_SESSION_ID:
            cache.remove(session_id)
        replica_id = int(getattr(request, "replica_id", -1))
        session = cache.create(replica_id >= 0, len(requested), now_ms)
        if session is None:
            return None
        touched, _ = apply_request(session.partitions, requested, ())
    else:
        found = cache.get(session_id)
        if found is None:
            raise FetchSessionIdNotFoundError(f"no fetch session {session_id}")
        session = found
        epoch = int(request.session_epoch)
        if epoch != session.epoch:
            raise InvalidFetchSessionEpochError(
                f"fetch session {session_id} expects epoch {session.epoch}, not {epoch}"
            )
        touched, removed = apply_request(session.partitions, requested, _forgotten(request))
        for key in removed:
            session.forget(key)
        session.epoch = next_epoch(session.epoch)
    for key in touched:
        session.mark_dirty(key)
    cache.touch(session, now_ms)
    return session


async def fetch_in_session(
    ctx: RequestContext, request: Any, session: FetchSession, full: bool
) -> FetchResponseBody:
    max_bytes, replica_id, deadline, min_bytes = fetch_limits(ctx, request)
    isolation = int(getattr(request, "isolation_level", 0))
    budget = ReadBudget(max_bytes)
    items: dict[PartitionKey, PartitionFetch] = {}
    try:
        while True:
            _read_dirty(ctx, session, items, replica_id, budget, isolation)
            remaining = deadline - time.monotonic()
            if (
                budget.total >= min_bytes
                or remaining <= 0
                or session.closed
                or any(item.error for item in items.values())
            ):
                break
            await session.wait(remaining)
        return _respond(ctx, session, items, full)
    except BaseException:
        release(items.values())
        raise


def _read_dirty(
    ctx: RequestContext,
    session: FetchSession,
    items: dict[PartitionKey, PartitionFetch],
    replica_id: int,
    budget: ReadBudget,
    isolation_level: int,
) -> None:
    batch = []
    for key in session.take_dirty():
        cached = session.partitions.get(key)
        if cached is None:
            continue
        item = items.get(key)
        if item is None:
            item = PartitionFetch(
                key[0], key[1], cached.fetch_offset, cached.max_bytes, cached.current_leader_epoch
            )
            items[key] = item
        # Watched before the read, so a change the read itself causes (a follower's fetch
        # advancing the high watermark) is read again before the answer.
        partition = ctx.broker.replicas.partitions.get(key)
        session.watch(key, partition.notifier if partition is not None else None)
        batch.append(item)
    read_each(ctx, batch, replica_id, budget, isolation_level)


def _outcome(item: PartitionFetch) -> PartitionOutcome:
    if item.error is not None or item.result is None:
        code = (item.error or UnknownServerError()).code
        return PartitionOutcome(code, 0, -1, -1)
    r = item.result
    return PartitionOutcome(0, len(r.records), r.high_watermark, r.log_start_offset)


def _respond(
    ctx: RequestContext,
    session: FetchSession,
    items: dict[PartitionKey, PartitionFetch],
    full: bool,
) -> FetchResponseBody:
    included = []
    for key in list(session.partitions) if full else list(items):
        item, cached = items.get(key), session.partitions.get(key)
        if item is None or cached is None:
            continue
        outcome = _outcome(item)
        if full or must_respond(cached, outcome):
            remember_response(cached, outcome)
            included.append(item)
        if stays_dirty(outcome, item.skipped):
            session.mark_dirty(key)
    sent = {id(item) for item in included}
    release(item for item in items.values() if id(item) not in sent)
    ctx.broker.fetch_sessions.touch(session, int(time.time() * 1000))
    return FetchResponseBody(by_topic(ctx, included), session_id=session.id)
