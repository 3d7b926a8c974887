"""Where each followed partition stands in its fetcher, and what an error from the leader does.

An error concerns one partition only: it is held back for ``replica.fetch.backoff.ms`` and then
finds its common point with the leader again (OffsetForLeaderEpoch), while every other
partition keeps fetching. A new LeaderAndIsr for the partition (``FetchStates.add``) ends its
back-off at once: the usual cause of an epoch error is that the follower or the leader had not
yet heard of the new leader epoch. Pure bookkeeping; time comes in as arguments.
"""

from __future__ import annotations

import enum
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

    def due(self, now_s: float) -> bool:
        return self.delayed_until_s <= now_s


def after_error(error_code: int, now_s: float, backoff_s: float) -> FetchState:
    """The state of a partition whose fetch (or epoch lookup) the leader answered with an
    error: an offset out of range is resolved by truncating at once; anything else (a fenced
    or unknown leader epoch, a leader that does not lead it yet or any more, a storage error)
    waits out the back-off first."""
    if error_code == OffsetOutOfRangeError.code:
        return FetchState(Next.TRUNCATE, 0.0)
    return FetchState(Next.TRUNCATE, now_s + backoff_s)


@dataclass
class FetchStates:
    """The partitions one fetcher follows, by state; the ones still to truncate (or held back)
    are kept apart, so an idle fetcher's loop costs nothing per fetching partition."""

    states: dict[TopicPartition, FetchState] = field(default_factory=dict)
    truncating: set[TopicPartition] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.states)

    def __contains__(self, key: object) -> bool:
        return key in self.states

    def add(self, key: TopicPartition) -> None:
        """A (new) leader epoch for the partition: find the common point with the leader."""
        self._set(key, FetchState())

    def remove(self, key: TopicPartition) -> None:
        self.states.pop(key, None)
        self.truncating.discard(key)

    def ready(self, key: TopicPartition) -> None:
        """Truncated to the common point: fetch next."""
        if key in self.states:
            self._set(key, FetchState(Next.FETCH))

    def failed(self, key: TopicPartition, error_code: int, now_s: float, backoff_s: float) -> None:
        if key in self.states:
            self._set(key, after_error(error_code, now_s, backoff_s))

    def diverged(self, key: TopicPartition) -> None:
        """The leader's records did not fit this log: find the common point again, now."""
        if key in self.states:
            self._set(key, FetchState(Next.TRUNCATE))

    def fetching(self, key: TopicPartition) -> bool:
        return key in self.states and key not in self.truncating

    def due_truncations(self, now_s: float) -> list[TopicPartition]:
        return sorted(k for k in self.truncating if self.states[k].due(now_s))

    def next_due_s(self) -> float | None:
        """When the earliest held-back partition may go again; None if none is held back."""
        delays = [d for k in self.truncating if (d := self.states[k].delayed_until_s) > 0]
        return min(delays) if delays else None

    def _set(self, key: TopicPartition, state: FetchState) -> None:
        self.states[key] = state
        if state.next is Next.TRUNCATE:
            self.truncating.add(key)
        else:
            self.truncating.discard(key)
