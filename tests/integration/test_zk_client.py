"""The kazoo/asyncio bridge against a real ZooKeeper: watches, session expiry, registrations."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from kazoo.client import KazooClient

from pafka.errors import BrokerIdTakenError
from pafka.zk.client import SessionEvent, ZkClient
from pafka.zk.znodes import BROKER_IDS, BrokerInfo, ClusterIdZNode


def expire_session(zk_connect: str, client: ZkClient) -> None:
    """Expire a live session the way ZooKeeper's own tests do: a second client attaches to the
    same session and closes it."""
    session_id, password = client.kazoo.client_id
    twin = KazooClient(hosts=zk_connect, client_id=(session_id, password))
    twin.start(timeout=10)
    twin.stop()
    twin.close()


async def _eventually(predicate, timeout_s: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


def test_watches_run_on_the_loop_and_sessions_reregister(zk_connect: str) -> None:
    async def scenario() -> None:
        client = ZkClient(zk_connect, session_timeout_ms=4000, name="test")
        events: list[SessionEvent] = []
        seen: list[list[str]] = []
        loop = asyncio.get_running_loop()

        async def on_session(event: SessionEvent) -> None:
            events.append(event)

        async def on_children(children: list[str]) -> None:
            assert asyncio.get_running_loop() is loop
            seen.append(children)

        client.add_session_listener(on_session)
        await client.start(timeout_s=10)
        assert await client.get(ClusterIdZNode.path()) is not None
        client.watch_children(BROKER_IDS, on_children)
        info = BrokerInfo(7, "127.0.0.1", 9999, "http://127.0.0.1:1")
        await client.register_ephemeral(BrokerInfo.path(7), info.encode())
        await _eventually(lambda: ["7"] in seen)

        old_session = client.session_id
        expire_session(zk_connect, client)
        await _eventually(lambda: SessionEvent.LOST in events)
        await _eventually(lambda: client.session_id not in (None, old_session))
        # Re-created by the new session after expiry (the watch may coalesce delete+create):
        owners: list[int] = []

        async def owner_is_new_session() -> None:
            got = await client.get(BrokerInfo.path(7))
            owners.append(got[1].ephemeralOwner if got else 0)

        deadline = time.monotonic() + 20
        while not owners or owners[-1] != client.session_id:
            assert time.monotonic() < deadline, "the ephemeral was not re-registered"
            await owner_is_new_session()
            await asyncio.sleep(0.05)
        await _eventually(lambda: seen[-1] == ["7"])
        await client.close()

    asyncio.run(scenario())


def test_taken_id_fails_fast(zk_connect: str) -> None:
    async def scenario() -> None:
        first = ZkClient(zk_connect, session_timeout_ms=4000, name="first")
        second = ZkClient(zk_connect, session_timeout_ms=4000, name="second")
        await first.start()
        await second.start()
        await first.register_ephemeral(BrokerInfo.path(3), BrokerInfo(3, "h1", 1, "").encode())
        started = time.monotonic()
        with pytest.raises(BrokerIdTakenError, match="already registered"):
            await second.register_ephemeral(BrokerInfo.path(3), BrokerInfo(3, "h2", 2, "").encode())
        assert time.monotonic() - started < 2
        await first.close()
        await second.close()

    asyncio.run(scenario())


def test_a_watch_applies_changes_one_at_a_time_the_latest_last(zk_connect: str) -> None:
    """A slow callback for an older state must not finish after a later change's callback:
    the calls of one watch never overlap, and the last one applied sees the latest children."""

    async def scenario() -> None:
        client = ZkClient(zk_connect, session_timeout_ms=4000, name="test")
        await client.start(timeout_s=10)
        root = f"/watch-order-{uuid.uuid4().hex}"
        await client.run(client.kazoo.ensure_path, root)
        started: list[list[str]] = []
        applied: list[list[str]] = []
        running = 0
        most_at_once = 0

        async def on_children(children: list[str]) -> None:
            nonlocal running, most_at_once
            running += 1
            most_at_once = max(most_at_once, running)
            started.append(children)
            # The first (oldest) state is read slowly, as a ZooKeeper read under load would be.
            await asyncio.sleep(0.5 if len(started) == 1 else 0)
            applied.append(children)
            running -= 1

        client.watch_children(root, on_children)
        await _eventually(lambda: started == [[]])
        await client.run(client.kazoo.create, f"{root}/a")
        await client.run(client.kazoo.create, f"{root}/b")
        await _eventually(lambda: bool(applied) and applied[-1] == ["a", "b"])
        await asyncio.sleep(0.7)  # any overtaken callback would have finished by now
        assert applied[0] == []
        assert applied[-1] == ["a", "b"]
        assert most_at_once == 1
        await client.run(client.kazoo.delete, root, -1, True)
        await client.close()

    asyncio.run(scenario())


def test_a_failed_watch_callback_does_not_stop_later_changes(zk_connect: str) -> None:
    async def scenario() -> None:
        client = ZkClient(zk_connect, session_timeout_ms=4000, name="test")
        await client.start(timeout_s=10)
        path = f"/watch-failure-{uuid.uuid4().hex}"
        seen: list[bytes | None] = []

        async def on_data(data: bytes | None) -> None:
            seen.append(data)
            if data == b"bad":
                raise ValueError("a callback that fails on one state")

        await client.run(client.kazoo.create, path, b"bad")
        client.watch_data(path, on_data)
        await _eventually(lambda: seen == [b"bad"])
        await client.run(client.kazoo.set, path, b"good")
        await _eventually(lambda: seen[-1:] == [b"good"])
        await client.run(client.kazoo.delete, path)
        await _eventually(lambda: seen[-1:] == [None])
        await client.close()

    asyncio.run(scenario())
