"""What the compaction tests share: fast cleaner settings, keyed writes by librdkafka that
remember each key's latest value, each replica's log read from its own files, reads by
consumers, and the comparisons between them.

A replica's log is read from a copy of its partition directory, opened by
:meth:`pafka.storage.log.Log.open` (the broker's own recovery and readers, on the copy, so the
running broker is never touched). A copy taken while a swap renames files may be torn; such a
copy fails to open or misses a file, and is simply taken again.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as ConfluentTP
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTP

from pafka.errors import KafkaApiError
from pafka.records.batch import iter_batches
from pafka.records.encoding import decode_records
from pafka.storage import layout
from pafka.storage.config import LogConfig
from pafka.storage.files import FileCache
from pafka.storage.log import Log
from tests.integration.conftest import TEST_BROKER_ENV, ClusterHandle

# Brokers look for logs to clean every 300 ms and for expired segments every 200 ms (Kafka's
# 15 s and 5 min would make every test wait); a follower missing for 5 s leaves the ISR.
CLEANER_BACKOFF_MS = 300
COMPACTION_BROKER_ENV = {
    **TEST_BROKER_ENV,
    "PAFKA_BROKER_LOG_CLEANER_BACKOFF_MS": str(CLEANER_BACKOFF_MS),
    "PAFKA_BROKER_RETENTION_CHECK_INTERVAL_MS": "200",
    "PAFKA_BROKER_REPLICA_LAG_TIME_MAX_MS": "5000",
}
# Small segments, so a few megabytes make dozens of them, and any dirt is worth a clean.
COMPACTED = {
    "cleanup.policy": "compact",
    "segment.bytes": str(64 * 1024),
    "min.cleanable.dirty.ratio": "0.01",
}
# Suffixes of a clean's files that must never outlive it (layout spells them).
CLEAN_LEFTOVERS = (layout.CLEANED_SUFFIX, layout.SWAP_SUFFIX, layout.DELETED_SUFFIX)

# max.compaction.lag.ms of the tests' topics: an idle active segment rolls at the next append.
ROLL_MS = 2_000
WAIT_S = 120.0


def wait_until(check: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.2)


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Stored:
    """A record as a replica or a consumer has it."""

    offset: int
    key: bytes | None
    value: bytes | None


Latest = dict[bytes, tuple[int, bytes | None]]  # key -> (offset, value or None: a tombstone)


def latest_of(records: Iterable[Stored]) -> Latest:
    """Each key's last record (offset and value) in ``records``."""
    latest: Latest = {}
    for r in records:
        assert r.key is not None, f"a keyless record at offset {r.offset} of a compacted topic"
        known = latest.get(r.key)
        if known is None or known[0] < r.offset:
            latest[r.key] = (r.offset, r.value)
    return latest


def assert_increasing(records: list[Stored], what: str) -> None:
    offsets = [r.offset for r in records]
    assert all(a < b for a, b in itertools.pairwise(offsets)), (
        f"{what}: offsets not strictly increasing"
    )


# -- writing -----------------------------------------------------------------------------------


class Writer:
    """An idempotent librdkafka producer (acks=all) that remembers, per topic and partition,
    each key's latest acknowledged value and its offset, from the delivery reports."""

    def __init__(self, cluster: ClusterHandle, compression: str = "none") -> None:
        self._producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "compression.type": compression,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 20,
                "queue.buffering.max.messages": 200_000,
            }
        )
        self.latest: dict[tuple[str, int], Latest] = {}
        self.errors: list[KafkaError] = []

    def _delivered(self, error: KafkaError | None, message: object) -> None:
        if error is not None:
            self.errors.append(error)
            return
        key, value = message.key(), message.value()  # type: ignore[attr-defined]
        where = (message.topic(), message.partition())  # type: ignore[attr-defined]
        offset = message.offset()  # type: ignore[attr-defined]
        latest = self.latest.setdefault(where, {})
        known = latest.get(key)
        if known is None or known[0] < offset:
            latest[key] = (offset, value)

    def send(
        self, topic: str, items: Iterable[tuple[bytes, bytes | None]], partition: int = -1
    ) -> None:
        """Send every (key, value) and wait until each is acknowledged."""
        for key, value in items:
            while True:
                try:
                    self._producer.produce(
                        topic, value, key, partition=partition, on_delivery=self._delivered
                    )
                    break
                except BufferError:
                    self._producer.poll(0.1)
            self._producer.poll(0)
        assert self._producer.flush(120) == 0, "records left unsent"
        assert not self.errors, f"records refused: {self.errors[:3]}"

    def of(self, topic: str, partition: int = 0) -> Latest:
        return dict(self.latest.get((topic, partition), {}))


def updates(keys: int, rounds: int, *, tag: str = "") -> list[tuple[bytes, bytes]]:
    """``rounds`` rounds of one update to each of ``keys`` keys; values say key and round."""
    return [
        (b"key-%05d" % k, b"%s-value-%05d-round-%05d" % (tag.encode(), k, r))
        for r in range(rounds)
        for k in range(keys)
    ]


# -- a replica's own log -----------------------------------------------------------------------


def partition_dir(cluster: ClusterHandle, broker_id: int, topic: str, partition: int) -> Path:
    return layout.partition_dir(Path(cluster.local.broker(broker_id).data_dir), topic, partition)


def leftovers(directory: Path) -> list[str]:
    """Files of an unfinished clean in a partition directory."""
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(CLEAN_LEFTOVERS))


def replica_records(
    cluster: ClusterHandle, broker_id: int, topic: str, partition: int
) -> list[Stored]:
    """Every record of one replica's log (to its log end), read from a copy of its files."""
    source = partition_dir(cluster, broker_id, topic, partition)
    for _ in range(20):
        with tempfile.TemporaryDirectory(prefix="replica-") as scratch:
            copy = Path(scratch) / source.name
            try:
                shutil.copytree(source, copy)
                return _read_log(copy)
            except (OSError, KafkaApiError):
                time.sleep(0.2)  # a swap renamed files under the copy: take it again
    raise AssertionError(f"no whole copy of {source} could be read")


def _read_log(directory: Path) -> list[Stored]:
    if any(directory.glob(f"*{layout.SWAP_SUFFIX}")):
        raise OSError("copied during a swap")
    files = FileCache()
    opened = Log.open(
        directory, LogConfig(cleanup_policy="compact"), clean_shutdown_known=False, files=files
    )
    try:
        records: list[Stored] = []
        for segment in opened.segments:
            data = segment.pread(segment.size, 0) if segment.size else b""
            for pos, header in iter_batches(data):
                batch = memoryview(data)[pos : pos + header.size]
                records.extend(
                    Stored(r.offset, r.key, r.value)
                    for r in decode_records(batch)
                    if r.offset >= opened.log_start_offset
                )
        return records
    finally:
        opened.close_uncleanly()


# -- waiting for the cleaner ------------------------------------------------------------------


def roll_with(writer: Writer, topic: str, key: bytes, value: bytes) -> None:
    """One more update after max.compaction.lag.ms, which rolls the active segment: everything
    before it becomes cleanable."""
    time.sleep(ROLL_MS / 1000 + 0.5)
    writer.send(topic, [(key, value)], partition=0)


def cleaned_to(
    cluster: ClusterHandle, broker: int, topic: str, expected: Latest, most: int
) -> list[Stored]:
    """Wait until the broker's replica holds exactly ``expected`` as its latest records and at
    most ``most`` records; its records."""
    found: list[Stored] = []

    def check() -> bool:
        nonlocal found
        found = replica_records(cluster, broker, topic, 0)
        return latest_of(found) == expected and len(found) <= most

    wait_until(check, f"broker {broker} cleaned {topic} (has {len(found)} records)")
    assert_increasing(found, f"broker {broker}'s log")
    return found


# -- reading as consumers ----------------------------------------------------------------------


def consume_confluent(cluster: ClusterHandle, topic: str, partition: int, end: int) -> list[Stored]:
    """librdkafka's records of one partition from the beginning up to offset ``end``."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": topic_name("compaction-reader"),
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    out: list[Stored] = []
    try:
        consumer.assign([ConfluentTP(topic, partition, -2)])  # OFFSET_BEGINNING
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF and message.offset() >= end:
                    return out
                if error.code() != KafkaError._PARTITION_EOF:
                    assert error.retriable(), f"consumer error: {error}"
                continue
            out.append(Stored(message.offset(), message.key(), message.value()))
            if message.offset() >= end - 1:
                return out
    finally:
        consumer.close()
    raise AssertionError(f"librdkafka read only {len(out)} records of {topic}-{partition}")


def consume_kafka_python(
    cluster: ClusterHandle,
    topic: str,
    partition: int,
    end: int,
    api_version: tuple[int, ...] | None = None,
) -> list[Stored]:
    """kafka-python's records of one partition from the beginning up to offset ``end``; with an
    old ``api_version`` (0.10: Fetch v3, message format 1) the broker down-converts them."""
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap,
        enable_auto_commit=False,
        group_id=None,
        api_version=api_version,
    )
    tp = KafkaTP(topic, partition)
    out: list[Stored] = []
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and consumer.position(tp) < end:
            for batch in consumer.poll(timeout_ms=1000).values():
                out.extend(Stored(m.offset, m.key, m.value) for m in batch)
        assert consumer.position(tp) >= end, f"kafka-python stopped at {consumer.position(tp)}"
        return out
    finally:
        consumer.close()
