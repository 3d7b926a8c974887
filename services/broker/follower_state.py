"""Where each followed partition stands in its fetcher, and what an error from the leader does.

An error concerns one partition only: it is held back for ``replica.fetch.backoff.ms`` and then
finds its common point with the leader again (OffsetForLeaderEpoch), while every other
partition keeps fetching. A new LeaderAndIsr for the partition (``FetchStates.add``) ends its
back-off at once: the usual cause of an epoch error is that the follower or the leader had not
yet heard of the new leader epoch. Pure bookkeeping; time comes in as arguments.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field

from pafka.errors import OffsetOutOfRangeError

TopicPartition = tuple[str, int]


class Next(enum.Enum):
    """What a partition's fetcher does next."""

    FETCH = "fetch"
    TRUNCATE = "truncate"


@dataclass(slots=True)
class FetchState:
    next: Next = Next.TRUNCATE
    delayed_until_s: float = 0.0
    errors: int = 0

    def due(self, now_s: float) -> bool:
        return self.delayed_until_s <= now_s


def after_error(error_code: int, now_s: float, backoff_s: float) -> FetchState:
    """The state of a partition whose fetch (or epoch lookup) the leader answered with an
    error: an offset out of range is resolved by truncating at once; anything else (a fenced
    or unknown leader epoch, a leader that does not lead it yet or any more, a storage error)
    waits out the back-off first."""
    if error_code == OffsetOutOfRangeError.code:
        return FetchState(Next.TRUNCATE, 0.0)
    return FetchState(Next.TRUNCATE, now_s + backoff_s, 1)


@dataclass
class FetchStates:
    """The partitions one fetcher follows, by state."""

    states: dict[TopicPartition, FetchState] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.states)

    def __contains__(self, key: object) -> bool:
        return key in self.states

    def add(self, key: TopicPartition) -> None:
        """A (new) leader epoch for the partition: find the common point with the leader."""
        self.states[key] = FetchState()

    def remove(self, key: TopicPartition) -> None:
        self.states.pop(key, None)

    def ready(self, key: TopicPartition) -> None:
        """Truncated to the common point (or fetched without error): fetch next."""
        state = self.states.get(key)
        if state is not None:
            state.next, state.delayed_until_s, state.errors = Next.FETCH, 0.0, 0

    def failed(self, key: TopicPartition, error_code: int, now_s: float, backoff_s: float) -> None:
        if key in self.states:
            self.states[key] = after_error(error_code, now_s, backoff_s)

    def diverged(self, key: TopicPartition) -> None:
        """The leader's records did not fit this log: find the common point again, now."""
        if key in self.states:
            self.states[key] = FetchState(Next.TRUNCATE)

    def fetching(self, key: TopicPartition) -> bool:
        state = self.states.get(key)
        return state is not None and state.next is Next.FETCH

    def due(self, wanted: Next, now_s: float) -> Iterator[TopicPartition]:
        for key, state in self.states.items():
            if state.next is wanted and state.delayed_until_s <= now_s:
                yield key

    def next_due_s(self) -> float | None:
        """When the earliest held-back partition may go again; None if none is held back."""
        delays = [s.delayed_until_s for s in self.states.values() if s.delayed_until_s > 0]
        return min(delays) if delays else None

    def held_back(self, now_s: float) -> int:
        return sum(1 for s in self.states.values() if s.delayed_until_s > now_s)
