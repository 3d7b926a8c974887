"""Zig-zag varints read at many positions of one buffer at once (numpy; pure).

Kafka's records are runs of varints whose positions depend on each other only within a
record, so a field of every record is read in one step once the records' starts are known:
each step reads one more byte of the varints not yet ended.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pafka.errors import CorruptMessageError

# Zero bytes after the data: a varint read at the last position ends there instead of
# reading past the array (a zero byte ends a varint), and 12-byte prefixes are read whole.
PAD_BYTES = 16
MAX_VARINT_BYTES = 10

Positions = npt.NDArray[np.int64]
Bytes = npt.NDArray[np.uint8]


def read_varints(buf: Bytes, positions: Positions, limit: int) -> tuple[Positions, Positions]:
    """(values, sizes in bytes) of the varints at ``positions`` of ``buf`` (which holds
    :data:`PAD_BYTES` zero bytes past ``limit``); a position at or past ``limit`` or a varint
    longer than 10 bytes is :class:`CorruptMessageError`."""
    top = int(positions.max()) if len(positions) else -1
    if top >= limit or (len(positions) and int(positions.min()) < 0):
        raise CorruptMessageError("a record field runs past the end of its batch")
    first = buf[positions]
    if not len(first) or int(first.max()) < 0x80:  # all one byte: the usual deltas and counts
        small = first.astype(np.int64)
        return (small >> 1) ^ -(small & 1), np.ones(len(positions), np.int64)
    second = buf[positions + 1]
    longer = first >= 0x80
    # At most two bytes, the usual lengths and deltas (under 8192), all ending before
    # ``limit``: read without the loop. (The pad keeps every second byte inside ``buf``.)
    if int(np.max(second, where=longer, initial=0)) < 0x80 and top + 1 < limit:
        low = (first & 0x7F).astype(np.int64)
        raw = np.where(longer, low | (second.astype(np.int64) << 7), low)
        return (raw >> 1) ^ -(raw & 1), longer.astype(np.int64) + 1
    byte = first.astype(np.uint64)
    value = byte & np.uint64(0x7F)
    sizes = np.ones(len(positions), np.int64)
    going = np.flatnonzero(byte >= 0x80)
    shift = 7
    while len(going):
        if shift >= 7 * MAX_VARINT_BYTES:
            raise CorruptMessageError("overlong varint in a record")
        at = positions[going] + sizes[going]
        if int(at.max()) >= limit:
            raise CorruptMessageError("truncated varint in a record")
        byte = buf[at].astype(np.uint64)
        value[going] |= (byte & np.uint64(0x7F)) << np.uint64(min(shift, 63))
        sizes[going] += 1
        going = going[byte >= 0x80]
        shift += 7
    signed = (value >> np.uint64(1)).astype(np.int64) ^ -(value & np.uint64(1)).astype(np.int64)
    return signed, sizes
