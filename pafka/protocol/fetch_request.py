"""A consumer's Fetch (v11), written by hand. Pure.

Every REST range read and every batch read sends one: built through the generic codec it cost
more than the rest of a small read's own work. The bytes are exactly the generic codec's for
the same request (a hypothesis test compares them): a sessionless Fetch (session 0, epoch -1,
as every read here is independent), ``min_bytes`` 1, no forgotten topics and no rack. One
partition (:func:`encode_fetch`) asks its own byte limit for the whole request; several
(:func:`encode_fetch_many`, the follow reads' shared Fetches) each have their own.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

VERSION = 11
CONSUMER_REPLICA_ID = -1
# replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, session_id, session_epoch
_HEAD = struct.Struct(">iiiibii")
_INT32 = struct.Struct(">i")
# partition, current_leader_epoch, fetch_offset, log_start_offset, partition_max_bytes; after
# the topics, no forgotten topics (int32 0) and an empty rack id (int16 0)
_PARTITION = struct.Struct(">iiqqi")
_NO_FORGOTTEN_NO_RACK = struct.Struct(">ih").pack(0, 0)
_INT16 = struct.Struct(">h")


class FetchPosition(NamedTuple):
    """One partition of a Fetch: where to read, under which leader epoch, and how much."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int
    max_bytes: int


def encode_fetch(
    topic: str,
    partition: int,
    offset: int,
    *,
    leader_epoch: int,
    max_bytes: int,
    max_wait_ms: int,
    isolation_level: int,
) -> bytes:
    """The request body (no header) of a Fetch v11 of ``topic``-``partition`` from ``offset``."""
    position = FetchPosition(topic, partition, offset, leader_epoch, max_bytes)
    return encode_fetch_many(
        [position], max_bytes=max_bytes, max_wait_ms=max_wait_ms, isolation_level=isolation_level
    )


def encode_fetch_many(
    positions: Sequence[FetchPosition], *, max_bytes: int, max_wait_ms: int, isolation_level: int
) -> bytes:
    """The request body of a Fetch v11 of every partition of ``positions``, answered with at
    most ``max_bytes`` in all. A topic's partitions are listed together, in first-seen order."""
    by_topic: dict[str, list[FetchPosition]] = {}
    for position in positions:
        by_topic.setdefault(position.topic, []).append(position)
    parts = [
        _HEAD.pack(CONSUMER_REPLICA_ID, max_wait_ms, 1, max_bytes, isolation_level, 0, -1),
        _INT32.pack(len(by_topic)),
    ]
    for topic, partitions in by_topic.items():
        name = topic.encode()
        parts += (_INT16.pack(len(name)), name, _INT32.pack(len(partitions)))
        parts += (
            _PARTITION.pack(p.partition, p.leader_epoch, p.offset, -1, p.max_bytes)
            for p in partitions
        )
    parts.append(_NO_FORGOTTEN_NO_RACK)
    return b"".join(parts)
