"""Runs a CLI command's admin work on pafka's own asyncio client (``pafka.client``).

The target's brokers (given, or found in ZooKeeper) bootstrap one client for the command; it is
closed whatever happens.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pafka.cli.target import Target, bootstrap_servers
from pafka.client.admin import AdminClient
from pafka.client.cluster import ClusterClient
from pafka.errors import ConfigError

T = TypeVar("T")
START_TIMEOUT_S = 15.0


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    addresses = []
    for item in servers.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ConfigError(f"--bootstrap-server takes HOST:PORT[,HOST:PORT...], got {servers!r}")
        addresses.append((host, int(port)))
    return addresses


def run_admin(target: Target, work: Callable[[AdminClient], Awaitable[T]]) -> T:
    addresses = parse_bootstrap(bootstrap_servers(target))

    async def run() -> T:
        cluster = ClusterClient(
            bootstrap=addresses, client_id="pafka-cli", security=target.security
        )
        try:
            await cluster.start(timeout_s=START_TIMEOUT_S)
            return await work(AdminClient(cluster))
        finally:
            await cluster.close()

    return asyncio.run(run())
