"""The partition suite's client: the fault workload's producer, run in the client's namespace.

``ip netns exec <client ns> python -m tests.partitions.client --bootstrap ... --topic ...
--out deliveries.json`` produces until SIGTERM, flushes, and writes what it was told
(``Deliveries`` as JSON) to ``--out``. librdkafka's debug log (``eos,msg,protocol,broker``)
goes to this process's stderr, which the harness sends to a file and keeps only when it is
needed (a fatal error, a failed validation).

The workload runs in a process of its own, not in a thread of the test that entered the
namespace with setns(2): every thread librdkafka starts is then in the namespace without
relying on how threads inherit it, the harness's own connections stay in the root namespace,
and a crash in librdkafka takes down this process, not the test.
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
from pathlib import Path

from tests.faults.workload import Deliveries, produce_until

DEBUG_CONTEXTS = "eos,msg,protocol,broker"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--rate-per-s", type=int, default=200)
    args = parser.parse_args(argv)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    deliveries = Deliveries()
    produce_until(
        args.bootstrap,
        args.topic,
        deliveries,
        stop,
        rate_per_s=args.rate_per_s,
        extra_config={"debug": DEBUG_CONTEXTS, "log_level": 7},
    )
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(deliveries.to_json()))
    tmp.rename(args.out)


if __name__ == "__main__":
    main()
