"""``pafka gateway``: the REST gateway in the foreground, configured from ``PAFKA_GATEWAY_*``."""

from __future__ import annotations

import asyncio
import logging

from pafka.eventloop import use_uvloop
from pafka.httpserver import start_http
from pafka.security.tls import ReloadingContext, reload_forever
from pafka.service import serve, wait_for_termination
from services.gateway.app import create_app
from services.gateway.context import open_context
from services.gateway.settings import GatewaySettings

log = logging.getLogger("pafka.gateway")


async def run(settings: GatewaySettings) -> None:
    tls = None
    if settings.https is not None:
        tls = ReloadingContext(settings.https, settings.https_client_auth)
    ctx = await open_context(settings)
    reloader = None
    try:
        app = create_app(settings, ctx)
        server, task = await start_http(app, settings.host, settings.port, tls=tls)
        if tls is not None:
            reloader = asyncio.create_task(reload_forever(tls, settings.https_reload_interval_ms))
        scheme = "HTTPS" if tls else "HTTP"
        log.info("gateway serving REST over %s on %s:%d", scheme, settings.host, settings.port)
        await wait_for_termination()
        log.info("shutting down")
        server.should_exit = True
        await task
    finally:
        if reloader is not None:
            reloader.cancel()
        await ctx.close()


def main() -> None:
    use_uvloop()
    serve("gateway", GatewaySettings.from_env, run)


if __name__ == "__main__":
    main()
