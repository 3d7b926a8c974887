"""The cleaner's offset map: the latest offset of each key, in memory bounded by a setting.

Keys are held as their 16-byte MD5 digest, as Kafka's ``SkimpyOffsetMap`` holds them, so a
key's size does not matter; a collision (two keys, one digest) is as unlikely as in Kafka.
The map accepts keys until it holds :attr:`OffsetMap.capacity` of them, derived from
``log.cleaner.dedupe.buffer.size`` and the measured cost of one entry in a Python dict
(:data:`ENTRY_BYTES`, checked by a test). A clean whose dirty section has more distinct keys
than that stops mapping at the offset where the map filled and cleans only up to there; the
next clean continues from that offset.
"""

from __future__ import annotations

import hashlib

# What one entry costs in a dict of 16-byte ``bytes`` keys and ``int`` values: the key object
# (49), the value object (32), the dict's entry and index slots at its worst load (~72).
ENTRY_BYTES = 160
MIN_CAPACITY = 1024


def key_digest(key: bytes) -> bytes:
    return hashlib.md5(key, usedforsecurity=False).digest()


class OffsetMap:
    """Key digest -> latest offset seen, for at most ``capacity`` keys."""

    __slots__ = ("_offsets", "capacity", "latest_offset")

    def __init__(self, memory_bytes: int) -> None:
        self.capacity = max(memory_bytes // ENTRY_BYTES, MIN_CAPACITY)
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1  # the largest offset put, -1 when none

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def full(self) -> bool:
        return len(self._offsets) >= self.capacity

    @property
    def utilization(self) -> float:
        return len(self._offsets) / self.capacity

    def put(self, digest: bytes, offset: int) -> None:
        self._offsets[digest] = offset
        if offset > self.latest_offset:
            self.latest_offset = offset

    def get(self, digest: bytes) -> int:
        """The latest offset of the key, or -1 when it is not in the map."""
        return self._offsets.get(digest, -1)

    def clear(self) -> None:
        self._offsets.clear()
        self.latest_offset = -1
