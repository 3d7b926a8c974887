"""``pafka broker``: run one broker in the foreground, configured from ``PAFKA_BROKER_*``."""

from __future__ import annotations

import logging

from pafka.eventloop import use_uvloop
from pafka.service import prepare_garbage_collector, serve, wait_for_termination
from services.broker.broker import Broker
from services.broker.settings import BrokerSettings

log = logging.getLogger("pafka.broker")


async def run(settings: BrokerSettings) -> None:
    broker = Broker(settings)
    await broker.start()
    prepare_garbage_collector()
    try:
        await wait_for_termination()
        log.info("shutting down")
    finally:
        await broker.stop()


def main() -> None:
    use_uvloop()
    serve("broker", BrokerSettings.from_env, run)


if __name__ == "__main__":
    main()
