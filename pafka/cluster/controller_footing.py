"""What a controller does when its ZooKeeper session changes (pure): a transition table.

A controller acts only while it stands on ZooKeeper. Kafka 2.x's controller resigns when its
session expires; pafka also stops at once when the connection is merely lost (kazoo's
``SUSPENDED``): the session may already be gone on the server and another controller elected,
and a controller that cannot read ZooKeeper cannot know. So an active controller that loses its
connection is ``PAUSED``: it reports itself inactive, sends nothing and processes no event.
When the connection comes back with the session intact it checks that it still holds
``/controller`` under its epoch and either resumes (a full re-activation, as on election: it
may have missed any number of watches) or resigns.

::

    STANDBY --CONNECTED--> STANDBY (elect)
    ACTIVE  --SUSPENDED--> PAUSED  (pause)        ACTIVE --LOST--> STANDBY (resign)
    PAUSED  --CONNECTED--> PAUSED  (verify)       PAUSED --LOST--> STANDBY (resign)
    PAUSED  --verified---> ACTIVE  (resume)       PAUSED --deposed--> STANDBY (resign)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Role(enum.Enum):
    STANDBY = "standby"
    ACTIVE = "active"
    # Elected, epoch kept, but cut off from ZooKeeper: acts on nothing until verified.
    PAUSED = "paused"


class Session(enum.Enum):
    """The ZooKeeper session events a controller hears (kazoo's states)."""

    CONNECTED = "connected"
    SUSPENDED = "suspended"
    LOST = "lost"


class Action(enum.Enum):
    NONE = "none"
    ELECT = "elect"
    PAUSE = "pause"
    VERIFY = "verify"
    RESUME = "resume"
    RESIGN = "resign"


@dataclass(frozen=True)
class Step:
    role: Role
    action: Action


ON_SESSION: dict[tuple[Role, Session], Step] = {
    (Role.STANDBY, Session.CONNECTED): Step(Role.STANDBY, Action.ELECT),
    (Role.STANDBY, Session.SUSPENDED): Step(Role.STANDBY, Action.NONE),
    (Role.STANDBY, Session.LOST): Step(Role.STANDBY, Action.NONE),
    # kazoo reports CONNECTED only after SUSPENDED or LOST, both of which left ACTIVE.
    (Role.ACTIVE, Session.CONNECTED): Step(Role.ACTIVE, Action.NONE),
    (Role.ACTIVE, Session.SUSPENDED): Step(Role.PAUSED, Action.PAUSE),
    (Role.ACTIVE, Session.LOST): Step(Role.STANDBY, Action.RESIGN),
    # Still paused while the check runs: acting before it would be acting blind.
    (Role.PAUSED, Session.CONNECTED): Step(Role.PAUSED, Action.VERIFY),
    (Role.PAUSED, Session.SUSPENDED): Step(Role.PAUSED, Action.NONE),
    (Role.PAUSED, Session.LOST): Step(Role.STANDBY, Action.RESIGN),
}


def on_session(role: Role, event: Session) -> Step:
    """The role after ``event`` and what to do about it."""
    return ON_SESSION[(role, event)]


def after_verify(role: Role, still_holds: bool) -> Step:
    """The outcome of a check started by :data:`Action.VERIFY`. Only a controller still paused
    acts on it: a session lost meanwhile already resigned, a second suspension re-verifies."""
    if role is not Role.PAUSED:
        return Step(role, Action.NONE)
    if still_holds:
        return Step(Role.ACTIVE, Action.RESUME)
    return Step(Role.STANDBY, Action.RESIGN)


def still_holds(
    *,
    controller_owner_session: int | None,
    my_session: int | None,
    epoch_zk_version: int | None,
    my_epoch_zk_version: int,
) -> bool:
    """Whether this controller still holds its term: ``/controller`` exists and is our
    session's ephemeral, and ``/controller_epoch`` is at the version our election wrote (any
    later election bumps it). None for a node that does not exist."""
    return (
        controller_owner_session is not None
        and my_session is not None
        and controller_owner_session == my_session
        and epoch_zk_version == my_epoch_zk_version
    )
