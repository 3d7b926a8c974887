"""``pafka gateway``: the REST gateway in the foreground, configured from ``PAFKA_GATEWAY_*``.

One process serves when ``PAFKA_GATEWAY_WORKERS`` is 1; more are forked by a supervisor
(``workers.py``), each running :func:`run` on the same port.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable

from pafka.errors import PafkaError
from pafka.eventloop import use_uvloop
from pafka.httpserver import start_http
from pafka.security.tls import ReloadingContext, reload_forever
from pafka.service import (
    configure_logging,
    load_settings,
    prepare_garbage_collector,
    serve,
    wait_for_termination,
)
from services.gateway.app import create_app
from services.gateway.context import open_context
from services.gateway.settings import GatewaySettings
from services.gateway.workers import supervise

log = logging.getLogger("pafka.gateway")


async def run(
    settings: GatewaySettings,
    *,
    reuse_port: bool = False,
    on_serving: Callable[[], None] | None = None,
) -> None:
    tls = None
    if settings.https is not None:
        tls = ReloadingContext(settings.https, settings.https_client_auth)
    ctx = await open_context(settings)
    reloader = None
    try:
        app = create_app(settings, ctx)
        server, task = await start_http(
            app,
            settings.host,
            settings.port,
            tls=tls,
            reuse_port=reuse_port,
            idle_timeout_ms=settings.idle_timeout_ms,
            whole_route=None if app.hot is None else app.hot.whole_route,
        )
        if tls is not None:
            reloader = asyncio.create_task(reload_forever(tls, settings.https_reload_interval_ms))
        prepare_garbage_collector()
        scheme = "HTTPS" if tls else "HTTP"
        log.info("gateway serving REST over %s on %s:%d", scheme, settings.host, settings.port)
        if on_serving is not None:
            on_serving()
        await wait_for_termination()
        log.info("shutting down")
        ctx.stopping.set()
        server.should_exit = True
        await task
    finally:
        if reloader is not None:
            reloader.cancel()
        await ctx.close()


def run_worker(settings: GatewaySettings, index: int, on_serving: Callable[[], None]) -> int:
    """One worker process's life; its exit status (1 with the error's line, as one process)."""
    name = f"gateway-{index}"
    configure_logging(name, settings.log_level)
    try:
        asyncio.run(run(settings, reuse_port=True, on_serving=on_serving))
    except PafkaError as exc:
        log.error("%s", exc)
        print(f"pafka gateway: {exc}", file=sys.stderr, flush=True)
        return 1
    except OSError as exc:
        # The port taken (by a listener without SO_REUSEPORT, or another user's).
        print(
            f"pafka gateway: cannot serve {settings.host}:{settings.port}: {exc}",
            file=sys.stderr,
            flush=True,
        )
        return 1
    return 0


def main() -> None:
    use_uvloop()
    settings = load_settings("gateway", GatewaySettings.from_env)
    if settings.workers == 1:
        serve("gateway", lambda: settings, run)
        return
    configure_logging("gateway", settings.log_level)
    if settings.https is not None:
        # Files that do not load fail the start once, here, rather than once per worker.
        try:
            ReloadingContext(settings.https, settings.https_client_auth)
        except PafkaError as exc:
            print(f"pafka gateway: {exc}", file=sys.stderr)
            raise SystemExit(1) from None
    log.info("gateway starting %d worker processes", settings.workers)
    raise SystemExit(supervise(settings, run_worker))


if __name__ == "__main__":
    main()
