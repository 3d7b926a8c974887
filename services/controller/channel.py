"""Delivery of control requests to brokers: one queue and sender task per broker.

Requests to one broker are sent in order and retried while the broker stays registered; a
broker that answers STALE_CONTROLLER_EPOCH has seen a newer controller, which deposes us.
Requests waiting behind a slow broker fold into newer ones (``request_merging``) rather than
pile up, and are never dropped.

Each request is bounded by ``controller.socket.timeout.ms`` (connect, write and read), so a
broker that stops answering holds up only its own queue; it is retried after Kafka's
exponential reconnect backoff, with one log line when it stops answering and one when it
answers again.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from pafka.control import messages as control
from pafka.errors import StaleControllerEpochError
from pafka.net.deadlines import DEFAULT_DEADLINES, NetworkDeadlines
from pafka.net.sockets import Backoff
from services.controller.request_merging import enqueue

log = logging.getLogger(__name__)

Message = control.LeaderAndIsr | control.UpdateMetadata | control.StopReplica
PATHS: dict[type, str] = {
    control.LeaderAndIsr: control.LEADER_AND_ISR,
    control.UpdateMetadata: control.UPDATE_METADATA,
    control.StopReplica: control.STOP_REPLICA,
}


class BrokerChannel:
    def __init__(
        self,
        broker_id: int,
        url: str,
        client: httpx.AsyncClient,
        on_fenced: Callable[[], Awaitable[None]],
        network: NetworkDeadlines = DEFAULT_DEADLINES,
    ) -> None:
        self.broker_id = broker_id
        self.url = url.rstrip("/")
        self._client = client
        self._pending: list[Message] = []
        self._ready = asyncio.Event()
        self._on_fenced = on_fenced
        self._timeout = httpx.Timeout(network.controller_socket_timeout_ms / 1000)
        self._backoff = Backoff(network.reconnect_backoff_ms, network.reconnect_backoff_max_ms)
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
            if self._backoff.failures:
                await asyncio.sleep(self._backoff.delay_ms(random.random()) / 1000)
            try:
                response = await self._client.post(
                    self.url + path, json=body, timeout=self._timeout
                )
            except httpx.HTTPError as exc:
                if not self._backoff.failures:
                    log.warning("broker %d unreachable (%r); retrying", self.broker_id, exc)
                self._backoff = self._backoff.failed()
                continue
            if self._backoff.failures:
                log.info(
                    "broker %d answers again after %d failed attempts",
                    self.broker_id,
                    self._backoff.failures,
                )
                self._backoff = self._backoff.succeeded()
            if response.status_code == 200:
                return
            if _error_code(response) == StaleControllerEpochError.code:
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


def _error_code(response: httpx.Response) -> int | None:
    """The Kafka error code of a refusal; None when the body is not the broker's JSON (a proxy's
    error page must not end the broker's sender task)."""
    try:
        body = response.json()
    except ValueError:
        return None
    code = body.get("error_code") if isinstance(body, dict) else None
    return code if isinstance(code, int) else None
