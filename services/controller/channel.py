"""Delivery of control requests to brokers: one queue and sender task per broker.

Requests to one broker are sent in order and retried while the broker stays registered; a
broker that answers STALE_CONTROLLER_EPOCH has seen a newer controller, which deposes us.
Requests waiting behind a slow broker fold into newer ones (``request_merging``) rather than
pile up, and are never dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from pafka.control import messages as control
from pafka.errors import StaleControllerEpochError
from services.controller.request_merging import enqueue

log = logging.getLogger(__name__)

Message = control.LeaderAndIsr | control.UpdateMetadata | control.StopReplica
PATHS: dict[type, str] = {
    control.LeaderAndIsr: control.LEADER_AND_ISR,
    control.UpdateMetadata: control.UPDATE_METADATA,
    control.StopReplica: control.STOP_REPLICA,
}
RETRY_DELAY_S = 0.2


class BrokerChannel:
    def __init__(
        self,
        broker_id: int,
        url: str,
        client: httpx.AsyncClient,
        on_fenced: Callable[[], Awaitable[None]],
    ) -> None:
        self.broker_id = broker_id
        self.url = url.rstrip("/")
        self._client = client
        self._pending: list[Message] = []
        self._ready = asyncio.Event()
        self._on_fenced = on_fenced
        self._task = asyncio.create_task(self._run())

    @property
    def queued(self) -> int:
        return len(self._pending)

    def send(self, message: Message) -> None:
        enqueue(self._pending, message)
        self._ready.set()

    async def close(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            if not self._pending:
                self._ready.clear()
                await self._ready.wait()
                continue
            await self._deliver(self._pending.pop(0))

    async def _deliver(self, message: Message) -> None:
        body: dict[str, Any] = control.encode(message)
        path = PATHS[type(message)]
        while True:
            try:
                response = await self._client.post(self.url + path, json=body)
            except httpx.HTTPError as exc:
                log.info("broker %d unreachable (%s); retrying", self.broker_id, exc)
                await asyncio.sleep(RETRY_DELAY_S)
                continue
            if response.status_code == 200:
                return
            if response.json().get("error_code") == StaleControllerEpochError.code:
                log.warning("broker %d has seen a newer controller", self.broker_id)
                await self._on_fenced()
                return
            log.error(
                "broker %d refused %s: %s %s",
                self.broker_id,
                type(message).__name__,
                response.status_code,
                response.text[:200],
            )
            return
