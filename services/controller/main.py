"""``pafka controller``: run one controller in the foreground, from ``PAFKA_CONTROLLER_*``."""

from __future__ import annotations

from pafka.httpserver import start_http
from pafka.service import prepare_garbage_collector, serve, wait_for_termination
from services.controller.controller import Controller
from services.controller.http import create_app
from services.controller.settings import ControllerSettings


async def run(settings: ControllerSettings) -> None:
    controller = Controller(settings)
    server, http = await start_http(create_app(controller), settings.host, settings.http_port)
    await controller.start()
    prepare_garbage_collector()
    try:
        await wait_for_termination()
    finally:
        server.should_exit = True
        await controller.stop()
        await http


def main() -> None:
    serve("controller", ControllerSettings.from_env, run)


if __name__ == "__main__":
    main()
