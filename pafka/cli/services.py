"""``pafka broker|controller|gateway``: one service in the foreground (container entrypoint)."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any


def _run(module: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            entry = importlib.import_module(module)
        except ModuleNotFoundError:
            print(f"pafka {args.command}: this service is not built yet", file=sys.stderr)
            return 2
        entry.main()
        return 0

    return run


def register(sub: Any) -> None:
    for name, module, text in (
        ("broker", "services.broker.main", "run a broker (configured by PAFKA_BROKER_*)"),
        ("controller", "services.controller.main", "run a controller (PAFKA_CONTROLLER_*)"),
        ("gateway", "services.gateway.main", "run the REST gateway (PAFKA_GATEWAY_*)"),
    ):
        parser = sub.add_parser(name, help=text, description=text)
        parser.set_defaults(handler=_run(module))
