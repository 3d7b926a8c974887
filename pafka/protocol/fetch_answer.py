"""The partitions' answers in a Fetch v11 response, read by hand with its records left in place.

The generic codec copies a response's record sets into new bytes; a reader that passes record
batches on untouched (the gateway's batch format) takes them here as a view into the response
frame instead. Layout of a Fetch v11 response frame (big-endian; response header v0)::

    correlation_id        int32
    throttle_time_ms      int32
    error_code            int16    errors of the fetch session as a whole
    session_id            int32
    responses             int32 count, then per topic:
      topic               int16 length, UTF-8
      partitions          int32 count, then per partition:
        partition_index       int32
        error_code            int16
        high_watermark        int64
        last_stable_offset    int64
        log_start_offset      int64
        aborted_transactions  int32 count (-1: null), then per transaction:
          producer_id           int64
          first_offset          int64
        preferred_read_replica int32
        records               int32 length (-1: null), then the record batches

Malformed or truncated frames raise :class:`ProtocolError`. Sans-I/O.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from pafka.errors import ProtocolError

VERSION = 11
_HEAD = struct.Struct(">iihii")  # correlation id, throttle, error, session id, topic count
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_PARTITION = struct.Struct(">ihqqqi")  # index, error, HWM, LSO, log start, aborted count
_ABORTED = struct.Struct(">qq")
_TAIL = struct.Struct(">ii")  # preferred read replica, records length


class PartitionAnswer(NamedTuple):
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    # (producer id, first offset) of the aborted transactions in the range returned
    aborted: tuple[tuple[int, int], ...]
    records: memoryview


def session_error(frame: memoryview) -> int:
    """The error code of the response as a whole."""
    _check(frame, 0, _HEAD.size)
    return int(_HEAD.unpack_from(frame, 0)[2])


def find_partition(frame: memoryview, topic: str, partition: int) -> PartitionAnswer | None:
    """The answer for ``topic``-``partition`` (None if the response lacks it); its records are
    a view into ``frame``."""
    wanted = topic.encode()
    for name, index, answer in _walk(frame):
        if name == wanted and index == partition:
            return answer
    return None


def all_partitions(frame: memoryview) -> dict[tuple[str, int], PartitionAnswer]:
    """Every partition's answer, by (topic, partition), the first where one is listed twice (as
    :func:`find_partition` finds it); records are views into ``frame``."""
    found: dict[tuple[str, int], PartitionAnswer] = {}
    for name, index, answer in _walk(frame):
        found.setdefault((name.decode(errors="replace"), index), answer)
    return found


def _walk(frame: memoryview) -> Iterator[tuple[bytes, int, PartitionAnswer]]:
    _check(frame, 0, _HEAD.size)
    topics = _HEAD.unpack_from(frame, 0)[4]
    pos = _HEAD.size
    for _ in range(max(topics, 0)):
        _check(frame, pos, 2)
        (length,) = _INT16.unpack_from(frame, pos)
        _check(frame, pos + 2, max(length, 0) + 4)
        name = bytes(frame[pos + 2 : pos + 2 + max(length, 0)])
        pos += 2 + max(length, 0)
        (count,) = _INT32.unpack_from(frame, pos)
        pos += 4
        for _ in range(max(count, 0)):
            (index, answer), pos = _partition(frame, pos)
            yield name, index, answer


def _partition(frame: memoryview, pos: int) -> tuple[tuple[int, PartitionAnswer], int]:
    _check(frame, pos, _PARTITION.size)
    index, error, hwm, lso, start, aborted_count = _PARTITION.unpack_from(frame, pos)
    pos += _PARTITION.size
    aborted = []
    for _ in range(max(aborted_count, 0)):
        _check(frame, pos, _ABORTED.size)
        aborted.append(_ABORTED.unpack_from(frame, pos))
        pos += _ABORTED.size
    _check(frame, pos, _TAIL.size)
    size = _TAIL.unpack_from(frame, pos)[1]
    pos += _TAIL.size
    _check(frame, pos, max(size, 0))
    records = frame[pos : pos + max(size, 0)]
    answer = PartitionAnswer(error, hwm, lso, start, tuple(aborted), records)
    return (index, answer), pos + max(size, 0)


def _check(frame: memoryview, pos: int, size: int) -> None:
    if pos + size > len(frame):
        raise ProtocolError(f"Fetch v{VERSION} response truncated at byte {pos}")
