"""A consumer's Fetch of one partition (v11), written by hand. Pure.

Every REST range read and every batch read sends one: built through the generic codec it cost
more than the rest of a small read's own work. The bytes are exactly the generic codec's for
the same request (a hypothesis test compares them): a sessionless Fetch (session 0, epoch -1,
as every read here is independent), ``min_bytes`` 1, the partition's own byte limit equal to the
request's, no forgotten topics and no rack.
"""

from __future__ import annotations

import struct

VERSION = 11
CONSUMER_REPLICA_ID = -1
# replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, session_id, session_epoch,
# then one topic
_HEAD = struct.Struct(">iiiibiii")
_ONE = struct.Struct(">i")
# partition, current_leader_epoch, fetch_offset, log_start_offset, partition_max_bytes; then
# no forgotten topics (int32 0) and an empty rack id (int16 0)
_PARTITION = struct.Struct(">iiqqiih")


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
    name = topic.encode()
    return b"".join(
        (
            _HEAD.pack(CONSUMER_REPLICA_ID, max_wait_ms, 1, max_bytes, isolation_level, 0, -1, 1),
            struct.pack(">h", len(name)),
            name,
            _ONE.pack(1),
            _PARTITION.pack(partition, leader_epoch, offset, -1, max_bytes, 0, 0),
        )
    )
