"""A REST Proxy v2 consumer instance: its state, the pure changes to it, its znode payload.

An instance is one znode, ``GatewayZNodes.consumer_instance_path(group, name)``, holding::

    {"version": 1, "format": "json" | "binary", "auto_offset_reset": "earliest" | "latest",
     "auto_commit": bool, "topics": [subscribed topic, ...], "assigned": [[topic, p], ...],
     "positions": [[topic, p, next offset], ...], "committed": [[topic, p, offset], ...],
     "member_id": "", "generation": -1,
     "owned": [[topic, p], ...], "rejoin": bool, "created_ms": ..., "last_used_ms": ...,
     "isolation_level": "read_committed" | "read_uncommitted"}

``topics`` (a subscription: the instance is a member of the group, ``member_id`` and
``generation`` its membership, ``owned`` what the group gave it) and ``assigned`` (a manual
assignment) exclude each other. ``positions`` are the next offsets to read; a partition without
one starts at the group's committed offset, else at ``auto_offset_reset``. ``committed`` is
what this instance last committed, so that auto commit skips positions already committed.
``isolation_level`` is Kafka's consumer setting, read_committed unless the instance was created
with read_uncommitted (as Confluent's proxy configures its consumers); a payload written before
it existed reads as read_committed.

Every change is a pure function of the state (the methods of :class:`InstanceState`), so that
:class:`services.gateway.consumer_instance_store.InstanceStore` can apply it again to a fresh
read when another gateway wrote the instance first.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pafka.client.isolation import IsolationLevel
from pafka.errors import RestError
from pafka.groups.consumer_protocol import TopicPartition
from services.gateway.errors import ILLEGAL_STATE
from services.gateway.formats import EmbeddedFormat

VERSION = 1
EARLIEST, LATEST = "earliest", "latest"
NAME_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,200}")
# Subscription, assignment and pattern are exclusive (REST Proxy's code for it).
EXCLUSIVE_SUBSCRIPTION = 40903


def now_ms() -> int:
    return int(time.time() * 1000)


def new_name() -> str:
    return f"rest-consumer-{uuid.uuid4()}"


def check_name(name: str) -> str:
    if not NAME_PATTERN.fullmatch(name) or name in (".", ".."):
        raise RestError(
            42204, "instance names are 1 to 200 letters, digits, '.', '_' or '-' (not . or ..)"
        )
    return name


def _pairs(partitions: Iterable[TopicPartition]) -> list[list[Any]]:
    return [[t, p] for t, p in sorted(partitions)]


def _triples(offsets: Mapping[TopicPartition, int]) -> list[list[Any]]:
    return [[t, p, o] for (t, p), o in sorted(offsets.items())]


@dataclass(frozen=True)
class InstanceState:
    group: str
    name: str
    format: EmbeddedFormat
    auto_offset_reset: str = LATEST
    auto_commit: bool = True
    topics: tuple[str, ...] = ()
    assigned: frozenset[TopicPartition] = frozenset()
    positions: Mapping[TopicPartition, int] = field(default_factory=dict)
    committed: Mapping[TopicPartition, int] = field(default_factory=dict)
    member_id: str = ""
    generation: int = -1
    owned: frozenset[TopicPartition] = frozenset()
    rejoin: bool = False
    created_ms: int = 0
    last_used_ms: int = 0
    isolation: IsolationLevel = IsolationLevel.READ_COMMITTED

    # -- reading the state ---------------------------------------------------------------------

    @property
    def subscribed(self) -> bool:
        return bool(self.topics)

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """What the instance reads: the group's grant when subscribed, else its own choice."""
        return self.owned if self.subscribed else self.assigned

    def needs_join(self) -> bool:
        return self.subscribed and (not self.member_id or self.rejoin)

    def uncommitted(self) -> dict[TopicPartition, int]:
        """Positions not yet committed by this instance."""
        return {tp: o for tp, o in self.positions.items() if self.committed.get(tp) != o}

    def expired(self, now: int, timeout_ms: int) -> bool:
        return now - self.last_used_ms > timeout_ms

    # -- changes (pure) --------------------------------------------------------------------------

    def touched(self, now: int, every_ms: int = 0) -> InstanceState:
        """Marked as used at ``now``; unchanged when it was marked less than ``every_ms`` ago
        (so that a busy instance is not rewritten for every request)."""
        if now - self.last_used_ms < every_ms:
            return self
        return replace(self, last_used_ms=max(now, self.last_used_ms))

    def subscribe(self, topics: Iterable[str]) -> InstanceState:
        if self.assigned:
            raise RestError(
                EXCLUSIVE_SUBSCRIPTION, "the instance has a manual assignment; it cannot subscribe"
            )
        wanted = tuple(sorted(set(topics)))
        if wanted == self.topics:
            return self
        # The member joins again with the new topics (keeping its id) on its next read.
        return replace(self, topics=wanted, rejoin=bool(self.member_id))

    def unsubscribed(self) -> InstanceState:
        return replace(
            self,
            topics=(),
            owned=frozenset(),
            positions={},
            committed={},
            member_id="",
            generation=-1,
            rejoin=False,
        )

    def assign(self, partitions: Iterable[TopicPartition]) -> InstanceState:
        if self.subscribed:
            raise RestError(
                EXCLUSIVE_SUBSCRIPTION, "the instance is subscribed; it cannot assign partitions"
            )
        wanted = frozenset(partitions)
        return replace(
            self,
            assigned=wanted,
            positions={tp: o for tp, o in self.positions.items() if tp in wanted},
            committed={tp: o for tp, o in self.committed.items() if tp in wanted},
        )

    def seek(self, offsets: Mapping[TopicPartition, int]) -> InstanceState:
        unassigned = sorted(set(offsets) - self.assignment)
        if unassigned:
            topic, p = unassigned[0]
            raise RestError(ILLEGAL_STATE, f"partition {topic}-{p} is not assigned to the instance")
        return replace(self, positions={**self.positions, **offsets})

    def joined(
        self, member_id: str, generation: int, owned: frozenset[TopicPartition]
    ) -> InstanceState:
        """After a completed join and sync: positions survive for partitions still owned."""
        kept = owned & self.owned
        return replace(
            self,
            member_id=member_id,
            generation=generation,
            owned=owned,
            positions={tp: o for tp, o in self.positions.items() if tp in kept},
            committed={tp: o for tp, o in self.committed.items() if tp in kept},
            rejoin=False,
        )

    def must_rejoin(self, *, as_new: bool) -> InstanceState:
        """The group rebalanced (rejoin with the same id) or forgot the member (as a new one)."""
        if as_new:
            return replace(self, member_id="", generation=-1, owned=frozenset(), rejoin=False)
        return replace(self, rejoin=True)

    def advanced(
        self, start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]
    ) -> tuple[InstanceState, frozenset[TopicPartition]]:
        """Move positions from ``start`` to ``end``, only where no one moved them meanwhile;
        and the partitions moved (the reader may hand out their records)."""
        moved = {
            tp: o
            for tp, o in end.items()
            if tp in self.assignment and self.positions.get(tp, start.get(tp)) == start.get(tp)
        }
        return replace(self, positions={**self.positions, **moved}), frozenset(moved)

    def marked_committed(self, offsets: Mapping[TopicPartition, int]) -> InstanceState:
        if not offsets:
            return self
        return replace(self, committed={**self.committed, **offsets})

    # -- the znode payload ---------------------------------------------------------------------

    def encode(self) -> bytes:
        payload = {
            "version": VERSION,
            "format": str(self.format),
            "auto_offset_reset": self.auto_offset_reset,
            "auto_commit": self.auto_commit,
            "topics": list(self.topics),
            "assigned": _pairs(self.assigned),
            "positions": _triples(self.positions),
            "committed": _triples(self.committed),
            "member_id": self.member_id,
            "generation": self.generation,
            "owned": _pairs(self.owned),
            "rejoin": self.rejoin,
            "created_ms": self.created_ms,
            "last_used_ms": self.last_used_ms,
            "isolation_level": self.isolation.name.lower(),
        }
        return json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def decode(cls, group: str, name: str, data: bytes) -> InstanceState:
        """Raises ValueError (or KeyError, TypeError) for a payload this version cannot read."""
        p = json.loads(data)
        if not isinstance(p, dict) or p.get("version") != VERSION:
            raise ValueError(f"unknown consumer instance payload {data[:200]!r}")
        return cls(
            group=group,
            name=name,
            format=EmbeddedFormat(p["format"]),
            auto_offset_reset=str(p["auto_offset_reset"]),
            auto_commit=bool(p["auto_commit"]),
            topics=tuple(str(t) for t in p["topics"]),
            assigned=frozenset((str(t), int(n)) for t, n in p["assigned"]),
            positions={(str(t), int(n)): int(o) for t, n, o in p["positions"]},
            committed={(str(t), int(n)): int(o) for t, n, o in p["committed"]},
            member_id=str(p["member_id"]),
            generation=int(p["generation"]),
            owned=frozenset((str(t), int(n)) for t, n in p["owned"]),
            rejoin=bool(p["rejoin"]),
            created_ms=int(p["created_ms"]),
            last_used_ms=int(p["last_used_ms"]),
            isolation=IsolationLevel.parse(str(p.get("isolation_level", "read_committed"))),
        )
