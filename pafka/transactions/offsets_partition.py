"""Which ``__consumer_offsets`` partition a group maps to, as Kafka computes it.

Kafka's ``GroupMetadataManager.partitionFor``: ``Utils.abs(groupId.hashCode) % 50`` with Java's
``String.hashCode`` (31-based, over UTF-16 code units, wrapping at 32 bits) and Kafka's
``Utils.abs``, which maps Integer.MIN_VALUE to 0 rather than leaving it negative.
"""

from __future__ import annotations

# Kafka's offsets.topic.num.partitions default.
OFFSETS_TOPIC_PARTITIONS = 50

_INT_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` as a signed 32-bit int."""
    h = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: never negative, Integer.MIN_VALUE becomes 0."""
    return 0 if n == _INT_MIN else abs(n)


def offsets_partition(group_id: str, partitions: int = OFFSETS_TOPIC_PARTITIONS) -> int:
    return kafka_abs(java_string_hash(group_id)) % partitions
