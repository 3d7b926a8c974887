"""Which controller event runs next, and which events fold into one another (pure).

The controller's watches fire far faster than it can react when thousands of partitions move:
a single FIFO made a broker failure wait behind every ISR-change notification queued before
it. Here events fall into priority classes, taken strictly in order, FIFO within a class:

- ``URGENT``: an election, a change of ``/brokers/ids``, a controlled shutdown: who leads,
  which decides how long partitions stay offline.
- ``NORMAL``: topic creation, growth, config and deletion, reassignment requests.
- ``BACKGROUND``: ISR-change notifications and preferred-leader elections: metadata
  freshness and balance, which may wait.

An event whose key is already queued folds into the queued one, keeping its place: a later
``/brokers/ids`` list or topic znode supersedes an earlier one, any number of ISR events are one
"read what is pending", periodic preferred checks are one. So the queue holds at most one event
per key (bounded by the number of topics and brokers) and can never overflow, whatever the
rate of watch events. A folded event takes the newer generation: it describes the present.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import Any


class Priority(enum.IntEnum):
    URGENT = 0
    NORMAL = 1
    BACKGROUND = 2


PRIORITY: dict[str, Priority] = {
    "elect": Priority.URGENT,
    "brokers": Priority.URGENT,
    "shutdown": Priority.URGENT,
    "topics": Priority.NORMAL,
    "topic_data": Priority.NORMAL,
    "topic_config": Priority.NORMAL,
    "delete": Priority.NORMAL,
    "reassign": Priority.NORMAL,
    # An operator's request waits for its answer: never folded (keyed by its waiter).
    "elect_leaders": Priority.NORMAL,
    "alter_reassignments": Priority.NORMAL,
    "isr": Priority.BACKGROUND,
    "preferred": Priority.BACKGROUND,
}


@dataclass(frozen=True)
class Event:
    """``payload`` by kind: brokers, topics, delete: the children listed; topic_data,
    topic_config: (topic, data); reassign: the request's data; shutdown: (broker id, tuple of
    waiters to answer); preferred: None (a periodic check) or the requested partitions;
    elect_leaders: (election type, partitions or None, waiter); alter_reassignments:
    (targets, waiter);
    elect, isr: None (the state is read when the event runs)."""

    kind: str
    payload: Any = None
    generation: int = 0


def key(event: Event) -> Hashable:
    """Events with equal keys fold into one."""
    if event.kind in ("topic_data", "topic_config"):
        return (event.kind, event.payload[0])
    if event.kind == "shutdown":
        return (event.kind, event.payload[0])
    if event.kind == "preferred":
        return (event.kind, event.payload is None)
    if event.kind in ("elect_leaders", "alter_reassignments"):
        return (event.kind, id(event.payload[-1]))
    return event.kind


def fold(queued: Event, new: Event) -> Event:
    """The one event standing for ``queued`` followed by ``new`` (equal keys)."""
    if new.kind == "shutdown":
        broker_id, waiters = queued.payload
        return replace(new, payload=(broker_id, waiters + new.payload[1]))
    if new.kind == "preferred" and new.payload is not None:
        # Requests accumulate: each names partitions an operator asked for.
        merged = list(dict.fromkeys([*queued.payload, *new.payload]))
        return replace(new, payload=merged)
    return new


class EventQueue:
    """Pending events by priority class; at most one per key."""

    def __init__(self) -> None:
        self._classes: dict[Priority, OrderedDict[Hashable, Event]] = {
            p: OrderedDict() for p in Priority
        }

    def put(self, event: Event) -> None:
        pending = self._classes[PRIORITY[event.kind]]
        k = key(event)
        queued = pending.get(k)
        pending[k] = event if queued is None else fold(queued, event)

    def pop(self) -> Event | None:
        """The next event to run: the oldest of the most urgent non-empty class."""
        for priority in Priority:
            pending = self._classes[priority]
            if pending:
                return pending.popitem(last=False)[1]
        return None

    def __len__(self) -> int:
        return sum(len(p) for p in self._classes.values())
