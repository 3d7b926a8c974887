"""``pafka broker``: run one broker in the foreground, configured from ``PAFKA_BROKER_*``."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from pafka.errors import PafkaError
from services.broker.broker import Broker
from services.broker.settings import BrokerSettings

log = logging.getLogger("pafka.broker")


async def run(settings: BrokerSettings) -> None:
    broker = Broker(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await broker.start()
    try:
        await stop.wait()
        log.info("shutting down")
    finally:
        await broker.stop()


def main() -> None:
    try:
        settings = BrokerSettings.from_env()
    except PafkaError as exc:
        print(f"pafka broker: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    logging.basicConfig(
        level=settings.log_level,
        format=f"%(asctime)s broker-{settings.broker_id} %(levelname)s %(name)s: %(message)s",
    )
    try:
        asyncio.run(run(settings))
    except PafkaError as exc:
        log.error("%s", exc)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
