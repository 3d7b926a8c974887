"""Delivery of control requests to brokers: one bounded queue and sender task per broker.

Requests to one broker are sent in order and retried while the broker stays registered; a
broker that answers STALE_CONTROLLER_EPOCH has seen a newer controller, which deposes us.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from pafka.control import messages as control
from pafka.errors import StaleControllerEpochError

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
        max_queued: int,
        on_fenced: Callable[[], Awaitable[None]],
    ) -> None:
        self.broker_id = broker_id
        self.url = url.rstrip("/")
        self._client = client
        self._queue: asyncio.Queue[Message] = asyncio.Queue(max_queued)
        self._on_fenced = on_fenced
        self._task = asyncio.create_task(self._run())

    def send(self, message: Message) -> None:
        if self._queue.full():
            dropped = self._queue.get_nowait()
            log.warning(
                "queue to broker %d full; dropped %s", self.broker_id, type(dropped).__name__
            )
        self._queue.put_nowait(message)

    async def idle(self) -> None:
        await self._queue.join()

    async def close(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            message = await self._queue.get()
            try:
                await self._deliver(message)
            finally:
                self._queue.task_done()

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
