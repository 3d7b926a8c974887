"""What every gateway route works with, opened and closed by the app's lifespan.

Nothing here holds per-consumer state: a request can go to any gateway replica.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from pafka.client.cluster import ClusterClient
from pafka.client.groups import GroupClient
from pafka.client.producer import Producer
from pafka.zk.client import ZkClient
from services.gateway.settings import GatewaySettings


@dataclass
class GatewayContext:
    settings: GatewaySettings
    cluster: ClusterClient
    producer: Producer
    zk: ZkClient | None = None
    # One per gateway, shared by every route: it remembers where each group's coordinator is.
    groups: GroupClient = field(init=False)

    def __post_init__(self) -> None:
        self.groups = GroupClient(self.cluster)

    async def close(self) -> None:
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
    return GatewayContext(settings, cluster, producer, zk)


def context(request: Request) -> GatewayContext:
    """The FastAPI dependency routes take: ``ctx: GatewayContext = Depends(context)``."""
    ctx: GatewayContext = request.app.state.ctx
    return ctx


Ctx = Annotated[GatewayContext, Depends(context)]
"""Annotate a route parameter with this to receive the context: ``ctx: Ctx``."""
