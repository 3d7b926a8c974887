"""Which ``__consumer_offsets`` partition a group maps to, as Kafka computes it.

Kafka's ``GroupMetadataManager.partitionFor``: ``Utils.abs(groupId.hashCode) % partitions``,
where ``hashCode`` is Java's ``String.hashCode`` over UTF-16 code units and ``Utils.abs`` maps
``Integer.MIN_VALUE`` to 0. Transactions name a group's offsets by that partition
(AddOffsetsToTxn, the markers that complete them), so the numbers must agree with Kafka's
clients and tools byte for byte.
"""

from __future__ import annotations

# Kafka's offsets.topic.num.partitions default.
OFFSETS_TOPIC_PARTITIONS = 50
OFFSETS_TOPIC = "__consumer_offsets"

_INT32_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units,
    in 32-bit two's complement."""
    h = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def java_abs(value: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs`` except that ``Integer.MIN_VALUE`` gives 0."""
    return 0 if value == _INT32_MIN else abs(value)


def offsets_partition(group_id: str, partitions: int = OFFSETS_TOPIC_PARTITIONS) -> int:
    """The ``__consumer_offsets`` partition holding ``group_id``'s offsets."""
    if partitions < 1:
        raise ValueError(f"the offsets topic needs at least one partition, not {partitions}")
    return java_abs(java_string_hash(group_id)) % partitions
