"""The shared shape of a service process: settings, logging, run until SIGTERM/SIGINT.

Each service's ``main()`` calls :func:`serve` with how to load its settings and how to run;
user errors (bad settings, a taken id, ZooKeeper unreachable) end the process with one line.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar


class ServiceSettings(Protocol):
    @property
    def log_level(self) -> str: ...


S = TypeVar("S", bound=ServiceSettings)


async def wait_for_termination() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


# A young collection runs once this many more container objects were made than freed since
# the last (Python's default is 700). A busy service holds a few thousand in its requests in
# flight, every one freed when its request ends, so at 700 the collector ran hundreds of times
# a second over the same live requests (a gateway serving 10,000 one-record POSTs a second spent
# 5% of its CPU there) and, each tenth and hundredth time, over older objects too.
YOUNG_COLLECTION_OBJECTS = 10_000


def prepare_garbage_collector() -> None:
    """Once a service is serving: put everything made so far (modules, classes, the service's
    own long-lived state) out of the collector's way for the process's life, so a full
    collection walks only what requests allocated since (it had been walking start-up's
    objects every time, pausing a service for tens of milliseconds: a REST gateway's p99 fell
    from about 70 ms to 10 ms), and collect young objects only past
    :data:`YOUNG_COLLECTION_OBJECTS`. What a request makes is freed when it ends (a reference
    cycle per request would be left to the collector; ``tests/unit/test_whole_requests.py``
    keeps them out of the gateway's produce), so the collector finds little, and a higher
    threshold only means it looks less often."""
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_OBJECTS, *gc.get_threshold()[1:])


def load_settings(name: str, load: Callable[[], S]) -> S:
    """The settings, or the process ends with one line naming what is wrong (exit status 2)."""
    from pafka.errors import PafkaError

    try:
        return load()
    except PafkaError as exc:
        print(f"pafka {name}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def configure_logging(name: str, level: str) -> None:
    logging.basicConfig(
        level=level,
        format=f"%(asctime)s {name} %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)


def serve(name: str, load: Callable[[], S], run: Callable[[S], Coroutine[Any, Any, None]]) -> None:
    from pafka.errors import PafkaError

    settings = load_settings(name, load)
    configure_logging(name, settings.log_level)
    try:
        asyncio.run(run(settings))
    except PafkaError as exc:
        logging.getLogger(f"pafka.{name}").error("%s", exc)
        print(f"pafka {name}: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
