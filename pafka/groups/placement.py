"""Which broker should coordinate a group that has no live coordinator: a pure choice.

Rendezvous (highest-random-weight) hashing over the live brokers: every broker computes the
same answer from the same broker list without talking to the others, and when a broker dies
only the groups it coordinated move. A live coordinator keeps its groups when brokers join;
this choice applies only to groups without one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def _weight(group: str, broker_id: int) -> bytes:
    return hashlib.blake2b(f"{broker_id}\x00{group}".encode(), digest_size=8).digest()


def designated_coordinator(group: str, broker_ids: Iterable[int]) -> int | None:
    """The broker that should take ``group`` over, or None when no broker is alive."""
    return max(broker_ids, key=lambda b: (_weight(group, b), b), default=None)
