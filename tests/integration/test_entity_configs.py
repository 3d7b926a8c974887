"""The broker's view of user and client entity configs against a real ZooKeeper: loaded at
start, kept current by change notifications (Kafka's versions 1 and 2, written by Kafka's tools
or pafka's), malformed nodes skipped, old notifications purged."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable

from kazoo.client import KazooClient

from pafka.admin.client_quotas import alter_quotas
from pafka.zk.client import ZkClient
from services.broker.entity_configs import EntityConfigView


def _config(config: dict[str, str]) -> bytes:
    return json.dumps({"version": 1, "config": config}).encode()


def _notify(zk: KazooClient, payload: dict[str, object] | bytes) -> None:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    zk.create("/config/changes/config_change_", data, sequence=True, makepath=True)


async def _eventually(check: Callable[[], bool], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "not seen in time"
        await asyncio.sleep(0.05)


def test_entity_configs_loaded_and_followed(zk_connect: str) -> None:
    admin = KazooClient(hosts=zk_connect)
    admin.start(timeout=10)
    # Before the broker starts: a user, a user's client (under an empty parent, as Kafka's
    # makepath leaves it), a client, a malformed node, and an old notification.
    admin.create("/config/users/alice", _config({"producer_byte_rate": "100"}), makepath=True)
    admin.create(
        "/config/users/bob/clients/c%2F1", _config({"consumer_byte_rate": "5"}), makepath=True
    )
    admin.create("/config/clients/<default>", _config({"request_percentage": "50"}), makepath=True)
    admin.create("/config/clients/broken", b"{not json", makepath=True)
    _notify(admin, {"version": 2, "entity_path": "users/alice"})

    async def scenario() -> None:
        zk = ZkClient(zk_connect, session_timeout_ms=6000, name="test")
        await zk.start()
        view = EntityConfigView(zk, expiration_ms=0)
        heard: list[str] = []

        async def subscriber(entity_path: str) -> None:
            heard.append(entity_path)

        view.subscribe(subscriber)
        try:
            await view.start()
            first = view.snapshot()
            assert dict(first) == {
                "users/alice": {"producer_byte_rate": "100"},
                "users/bob/clients/c%2F1": {"consumer_byte_rate": "5"},
                "clients/<default>": {"request_percentage": "50"},
            }
            assert view.entities()[("bob", "c/1")] == {"consumer_byte_rate": "5"}
            # A version 2 notification from pafka's own admin write (a user's other keys kept).
            await asyncio.to_thread(
                alter_quotas, admin, ("alice", None), [("consumer_byte_rate", 7.0)], False
            )
            await _eventually(lambda: "users/alice" in heard)
            assert view.snapshot()["users/alice"] == {
                "producer_byte_rate": "100",
                "consumer_byte_rate": "7",
            }
            assert first["users/alice"] == {"producer_byte_rate": "100"}  # snapshots stay
            # A version 1 notification (Kafka before 2.0), after malformed ones.
            admin.set("/config/clients/<default>", _config({"request_percentage": "20"}))
            _notify(admin, b"{garbage")
            _notify(admin, {"version": 2, "entity_path": "clients/broken"})
            _notify(admin, {"version": 2, "entity_path": "topics/t"})
            _notify(admin, {"version": 1, "entity_type": "clients", "entity_name": "<default>"})
            await _eventually(lambda: "clients/<default>" in heard)
            assert view.snapshot()["clients/<default>"] == {"request_percentage": "20"}
            assert "clients/broken" not in view.snapshot()
            # A deleted entity leaves the view.
            admin.delete("/config/users/bob/clients/c%2F1")
            _notify(admin, {"version": 2, "entity_path": "users/bob/clients/c%2F1"})
            await _eventually(lambda: "users/bob/clients/c%2F1" not in view.snapshot())
            # With an expiration of 0 every notification seen is purged.
            await _eventually(lambda: not admin.get_children("/config/changes"))
        finally:
            await zk.close()

    try:
        asyncio.run(scenario())
    finally:
        admin.stop()
        admin.close()
