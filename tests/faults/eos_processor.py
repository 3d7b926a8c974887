"""A consume-transform-produce processor, as Kafka's exactly-once applications are written.

    python -m tests.faults.eos_processor BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID

It reads INPUT with a read_committed consumer of GROUP, and for each polled batch writes one
output record per input record to OUTPUT (same partition, value ``out-<input value>``) and the
consumer's next positions in one transaction (``send_offsets_to_transaction``). An abortable
error aborts the transaction and rewinds the consumer to the group's committed offsets; a fatal
one (fenced by a newer instance) exits with status 3, a client call that hangs with status 4.
It runs until killed, or with ``--until-idle S`` until it has read nothing for S seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

POLL_BATCH = 100
SEND_OFFSETS_TIMEOUT_S = 60
# The exit status of a processor whose client hung (a supervisor restarts it).
STUCK = 4


def rewind(consumer: Consumer) -> None:
    """Back to what the group committed: the aborted transaction's input is read again."""
    assignment = consumer.assignment()
    if not assignment:
        return
    for tp in consumer.committed(assignment, timeout=30):
        consumer.seek(TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))


def retried(call: Callable[..., object], *args: object, attempts: int = 10) -> None:
    """librdkafka's rule: a call failing with a retriable error may simply be called again."""
    for attempt in range(attempts):
        try:
            call(*args)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() or attempt == attempts - 1:
                raise
            time.sleep(0.5)


@contextlib.contextmanager
def watchdog(call: str, limit_s: float) -> Iterator[None]:
    """Exit with STUCK when the block outlives ``limit_s``, as a liveness probe would have the
    process restarted: librdkafka's coordinator request behind send_offsets_to_transaction
    can wait forever, past its own timeout, once the group coordinator it cached is gone
    (confluentinc/librdkafka#5456, #5511), as happens with Kafka's brokers too."""
    timer = threading.Timer(limit_s, _stuck, (call, limit_s))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _stuck(call: str, limit_s: float) -> None:
    print(f"stuck: {call} did not return in {limit_s:g} s", file=sys.stderr, flush=True)
    os._exit(STUCK)


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("bootstrap", "input", "output", "group", "transactional_id"):
        parser.add_argument(name)
    parser.add_argument("--until-idle", type=float, default=0.0)
    parser.add_argument("--debug", default="", help="librdkafka debug contexts, e.g. eos,cgrp")
    args = parser.parse_args()
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10_000,
            **({"debug": args.debug} if args.debug else {}),
        }
    )
    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "transactional.id": args.transactional_id,
            "transaction.timeout.ms": 30_000,
            "linger.ms": 5,
            **({"debug": args.debug} if args.debug else {}),
        }
    )
    producer.init_transactions(120)
    consumer.subscribe([args.input])
    idle_since = time.monotonic()
    while not args.until_idle or time.monotonic() - idle_since < args.until_idle:
        batch = [m for m in consumer.consume(POLL_BATCH, timeout=1.0) if m.error() is None]
        if not batch:
            continue
        idle_since = time.monotonic()
        try:
            producer.begin_transaction()
            for msg in batch:
                producer.produce(
                    args.output, b"out-" + (msg.value() or b""), partition=msg.partition() or 0
                )
            with watchdog("send_offsets_to_transaction", SEND_OFFSETS_TIMEOUT_S + 30):
                retried(
                    producer.send_offsets_to_transaction,
                    consumer.position(consumer.assignment()),
                    consumer.consumer_group_metadata(),
                    SEND_OFFSETS_TIMEOUT_S,
                )
            retried(producer.commit_transaction, 120)
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            if error.fatal():
                print(f"fatal: {error}", file=sys.stderr, flush=True)
                sys.exit(3)
            if not error.txn_requires_abort():
                raise
            print(f"aborting: {error}", file=sys.stderr, flush=True)
            producer.abort_transaction(120)
            rewind(consumer)
    consumer.close()


if __name__ == "__main__":
    main()
