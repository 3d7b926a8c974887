"""Long-poll wake-ups: a waiter is woken by any notifier it waits on, at the event loop's next
turn, or gives up at its timeout; either way it is left registered nowhere, and waiters on
the same partition never disturb each other (one timing out or being cancelled wakes or
cancels no other)."""

from __future__ import annotations

import asyncio

import pytest

from services.broker.notify import Notifier, wait_any


def test_a_notify_wakes_every_waiter_at_the_next_turn() -> None:
    async def scenario() -> None:
        first, second = Notifier("a"), Notifier("b")
        waiters = [
            asyncio.ensure_future(wait_any([first], 30)),
            asyncio.ensure_future(wait_any([first, second], 30)),
        ]
        await asyncio.sleep(0)  # both waiting
        assert first.waiter_count == 2 and second.waiter_count == 1
        first.notify()
        await asyncio.sleep(0)
        assert all(w.done() for w in waiters), "woken one turn after the notify"
        assert [w.result() for w in waiters] == [True, True]
        assert first.waiter_count == 0 and second.waiter_count == 0

    asyncio.run(scenario())


def test_a_timeout_returns_false_and_leaves_nothing_registered() -> None:
    async def scenario() -> None:
        notifier = Notifier()
        patient = asyncio.ensure_future(wait_any([notifier], 30))
        assert await wait_any([notifier], 0.01) is False
        assert notifier.waiter_count == 1, "only the patient waiter is left"
        notifier.notify()
        assert await asyncio.wait_for(patient, 5) is True

    asyncio.run(scenario())


def test_a_cancelled_waiter_disturbs_no_other() -> None:
    async def scenario() -> None:
        notifier = Notifier()
        cancelled = asyncio.ensure_future(wait_any([notifier], 30))
        other = asyncio.ensure_future(wait_any([notifier], 30))
        await asyncio.sleep(0)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert not other.done()
        assert notifier.waiter_count == 1
        notifier.notify()
        assert await asyncio.wait_for(other, 5) is True

    asyncio.run(scenario())


def test_nothing_to_wait_on_or_no_time_left_returns_at_once() -> None:
    async def scenario() -> None:
        notifier = Notifier()
        assert await wait_any([], 30) is False
        assert await wait_any([notifier], 0) is False
        assert notifier.waiter_count == 0

    asyncio.run(scenario())


def test_a_notify_before_anyone_waits_is_not_kept() -> None:
    async def scenario() -> None:
        notifier = Notifier()
        notifier.notify()
        # A fetch reads the log before it waits: a change before that is read, not waited for.
        assert await wait_any([notifier], 0.01) is False

    asyncio.run(scenario())
