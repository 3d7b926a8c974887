"""Fetch sessions (KIP-227), the decisions: what a request does to a session, what a response
carries, which session a full cache gives up. Plain values in, plain values out (a session's
partition table is a plain dict, changed in place so an idle fetch costs nothing per partition).

Epochs: ``FINAL_EPOCH`` (-1) is a sessionless fetch (closing the session it names);
``INITIAL_EPOCH`` (0) a full fetch that opens a new session; anything else an incremental fetch
in session ``session_id``, which must carry the epoch the broker expects next. An incremental
request lists only partitions that are new or whose fetch position changed; the others keep
their cached offset, max bytes and leader epoch; ``forgotten_topics_data`` leaves the session.

A full response carries every partition; an incremental one only those with something to say:
records, an error, or a high watermark or log start offset the client has not been told.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 0x7FFFFFFF
# Kafka's min.incremental.fetch.session.eviction.ms: a session is safe from eviction for this
# long after it is created, and one unused for this long may be evicted by any newcomer.
EVICTION_MS = 120_000

PartitionKey = tuple[str, int]


class RequestKind(enum.Enum):
    SESSIONLESS = "sessionless"
    NEW_SESSION = "new session"
    INCREMENTAL = "incremental"


def request_kind(session_epoch: int) -> RequestKind:
    if session_epoch == FINAL_EPOCH:
        return RequestKind.SESSIONLESS
    if session_epoch == INITIAL_EPOCH:
        return RequestKind.NEW_SESSION
    return RequestKind.INCREMENTAL


def next_epoch(epoch: int) -> int:
    """The epoch the client must send after ``epoch``; wraps to 1, never back to 0."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == MAX_EPOCH else epoch + 1


@dataclass(frozen=True, slots=True)
class PartitionRequest:
    """One partition as a fetch request names it."""

    key: PartitionKey
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int


@dataclass(slots=True)
class CachedPartition:
    """A partition of a session: where the client reads, and what it was last told."""

    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int
    high_watermark: int = -1
    log_start_offset: int = -1
    # False: never told, or last told an error, so the next response must carry the partition.
    told: bool = False


def apply_request(
    partitions: dict[PartitionKey, CachedPartition],
    requested: Iterable[PartitionRequest],
    forgotten: Iterable[PartitionKey],
) -> tuple[list[PartitionKey], list[PartitionKey]]:
    """Add or update the requested partitions, then drop the forgotten ones (Kafka's order: a
    partition both requested and forgotten leaves). Returns (touched, removed)."""
    touched = []
    for want in requested:
        cached = partitions.get(want.key)
        if cached is None:
            partitions[want.key] = CachedPartition(
                want.fetch_offset, want.max_bytes, want.current_leader_epoch
            )
        else:
            cached.fetch_offset = want.fetch_offset
            cached.max_bytes = want.max_bytes
            cached.current_leader_epoch = want.current_leader_epoch
        touched.append(want.key)
    removed = [key for key in forgotten if partitions.pop(key, None) is not None]
    return [key for key in touched if key in partitions], removed


@dataclass(frozen=True, slots=True)
class PartitionOutcome:
    """What a read of one partition found."""

    error_code: int
    records_bytes: int
    high_watermark: int
    log_start_offset: int


def must_respond(cached: CachedPartition, outcome: PartitionOutcome) -> bool:
    """Does an incremental response carry this partition?"""
    return (
        not cached.told
        or outcome.records_bytes > 0
        or outcome.error_code != 0
        or outcome.high_watermark != cached.high_watermark
        or outcome.log_start_offset != cached.log_start_offset
    )


def remember_response(cached: CachedPartition, outcome: PartitionOutcome) -> None:
    """The client has now been told ``outcome``; after an error it is told everything again."""
    cached.told = outcome.error_code == 0
    if not cached.told:
        return
    cached.high_watermark = outcome.high_watermark
    cached.log_start_offset = outcome.log_start_offset


def stays_dirty(outcome: PartitionOutcome, skipped: bool) -> bool:
    """Must the session read this partition again at its next fetch although nothing changed?

    Only a read that found nothing is settled: records sent move the client on (it names the new
    offset, or gets them again), an error is reported until it goes or the client forgets the
    partition, and a partition left out for the response's size limit has data still to send.
    """
    return skipped or outcome.records_bytes > 0 or outcome.error_code != 0


@dataclass(frozen=True, slots=True)
class SessionStanding:
    """What eviction weighs of a cached session."""

    session_id: int
    privileged: bool
    size: int
    created_ms: int
    last_used_ms: int


def stale(standing: SessionStanding, now_ms: int, eviction_ms: int = EVICTION_MS) -> bool:
    return now_ms - standing.last_used_ms > eviction_ms


def eviction_choice(
    sessions: Iterable[SessionStanding],
    privileged: bool,
    size: int,
    now_ms: int,
    eviction_ms: int = EVICTION_MS,
) -> int | None:
    """The session a new one (a follower's when ``privileged``, of ``size`` partitions) may
    take the place of in a full cache, or None: Kafka's rule. The least recently used session
    goes if it is stale; otherwise, among sessions older than ``eviction_ms`` (any for a
    follower, consumers' only for a consumer), the least valuable (consumer before follower,
    then fewer partitions) goes if it is worth less than the newcomer."""
    standings = list(sessions)
    if not standings:
        return None
    oldest = min(standings, key=lambda s: (s.last_used_ms, s.session_id))
    if stale(oldest, now_ms, eviction_ms):
        return oldest.session_id
    evictable = [
        s
        for s in standings
        if now_ms - s.created_ms > eviction_ms and (privileged or not s.privileged)
    ]
    if not evictable:
        return None
    least = min(evictable, key=lambda s: (s.privileged, s.size, s.session_id))
    if (privileged, size) > (least.privileged, least.size):
        return least.session_id
    return None
