"""Fetch: serve whole batches from segment files, long-polling for min_bytes up to max_wait_ms.

Kafka's rules: the response carries at least one whole batch when one exists (even above
max_bytes or a partition's max bytes), no consumer sees data at or above the high watermark, and
the total stays under max_bytes otherwise. The request waits until min_bytes are available, a
partition's state changes, or max_wait_ms passes. Record sets of 16 KiB or more are read as
file regions (for ``sendfile``); a read not sent (read again, trimmed, failed) closes its region.

Session epochs (KIP-227) choose the path: a sessionless fetch (epoch -1, every version below 7)
reads every partition it names, here; epoch 0 opens a session and later epochs continue one,
in ``fetch_in_session``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pafka.errors import FetchSessionIdNotFoundError, InvalidFetchSessionEpochError
from pafka.protocol.fetch_codec import FetchResponseBody
from services.broker.fetch_sessions import INVALID_SESSION_ID, RequestKind, request_kind
from services.broker.handlers.context import RequestContext
from services.broker.handlers.fetch_in_session import fetch_in_session, open_session
from services.broker.handlers.fetch_reads import (
    PartitionFetch,
    ReadBudget,
    by_topic,
    fetch_limits,
    read_each,
    release,
)
from services.broker.notify import Notifier, wait_any


def _notifiers(ctx: RequestContext, wanted: list[PartitionFetch]) -> list[Notifier]:
    found = []
    for item in wanted:
        partition = ctx.broker.replicas.partitions.get((item.topic, item.index))
        if partition is not None:
            found.append(partition.notifier)
    return found


async def handle_fetch(ctx: RequestContext, request: Any) -> FetchResponseBody:
    session_id = int(getattr(request, "session_id", INVALID_SESSION_ID))
    kind = request_kind(int(getattr(request, "session_epoch", -1)))
    if kind is RequestKind.SESSIONLESS:
        if session_id != INVALID_SESSION_ID:
            ctx.broker.fetch_sessions.remove(session_id)
        return await _fetch_sessionless(ctx, request)
    try:
        session = open_session(ctx, request, session_id, kind)
    except (FetchSessionIdNotFoundError, InvalidFetchSessionEpochError) as exc:
        # The whole request fails: a top-level error, no session, no partitions (as Kafka).
        return FetchResponseBody([], error_code=ctx.error(exc.code), session_id=INVALID_SESSION_ID)
    if session is None:  # no slot for a new session: served without one (session id 0)
        return await _fetch_sessionless(ctx, request)
    return await fetch_in_session(ctx, request, session, kind is RequestKind.NEW_SESSION)


async def _fetch_sessionless(ctx: RequestContext, request: Any) -> FetchResponseBody:
    max_bytes, replica_id, deadline, min_bytes = fetch_limits(ctx, request)
    isolation = int(getattr(request, "isolation_level", 0))
    wanted = [
        PartitionFetch(
            t.topic,
            p.partition,
            int(p.fetch_offset),
            int(p.partition_max_bytes),
            int(getattr(p, "current_leader_epoch", -1)),
        )
        for t in request.topics
        for p in t.partitions
    ]
    try:
        while True:
            budget = ReadBudget(max_bytes)
            release(wanted)
            read_each(ctx, wanted, replica_id, budget, isolation)
            remaining = deadline - time.monotonic()
            if budget.total >= min_bytes or remaining <= 0 or any(w.error for w in wanted):
                break
            notifiers = _notifiers(ctx, wanted)
            if notifiers:
                await wait_any(notifiers, remaining)
            else:
                await asyncio.sleep(remaining)
        return FetchResponseBody(by_topic(ctx, wanted))
    except BaseException:
        release(wanted)
        raise
