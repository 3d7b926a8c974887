"""Opening the broker's listeners: one server socket per listener, TLS where the listener's
protocol asks, and the endpoints to register (advertised, with the ports actually bound)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace

from pafka.security.listeners import Endpoint, advertise
from pafka.security.tls import ReloadingContext, reload_forever
from services.broker.listener_settings import ListenerSettings
from services.broker.server import KafkaServer

log = logging.getLogger(__name__)


@dataclass
class OpenListeners:
    bound: tuple[Endpoint, ...]
    advertised: tuple[Endpoint, ...]
    tls: ReloadingContext | None = None
    _reloader: asyncio.Task[None] | None = field(default=None, repr=False)

    def port(self, listener: str) -> int:
        return next(e.port for e in self.bound if e.listener == listener)

    def stop(self) -> None:
        if self._reloader is not None:
            self._reloader.cancel()


async def open_listeners(
    server: KafkaServer, settings: ListenerSettings, advertised_host: str
) -> OpenListeners:
    tls = None
    if any(e.protocol.uses_tls for e in settings.listeners):
        tls = ReloadingContext(settings.tls, settings.client_auth)
    bound = []
    for endpoint in settings.listeners:
        context = tls.context if tls is not None and endpoint.protocol.uses_tls else None
        port = await server.start(endpoint, context)
        bound.append(replace(endpoint, port=port))
        log.info(
            "listening for %s (%s) on %s:%d",
            endpoint.listener,
            endpoint.protocol,
            endpoint.host,
            port,
        )
    advertised = advertise(bound, _with_bound_ports(settings.advertised, bound), advertised_host)
    opened = OpenListeners(tuple(bound), advertised, tls)
    if tls is not None:
        opened._reloader = asyncio.create_task(reload_forever(tls, settings.tls_reload_interval_ms))
    return opened


def _with_bound_ports(advertised: tuple[Endpoint, ...], bound: list[Endpoint]) -> list[Endpoint]:
    """An advertised listener at port 0 takes the port its listener bound (tests, and
    operators who let the system choose)."""
    ports = {e.listener: e.port for e in bound}
    return [
        replace(e, port=ports.get(e.listener, e.port)) if e.port == 0 else e for e in advertised
    ]
