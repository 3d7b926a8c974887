"""One consumer-group member for the group tests, run as a process of its own.

    python -m tests.integration.group_member --client confluent --bootstrap HOST:PORT \\
        --group G --topic T --client-id G-b [--session-timeout-ms 6000]

It subscribes to one topic, "processes" each record by printing it, and commits what it has
processed after every poll batch (and, where the client allows it, before partitions are
revoked). Offsets start at the earliest record; nothing is committed automatically. On SIGTERM
it stops polling, commits, closes the consumer (which leaves the group) and exits 0.

Everything the test reads is on stdout, one event a line, flushed at once:

    MEMBER <member_id>                       the member id, whenever it becomes known or changes
    ASSIGNED <json list of partitions>       the whole current assignment, after every change
    RECORD <partition> <offset> <value>      one processed record
    COMMITTED <json {partition: offset}>     a commit the coordinator acknowledged
    COMMIT_FAILED <error>                    a commit the coordinator refused
    ERROR <error>                            an error the client reported while polling
    CLOSED                                   the consumer has closed after a clean leave
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

CLIENTS = ("kafka-python", "confluent", "confluent-cooperative", "aiokafka")
POLL_TIMEOUT_MS = 200
MAX_BATCH = 500


class Output:
    """Event lines on stdout, safe to call from a client's own threads."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._member = ""
        self._assigned: set[int] = set()

    def emit(self, *words: str) -> None:
        with self._lock:
            print(" ".join(words), flush=True)

    def member(self, member_id: str | None) -> None:
        with self._lock:
            if member_id and member_id != self._member:
                self._member = member_id
                self.emit("MEMBER", member_id)

    def assigned(self, partitions: Iterable[int]) -> None:
        with self._lock:
            self._assigned |= set(partitions)
            self.emit("ASSIGNED", json.dumps(sorted(self._assigned)))

    def revoked(self, partitions: Iterable[int]) -> None:
        with self._lock:
            self._assigned -= set(partitions)
            self.emit("ASSIGNED", json.dumps(sorted(self._assigned)))

    def commit_result(self, offsets: dict[int, int], error: Exception | None) -> None:
        if error is None:
            self.emit("COMMITTED", json.dumps({str(p): o for p, o in sorted(offsets.items())}))
        else:
            self.emit("COMMIT_FAILED", repr(error).replace("\n", " "))


class Progress:
    """Processed but not yet committed positions (next offset to read), per partition."""

    def __init__(self, out: Output) -> None:
        self._out = out
        self._lock = threading.Lock()
        self._pending: dict[int, int] = {}

    def processed(self, partition: int, offset: int, value: bytes | None) -> None:
        self._out.emit("RECORD", str(partition), str(offset), (value or b"").decode())
        with self._lock:
            self._pending[partition] = offset + 1

    def take(self, partitions: Iterable[int] | None = None) -> dict[int, int]:
        with self._lock:
            wanted = set(self._pending) if partitions is None else set(partitions)
            return {p: self._pending.pop(p) for p in wanted & set(self._pending)}

    def commit(
        self, commit: Callable[[dict[int, int]], None], partitions: Iterable[int] | None = None
    ) -> None:
        offsets = self.take(partitions)
        if not offsets:
            return
        try:
            commit(offsets)
        except Exception as exc:
            self._out.commit_result(offsets, exc)
        else:
            self._out.commit_result(offsets, None)


def stop_on_sigterm() -> threading.Event:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda _sig, _frame: stop.set())
    return stop


def python_client_config(args: argparse.Namespace) -> dict[str, Any]:
    """Settings kafka-python and aiokafka spell alike."""
    return {
        "bootstrap_servers": args.bootstrap,
        "group_id": args.group,
        "client_id": args.client_id,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
        "session_timeout_ms": args.session_timeout_ms,
        "heartbeat_interval_ms": args.heartbeat_interval_ms,
    }


def run_kafka_python(args: argparse.Namespace, out: Output, progress: Progress) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.consumer.subscription_state import ConsumerRebalanceListener
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.structs import OffsetAndMetadata

    stop = stop_on_sigterm()
    consumer = KafkaConsumer(
        **python_client_config(args), partition_assignment_strategy=[RangePartitionAssignor]
    )

    # The listener runs on kafka-python's I/O thread, inside poll(), where a blocking commit
    # cannot be made; nothing is pending then anyway: every batch is committed before the
    # next poll(), and only poll() joins the group.
    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            out.revoked(tp.partition for tp in revoked)

        def on_partitions_assigned(self, assigned: Any) -> None:
            out.member(consumer.group_metadata().member_id)
            out.assigned(tp.partition for tp in assigned)

    def commit(offsets: dict[int, int]) -> None:
        consumer.commit(
            {
                TopicPartition(args.topic, p): OffsetAndMetadata(o, "", -1)
                for p, o in offsets.items()
            }
        )

    consumer.subscribe([args.topic], listener=Listener())
    while not stop.is_set():
        batch = consumer.poll(timeout_ms=POLL_TIMEOUT_MS, max_records=MAX_BATCH)
        out.member(consumer.group_metadata().member_id)
        for tp, messages in batch.items():
            for m in messages:
                progress.processed(tp.partition, m.offset, m.value)
        progress.commit(commit)
    progress.commit(commit)
    consumer.close(autocommit=False)


def run_confluent(args: argparse.Namespace, out: Output, progress: Progress) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    stop = stop_on_sigterm()
    cooperative = args.client == "confluent-cooperative"
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "client.id": args.client_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": args.session_timeout_ms,
            "heartbeat.interval.ms": args.heartbeat_interval_ms,
            "partition.assignment.strategy": "cooperative-sticky" if cooperative else "range",
        }
    )

    def commit(offsets: dict[int, int]) -> None:
        done = consumer.commit(
            offsets=[TopicPartition(args.topic, p, o) for p, o in offsets.items()],
            asynchronous=False,
        )
        failed = [tp for tp in done or [] if tp.error is not None]
        if failed:
            raise KafkaException(failed[0].error)

    # librdkafka runs these callbacks inside consume(), on this thread; the client assigns
    # (eagerly or incrementally, as the protocol says) after each one returns.
    def on_assign(c: Any, partitions: list[Any]) -> None:
        out.member(c.memberid())
        out.assigned(tp.partition for tp in partitions)

    def on_revoke(_c: Any, partitions: list[Any]) -> None:
        progress.commit(commit, [tp.partition for tp in partitions])
        out.revoked(tp.partition for tp in partitions)

    def on_lost(_c: Any, partitions: list[Any]) -> None:
        out.revoked(tp.partition for tp in partitions)

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    while not stop.is_set():
        messages = consumer.consume(num_messages=MAX_BATCH, timeout=POLL_TIMEOUT_MS / 1000)
        out.member(consumer.memberid())
        for m in messages:
            partition, offset = m.partition(), m.offset()
            if m.error() is not None or partition is None or offset is None:
                out.emit("ERROR", str(m.error()))
                continue
            progress.processed(partition, offset, m.value())
        progress.commit(commit)
    progress.commit(commit)
    consumer.close()


async def run_aiokafka(args: argparse.Namespace, out: Output, progress: Progress) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    consumer = AIOKafkaConsumer(**python_client_config(args))
    # aiokafka rebalances in a task of its own while this loop awaits; the lock makes the
    # revocation wait for a commit in flight, then commit whatever is still pending.
    commit_lock = asyncio.Lock()

    async def commit(partitions: Iterable[int] | None = None) -> None:
        async with commit_lock:
            offsets = progress.take(partitions)
            if not offsets:
                return
            try:
                await consumer.commit(
                    {TopicPartition(args.topic, p): o for p, o in offsets.items()}
                )
            except Exception as exc:
                out.commit_result(offsets, exc)
            else:
                out.commit_result(offsets, None)

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked: Any) -> None:
            await commit([tp.partition for tp in revoked])
            out.revoked(tp.partition for tp in revoked)

        async def on_partitions_assigned(self, assigned: Any) -> None:
            out.member(consumer._coordinator.member_id)
            out.assigned(tp.partition for tp in assigned)

    await consumer.start()
    try:
        consumer.subscribe([args.topic], listener=Listener())
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=POLL_TIMEOUT_MS, max_records=MAX_BATCH)
            for tp, messages in batch.items():
                for m in messages:
                    progress.processed(tp.partition, m.offset, m.value)
            await commit()
        await commit()
    finally:
        await consumer.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--client", choices=CLIENTS, required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=1000)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s"
    )

    out = Output()
    progress = Progress(out)
    if args.client == "kafka-python":
        run_kafka_python(args, out, progress)
    elif args.client == "aiokafka":
        asyncio.run(run_aiokafka(args, out, progress))
    else:
        run_confluent(args, out, progress)
    out.emit("CLOSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
