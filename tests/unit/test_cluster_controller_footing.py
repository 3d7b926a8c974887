"""The controller's reactions to ZooKeeper session events: every pair of the table walked."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.cluster.controller_footing import (
    ON_SESSION,
    Action,
    Role,
    Session,
    after_verify,
    on_session,
    still_holds,
)


def test_the_table_covers_every_role_and_event() -> None:
    assert set(ON_SESSION) == set(itertools.product(Role, Session))


@pytest.mark.parametrize(("role", "event"), list(itertools.product(Role, Session)))
def test_no_event_leaves_a_controller_acting_without_zookeeper(role: Role, event: Session) -> None:
    step = on_session(role, event)
    if event is not Session.CONNECTED:
        # Cut off or expired: never active afterwards.
        assert step.role is not Role.ACTIVE
    if event is Session.LOST:
        assert step.role is Role.STANDBY
        # Someone holding a term gives it up; a standby has nothing to give up.
        assert step.action is (Action.NONE if role is Role.STANDBY else Action.RESIGN)


def test_an_active_controller_pauses_on_suspension() -> None:
    assert on_session(Role.ACTIVE, Session.SUSPENDED).role is Role.PAUSED
    assert on_session(Role.ACTIVE, Session.SUSPENDED).action is Action.PAUSE


def test_a_paused_controller_verifies_when_reconnected_and_stays_paused_meanwhile() -> None:
    step = on_session(Role.PAUSED, Session.CONNECTED)
    assert (step.role, step.action) == (Role.PAUSED, Action.VERIFY)


def test_a_standby_tries_to_elect_when_connected() -> None:
    assert on_session(Role.STANDBY, Session.CONNECTED).action is Action.ELECT


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("holds", [True, False])
def test_after_verify(role: Role, holds: bool) -> None:
    step = after_verify(role, holds)
    if role is not Role.PAUSED:
        assert (step.role, step.action) == (role, Action.NONE)
    elif holds:
        assert (step.role, step.action) == (Role.ACTIVE, Action.RESUME)
    else:
        assert (step.role, step.action) == (Role.STANDBY, Action.RESIGN)


def test_still_holds_only_with_our_ephemeral_and_our_epoch_version() -> None:
    assert still_holds(
        controller_owner_session=7, my_session=7, epoch_zk_version=3, my_epoch_zk_version=3
    )
    # Another session's /controller: a new controller was elected.
    assert not still_holds(
        controller_owner_session=8, my_session=7, epoch_zk_version=3, my_epoch_zk_version=3
    )
    # /controller gone (deleted by an operator, say).
    assert not still_holds(
        controller_owner_session=None, my_session=7, epoch_zk_version=3, my_epoch_zk_version=3
    )
    # The epoch moved on even if /controller looks like ours.
    assert not still_holds(
        controller_owner_session=7, my_session=7, epoch_zk_version=4, my_epoch_zk_version=3
    )


@given(
    st.one_of(st.none(), st.integers(0, 5)),
    st.one_of(st.none(), st.integers(0, 5)),
    st.one_of(st.none(), st.integers(0, 5)),
    st.integers(0, 5),
)
def test_still_holds_needs_every_condition(
    owner: int | None, mine: int | None, version: int | None, my_version: int
) -> None:
    held = still_holds(
        controller_owner_session=owner,
        my_session=mine,
        epoch_zk_version=version,
        my_epoch_zk_version=my_version,
    )
    assert held == (owner is not None and owner == mine and version == my_version)
