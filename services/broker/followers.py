"""What a leader knows of its followers: how far each has fetched and when it last caught up.

Pure bookkeeping: the high watermark is the smallest log end offset in the ISR (the leader's
own included). A follower is in sync while it is caught up, Kafka's ``Replica.isCaughtUp``: its
known log end equals the leader's, or it last was at the leader's end at most
``replica.lag.time.max.ms`` ago. The first clause matters with fetch sessions: an idle
follower's partitions are not read (nothing changed), so its fetch time is not refreshed; it
stays in sync because it is at the leader's end. An append ends that, so the append stamps
every follower that was at the old end as caught up until now. A follower's log end offset is
only known once it has fetched from this leader; until then the high watermark does not move
past it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

UNKNOWN = -1


@dataclass
class FollowerState:
    log_end_offset: int = UNKNOWN
    last_caught_up_ms: int = 0
    # The leader's log end offset when this follower last fetched: reaching it means the
    # follower had caught up with everything the leader had then.
    leader_end_at_last_fetch: int = 0


@dataclass
class Followers:
    states: dict[int, FollowerState] = field(default_factory=dict)

    def reset(self, followers: Iterable[int], now_ms: int) -> None:
        """A new leadership term: positions unknown, everyone gets a full lag period of grace."""
        self.states = {f: FollowerState(UNKNOWN, now_ms, 0) for f in followers}

    def on_fetch(self, follower: int, fetch_offset: int, leader_end: int, now_ms: int) -> None:
        state = self.states.setdefault(follower, FollowerState())
        if fetch_offset >= leader_end or fetch_offset >= state.leader_end_at_last_fetch:
            state.last_caught_up_ms = now_ms
        state.log_end_offset = fetch_offset
        state.leader_end_at_last_fetch = leader_end

    def on_leader_append(self, leader_end_before: int, now_ms: int) -> None:
        """The leader's log grows past ``leader_end_before``: followers at that end were
        caught up until this moment."""
        for state in self.states.values():
            if state.log_end_offset >= leader_end_before:
                state.last_caught_up_ms = max(state.last_caught_up_ms, now_ms)

    def high_watermark(self, isr: Iterable[int], leader: int, leader_end: int) -> int | None:
        """min log end offset over the ISR; None while an in-sync follower's is unknown."""
        ends = [leader_end]
        for member in isr:
            if member == leader:
                continue
            state = self.states.get(member)
            if state is None or state.log_end_offset == UNKNOWN:
                return None
            ends.append(state.log_end_offset)
        return min(ends)

    def lagging(
        self, isr: Iterable[int], leader: int, leader_end: int, now_ms: int, lag_max_ms: int
    ) -> set[int]:
        """The ISR members that are not caught up (see the module docstring)."""
        lagging = set()
        for member in isr:
            if member == leader:
                continue
            state = self.states.get(member, FollowerState())
            at_end = state.log_end_offset == leader_end
            if not at_end and now_ms - state.last_caught_up_ms > lag_max_ms:
                lagging.add(member)
        return lagging

    def caught_up(self, follower: int, high_watermark: int) -> bool:
        """May this out-of-sync follower rejoin the ISR? (Its log reaches the high watermark.)"""
        state = self.states.get(follower)
        return state is not None and state.log_end_offset >= high_watermark
