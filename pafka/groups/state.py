"""The consumer-group state machine as a transition table (Kafka's ``GroupState``).

Empty ──join──► PreparingRebalance ──all joined──► CompletingRebalance ──leader synced──► Stable
  ▲                   ▲  │                                 │                            │
  └── last member ────┘  └──────── member joins, leaves, times out, metadata changes ◄──┘
      left                                                 (back to PreparingRebalance)

Dead is terminal: the group was deleted, or this broker stopped coordinating it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from pafka.cluster.states import transition


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


G = GroupState

GROUP_TRANSITIONS: Mapping[GroupState, frozenset[GroupState]] = {
    # Waiting for every known member to (re)join; new members may join too.
    G.PREPARING_REBALANCE: frozenset({G.EMPTY, G.STABLE, G.COMPLETING_REBALANCE}),
    # Joins answered; waiting for the leader's assignment.
    G.COMPLETING_REBALANCE: frozenset({G.PREPARING_REBALANCE}),
    # Assignment handed out; members heartbeat.
    G.STABLE: frozenset({G.COMPLETING_REBALANCE}),
    # No members (committed offsets may remain).
    G.EMPTY: frozenset({G.PREPARING_REBALANCE}),
    # Deleted or unloaded.
    G.DEAD: frozenset(GroupState),
}
"""Target state -> the states it may be entered from."""


def group_transition(current: GroupState, target: GroupState, group: str) -> GroupState:
    """``target`` if a group may move there from ``current``, else IllegalStateTransitionError."""
    return transition(GROUP_TRANSITIONS, current, target, f"group {group!r}")
