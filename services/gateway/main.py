"""``pafka gateway``: the REST gateway in the foreground, configured from ``PAFKA_GATEWAY_*``."""

from __future__ import annotations

import logging

from pafka.eventloop import use_uvloop
from pafka.httpserver import start_http
from pafka.service import serve, wait_for_termination
from services.gateway.app import create_app
from services.gateway.context import open_context
from services.gateway.settings import GatewaySettings

log = logging.getLogger("pafka.gateway")


async def run(settings: GatewaySettings) -> None:
    ctx = await open_context(settings)
    try:
        server, task = await start_http(create_app(settings, ctx), settings.host, settings.port)
        log.info("gateway serving REST on %s:%d", settings.host, settings.port)
        await wait_for_termination()
        log.info("shutting down")
        server.should_exit = True
        await task
    finally:
        await ctx.close()


def main() -> None:
    use_uvloop()
    serve("gateway", GatewaySettings.from_env, run)


if __name__ == "__main__":
    main()
