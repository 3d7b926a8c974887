"""The "consumer" embedded protocol: what group members put inside JoinGroup and SyncGroup.

The coordinator treats most group payloads as opaque, but it reads these two to keep the
ZooKeeper registry of the seeds: which topics a member subscribes to (``ids/{member}``) and which
partitions it was given (``owners/{topic}/{p}``). Sans-I/O: bytes in, values out.

Both structures are Kafka's classic (non-flexible) encoding, big-endian::

    Subscription                              Assignment
      version          int16                    version          int16
      topics           [string]                 partitions       [topic string, [int32]]
      user_data        nullable bytes           user_data        nullable bytes
      owned_partitions [topic, [int32]]  v1+
      generation_id    int32             v2+
      rack_id          nullable string   v3+

A string is an int16 length then UTF-8; an array an int32 count (-1 for null); bytes an int32
length (-1 for null). Newer versions only append fields, so a payload of a higher version than
we know is read as the highest we know and its tail ignored, as Kafka's own clients do.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pafka.errors import ProtocolError

TopicPartition = tuple[str, int]

PROTOCOL_TYPE = "consumer"
SUBSCRIPTION_MAX_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@dataclass(frozen=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: frozenset[TopicPartition] = frozenset()
    generation_id: int = -1
    rack_id: str | None = None
    version: int = 1


@dataclass(frozen=True)
class Assignment:
    partitions: frozenset[TopicPartition]
    user_data: bytes | None = None
    version: int = 0


# -- reading -----------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, fmt: struct.Struct) -> int:
        if self.pos + fmt.size > len(self.data):
            raise ProtocolError("consumer protocol payload ends early")
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return int(value)

    def int16(self) -> int:
        return self._take(_I16)

    def int32(self) -> int:
        return self._take(_I32)

    def _raw(self, length: int) -> bytes:
        if length < 0 or self.pos + length > len(self.data):
            raise ProtocolError("consumer protocol payload ends early")
        chunk = self.data[self.pos : self.pos + length]
        self.pos += length
        return chunk

    def nullable_string(self) -> str | None:
        length = self.int16()
        if length == -1:
            return None
        try:
            return self._raw(length).decode()
        except UnicodeDecodeError as exc:
            raise ProtocolError("consumer protocol string is not UTF-8") from exc

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise ProtocolError("consumer protocol string is null")
        return value

    def nullable_bytes(self) -> bytes | None:
        length = self.int32()
        return None if length == -1 else self._raw(length)

    def count(self) -> int:
        n = self.int32()
        if n < -1 or n > len(self.data) - self.pos:  # each element takes at least one byte
            raise ProtocolError(f"consumer protocol array of {n} elements does not fit")
        return max(n, 0)

    def topic_partitions(self) -> frozenset[TopicPartition]:
        found: set[TopicPartition] = set()
        for _ in range(self.count()):
            topic = self.string()
            found.update((topic, self.int32()) for _ in range(self.count()))
        return frozenset(found)

    @property
    def exhausted(self) -> bool:
        return self.pos >= len(self.data)


def decode_subscription(data: bytes) -> Subscription:
    """Raises :class:`ProtocolError` for bytes that are not a consumer subscription."""
    r = _Reader(data)
    version = r.int16()
    if version < 0:
        raise ProtocolError(f"consumer subscription version {version}")
    topics = tuple(r.string() for _ in range(r.count()))
    user_data = r.nullable_bytes()
    owned: frozenset[TopicPartition] = frozenset()
    generation = -1
    rack = None
    # Clients of newer versions may still omit trailing fields; stop where the bytes stop.
    if version >= 1 and not r.exhausted:
        owned = r.topic_partitions()
    if version >= 2 and not r.exhausted:
        generation = r.int32()
    if version >= 3 and not r.exhausted:
        rack = r.nullable_string()
    return Subscription(topics, user_data, owned, generation, rack, version)


def decode_assignment(data: bytes) -> Assignment:
    """An empty payload is an empty assignment (what a leader sends a member with nothing)."""
    if not data:
        return Assignment(frozenset())
    r = _Reader(data)
    version = r.int16()
    if version < 0:
        raise ProtocolError(f"consumer assignment version {version}")
    partitions = r.topic_partitions()
    user_data = r.nullable_bytes() if not r.exhausted else None
    return Assignment(partitions, user_data, version)


# -- writing -----------------------------------------------------------------------------------


def _string(value: str | None) -> bytes:
    if value is None:
        return _I16.pack(-1)
    raw = value.encode()
    return _I16.pack(len(raw)) + raw


def _bytes(value: bytes | None) -> bytes:
    return _I32.pack(-1) if value is None else _I32.pack(len(value)) + value


def _topic_partitions(partitions: frozenset[TopicPartition]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    out = [_I32.pack(len(by_topic))]
    for topic, numbers in by_topic.items():
        out.append(_string(topic))
        out.append(_I32.pack(len(numbers)))
        out.extend(_I32.pack(n) for n in numbers)
    return b"".join(out)


def encode_subscription(subscription: Subscription) -> bytes:
    version = min(subscription.version, SUBSCRIPTION_MAX_VERSION)
    out = [_I16.pack(version), _I32.pack(len(subscription.topics))]
    out.extend(_string(t) for t in subscription.topics)
    out.append(_bytes(subscription.user_data))
    if version >= 1:
        out.append(_topic_partitions(subscription.owned_partitions))
    if version >= 2:
        out.append(_I32.pack(subscription.generation_id))
    if version >= 3:
        out.append(_string(subscription.rack_id))
    return b"".join(out)


def encode_assignment(assignment: Assignment) -> bytes:
    return (
        _I16.pack(assignment.version)
        + _topic_partitions(assignment.partitions)
        + _bytes(assignment.user_data)
    )
