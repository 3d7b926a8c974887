"""A connection of a caller's own (``ClusterClient.exclusive``) against real brokers: one given
back while the broker still holds a request on it (the caller stopped waiting on a long-poll
Fetch) is not handed to the next caller, who would wait behind that answer."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from pafka.client.cluster import ClusterClient
from pafka.client.fetcher import FETCH_VERSION, fetch_request
from pafka.client.isolation import IsolationLevel
from pafka.protocol.versions import ApiKey

HELD_MS = 20_000
ANSWER_WITHIN_S = 5.0


def test_a_connection_given_back_while_a_fetch_is_held_is_not_reused(cluster: Any) -> None:
    topic = f"exclusive-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    bootstrap = [("127.0.0.1", int(a.rsplit(":", 1)[1])) for a in cluster.bootstrap.split(",")]
    asyncio.run(_scenario(bootstrap, topic))


async def _scenario(bootstrap: list[tuple[str, int]], topic: str) -> None:
    client = ClusterClient(bootstrap=bootstrap, client_id="exclusive-test")
    try:
        leader = (await client.topic(topic, refresh=True)).partitions[0]
        held = fetch_request(topic, 0, 0, leader, 1024, HELD_MS, IsolationLevel.READ_UNCOMMITTED)
        async with client.exclusive(leader.leader) as first:
            waiting = asyncio.ensure_future(
                first.call(ApiKey.FETCH, FETCH_VERSION, held, timeout_s=HELD_MS / 1000 + 5)
            )
            await asyncio.sleep(0.3)  # sent, and held by the broker: the partition is empty
            assert not waiting.done()
            waiting.cancel()
            await asyncio.gather(waiting, return_exceptions=True)
            assert not first.idle
        now = fetch_request(topic, 0, 0, leader, 1024, 0, IsolationLevel.READ_UNCOMMITTED)
        async with client.exclusive(leader.leader) as second:
            assert second is not first
            async with asyncio.timeout(ANSWER_WITHIN_S):
                await second.call(ApiKey.FETCH, FETCH_VERSION, now)
            assert second.idle
    finally:
        await client.close()
