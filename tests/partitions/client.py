"""The partition suite's client: the fault workload's producer, run in the client's namespace.

``ip netns exec <client ns> python -m tests.partitions.client --bootstrap ... --topic ...
--out deliveries.json`` produces until SIGTERM, flushes, and writes what it was told
(``Deliveries`` as JSON) to ``--out``, with what a consumer beside it saw: it reads the topic
from the start throughout the run, and every offset it receives must be above the last one of
its partition (a consumer never goes backwards, whichever leader serves it). librdkafka's debug
log (``eos,msg,protocol,broker``) goes to this process's stderr, which the harness sends to a
file and keeps only when it is needed (a fatal error, a failed validation).

The workload runs in a process of its own, not in a thread of the test that entered the
namespace with setns(2): every thread librdkafka starts is then in the namespace without
relying on how threads inherit it, the harness's own connections stay in the root namespace,
and a crash in librdkafka takes down this process, not the test.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
from pathlib import Path

from confluent_kafka import KafkaException

from tests.faults.workload import PARTITIONS, Deliveries, produce_until

DEBUG_CONTEXTS = "eos,msg,protocol,broker"
# For investigations only: librdkafka settings (a JSON object) laid over the workload's, and the
# send rate. The suite's targets were measured without them.
PRODUCER_CONFIG_ENV = "PAFKA_PARTITIONS_PRODUCER_CONFIG"
RATE_ENV = "PAFKA_PARTITIONS_RATE_PER_S"


def producer_overrides(environ: dict[str, str]) -> dict[str, object]:
    """The librdkafka settings ``PAFKA_PARTITIONS_PRODUCER_CONFIG`` lays over the workload's."""
    raw = environ.get(PRODUCER_CONFIG_ENV, "").strip()
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"{PRODUCER_CONFIG_ENV} is not JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise SystemExit(f"{PRODUCER_CONFIG_ENV} must be a JSON object, not {raw!r}")
    return parsed


def consume_until(bootstrap: str, topic: str, stop: threading.Event) -> dict[str, object]:
    """Read every partition from the start until ``stop``; report records read and any offset
    that was not above its partition's previous one."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"partitions-{topic}",
            "enable.auto.commit": False,
            "log_level": 2,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    last: dict[int, int] = {}
    read = 0
    backwards: list[str] = []
    errors: list[str] = []
    while not stop.is_set():
        for message in consumer.consume(500, timeout=0.5):
            if message.error() is not None:
                errors.append(str(message.error()))
                continue
            partition, offset = message.partition(), message.offset()
            if offset <= last.get(partition, -1):
                backwards.append(f"partition {partition}: {offset} after {last[partition]}")
            last[partition] = offset
            read += 1
    consumer.close()
    return {"read": read, "backwards": backwards, "errors": errors[-20:]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--rate-per-s", type=int, default=int(os.environ.get(RATE_ENV, "200")))
    args = parser.parse_args(argv)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    deliveries = Deliveries()
    consumed: dict[str, object] = {}
    reader = threading.Thread(
        target=lambda: consumed.update(consume_until(args.bootstrap, args.topic, stop)),
        daemon=True,
    )
    reader.start()
    try:
        produce_until(
            args.bootstrap,
            args.topic,
            deliveries,
            stop,
            rate_per_s=args.rate_per_s,
            extra_config={
                "debug": DEBUG_CONTEXTS,
                "log_level": 7,
                **producer_overrides(dict(os.environ)),
            },
        )
    except KafkaException as exc:
        # After a fatal error librdkafka refuses every send. The figures must still be written
        # (that error is what they report): record it, keep the consumer reading until the
        # harness stops this process.
        if not deliveries.fatal:
            deliveries.fatal.append(str(exc))
        stop.wait()
    tmp = args.out.with_suffix(".tmp")
    reader.join(30)
    tmp.write_text(json.dumps({"deliveries": deliveries.to_json(), "consumer": consumed}))
    tmp.rename(args.out)


if __name__ == "__main__":
    main()
