"""Which partition a keyed record goes to: Kafka's default partitioner, bit for bit.

A key must land in the same partition whether it was written through the gateway, by a Java
producer or by kafka-python, or per-key ordering breaks for mixed writers. Kafka hashes the key
bytes with its own variant of MurmurHash2 (seed ``0x9747b28c``, little-endian 4-byte words,
Java's signed 32-bit arithmetic), clears the sign bit and takes the remainder by the partition
count. Keyless records are spread by the caller; nothing here keeps state.
"""

from __future__ import annotations

SEED = 0x9747B28C
M = 0x5BD1E995
R = 24
MASK32 = 0xFFFFFFFF


def _signed(value: int) -> int:
    """A 32-bit pattern read as Java reads an ``int``."""
    value &= MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: a signed 32-bit hash of ``data``.

    Python integers do not wrap, so every product is masked back to 32 bits where Java's would
    overflow; ``>>>`` (unsigned shift) is a plain shift of the masked value.
    """
    length = len(data)
    h = (SEED ^ length) & MASK32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * M) & MASK32
        k ^= k >> R
        k = (k * M) & MASK32
        h = (h * M) & MASK32
        h ^= k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * M) & MASK32
    h ^= h >> 13
    h = (h * M) & MASK32
    h ^= h >> 15
    return _signed(h)


def to_positive(value: int) -> int:
    """Kafka's ``Utils.toPositive``: drop the sign bit (not ``abs``, which fails on MIN_VALUE)."""
    return value & 0x7FFFFFFF


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for ``key`` among ``partitions``."""
    if partitions <= 0:
        raise ValueError("a topic has at least one partition")
    return to_positive(murmur2(key)) % partitions
