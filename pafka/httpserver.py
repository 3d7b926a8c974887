"""Serving a service's HTTP port from inside its own asyncio loop.

uvicorn's ``Server.serve`` installs its own SIGTERM/SIGINT handlers; the services own their
signal handling (a broker's shutdown order matters), so the embedded server does not. HTTP is
parsed by httptools (C), a small answer is written to its socket in one write (see
:mod:`pafka.coalesced_writes`), a request the parser refuses is answered with an error body
(:mod:`pafka.http_refusals`); no access log is written. A service may name requests to be
served whole (:mod:`pafka.whole_requests`: its busiest small POSTs, read whole and answered in
one write).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
from collections.abc import Generator
from typing import Any

import uvicorn

from pafka.coalesced_writes import CoalescingHttpToolsProtocol, CoalescingTransport
from pafka.http_refusals import RefusalAnsweringProtocol
from pafka.security.tls import ReloadingContext
from pafka.whole_requests import WholeRequestsProtocol, WholeRoute


class ServiceHttpProtocol(RefusalAnsweringProtocol, CoalescingHttpToolsProtocol):
    """Coalesced answer writes, and parse refusals answered with an error body."""


class WholeServiceHttpProtocol(WholeRequestsProtocol, ServiceHttpProtocol):
    """:class:`ServiceHttpProtocol` serving the requests a whole route names whole."""

    def write_answer(self, data: bytes) -> None:
        transport: CoalescingTransport = self.transport  # type: ignore[assignment]
        transport.write_now(data)


class EmbeddedServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


async def start_http(
    app: Any,
    host: str,
    port: int,
    *,
    tls: ReloadingContext | None = None,
    reuse_port: bool = False,
    idle_timeout_ms: int = 5000,
    whole_route: WholeRoute | None = None,
) -> tuple[EmbeddedServer, asyncio.Task[None]]:
    """Start serving and return once the port is bound; a port that cannot be bound raises
    OSError here. With ``tls`` the port serves HTTPS from its (reloading) context. With
    ``reuse_port`` several processes each bind the port (SO_REUSEPORT) and the kernel spreads
    new connections over them. A keep-alive connection idle for ``idle_timeout_ms`` is
    closed (uvicorn's ``timeout_keep_alive``, whose own default is 5 s). The requests
    ``whole_route`` names are served whole (:mod:`pafka.whole_requests`)."""
    protocol: Any = ServiceHttpProtocol
    if whole_route is not None:
        protocol = functools.partial(WholeServiceHttpProtocol, whole_route=whole_route)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_keep_alive=idle_timeout_ms / 1000,  # type: ignore[arg-type]  # a float works
    )
    config.load()
    if tls is not None:
        # uvicorn would build a context of its own from file names, which could not be
        # renewed underneath it; the service's context is.
        config.ssl = tls.context
    server = EmbeddedServer(config)
    # Bound here, so that a taken port raises OSError in the caller (and the service exits):
    # uvicorn answers a failed bind with SystemExit inside its task, which the service's loop
    # may never see, leaving it running without its HTTP port.
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
    sock = socket.create_server((host, port), family=family, reuse_port=reuse_port)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
            raise OSError(f"HTTP server on {host}:{port} exited during start-up")
        await asyncio.sleep(0.01)
    return server, task
