"""Systems by name: which module holds each one's ``System`` and ``ClientDriver``.

A module that is not there (yet) or fails to import makes its system unavailable, with the
reason, instead of breaking the harness for every other system.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import cast

from bench.compare.driver import ClientDriver, System

MODULES = {
    "pafka-kafka": "bench.compare.pafka_kafka",
    "pafka-kafka-tls": "bench.compare.pafka_kafka_tls",
    "pafka-kafka-sasl-ssl": "bench.compare.pafka_kafka_sasl_ssl",
    "pafka-rest": "bench.compare.pafka_rest",
    "redis-streams": "bench.compare.redis_streams",
    "nats-jetstream": "bench.compare.nats_jetstream",
}
# The system every ratio is taken against, and whose peak paces the latency runs.
REFERENCE = "pafka-kafka"


class UnknownSystemError(ValueError):
    pass


@dataclass(frozen=True)
class Entry:
    name: str
    module: str
    # Why the system cannot run here; empty when it can.
    missing: str = ""

    def system(self) -> System:
        return cast(System, importlib.import_module(self.module).System())

    def driver(self) -> ClientDriver:
        return cast(ClientDriver, importlib.import_module(self.module).ClientDriver())


def lookup(name: str) -> Entry:
    if name not in MODULES:
        raise UnknownSystemError(f"unknown system {name!r}; known: {', '.join(MODULES)}")
    module = MODULES[name]
    try:
        loaded = importlib.import_module(module)
    except ImportError as exc:
        return Entry(name, module, missing=f"{module} cannot be imported ({exc})")
    absent = [c for c in ("System", "ClientDriver") if not hasattr(loaded, c)]
    if absent:
        return Entry(name, module, missing=f"{module} has no {' or '.join(absent)}")
    return Entry(name, module)


def select(names: list[str]) -> list[Entry]:
    """Entries for ``names`` (``all`` means every known system), in the order given."""
    expanded = list(MODULES) if names == ["all"] else names
    return [lookup(n) for n in dict.fromkeys(expanded)]
