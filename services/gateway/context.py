"""What every gateway route works with, opened and closed by the app's lifespan.

Nothing here holds per-consumer state: a request can go to any gateway replica.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from pafka.client.cluster import ClusterClient
from pafka.client.groups import GroupClient
from pafka.client.producer import Producer
from pafka.client.shared_fetches import SharedFetches
from pafka.security.acl_authorizer import Authorizer
from pafka.zk.client import ZkClient
from services.gateway.access import BasicLogins
from services.gateway.settings import GatewaySettings


@dataclass
class GatewayContext:
    settings: GatewaySettings
    cluster: ClusterClient
    producer: Producer
    zk: ZkClient | None = None
    # The ACLs deciding REST calls (disabled without PAFKA_GATEWAY_AUTHORIZER), and HTTP
    # Basic logins (None without PAFKA_GATEWAY_BASIC_AUTH).
    authorizer: Authorizer | None = None
    basic: BasicLogins | None = None
    # One per gateway, shared by every route: it remembers where each group's coordinator is.
    groups: GroupClient = field(init=False)
    # The held Fetches of follow reads, shared by the streams waiting on the same leader.
    shared_fetches: SharedFetches = field(init=False)
    # Set when the gateway begins to shut down: answers that would go on (follow reads) end.
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.groups = GroupClient(self.cluster)
        self.shared_fetches = SharedFetches(self.cluster)

    async def close(self) -> None:
        await self.shared_fetches.close()
        await self.producer.close()
        await self.cluster.close()
        if self.zk is not None:
            await self.zk.close()


async def open_context(settings: GatewaySettings) -> GatewayContext:
    zk = None
    if settings.zookeeper:
        zk = ZkClient(
            settings.zookeeper,
            session_timeout_ms=settings.zk_session_timeout_ms,
            name="gateway",
            security=settings.zk_security,
        )
        await zk.start(timeout_s=30)
    cluster = ClusterClient(
        bootstrap=settings.bootstrap_addresses(),
        zk=zk,
        client_id="pafka-gateway",
        network=settings.network,
        security=settings.kafka_security,
    )
    await cluster.start()
    producer = Producer(
        cluster, linger_ms=settings.linger_ms, request_timeout_ms=settings.request_timeout_ms
    )
    authorizer = basic = None
    if zk is not None:
        authorizer = Authorizer(zk, settings.authorizer == "acl", settings.acl, purge=False)
        await authorizer.start()
        basic = BasicLogins.of(zk) if settings.basic_auth else None
    return GatewayContext(settings, cluster, producer, zk, authorizer, basic)


def context(request: Request) -> GatewayContext:
    """The FastAPI dependency routes take: ``ctx: GatewayContext = Depends(context)``."""
    ctx: GatewayContext = request.app.state.ctx
    return ctx


Ctx = Annotated[GatewayContext, Depends(context)]
"""Annotate a route parameter with this to receive the context: ``ctx: Ctx``."""
