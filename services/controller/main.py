"""``pafka controller``: run one controller in the foreground, from ``PAFKA_CONTROLLER_*``."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from pafka.errors import PafkaError
from pafka.httpserver import start_http
from services.controller.controller import Controller
from services.controller.http import create_app
from services.controller.settings import ControllerSettings

log = logging.getLogger("pafka.controller")


async def run(settings: ControllerSettings) -> None:
    controller = Controller(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server, http = await start_http(create_app(controller), settings.host, settings.http_port)
    await controller.start()
    try:
        await stop.wait()
    finally:
        server.should_exit = True
        await controller.stop()
        await http


def main() -> None:
    try:
        settings = ControllerSettings.from_env()
    except PafkaError as exc:
        print(f"pafka controller: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    logging.basicConfig(
        level=settings.log_level,
        format=(
            f"%(asctime)s controller-{settings.controller_id} %(levelname)s %(name)s: %(message)s"
        ),
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        asyncio.run(run(settings))
    except PafkaError as exc:
        log.error("%s", exc)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
