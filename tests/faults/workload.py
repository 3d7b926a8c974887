"""A produce-consume-validate workload for fault injection (Jepsen-style checks, simplified).

Producers use acks=all with idempotence on an RF=3, min ISR 2 topic. Every send has a unique
value; the workload records what was acknowledged and what failed. Validation reads the whole
topic back and checks: no acknowledged record is missing, no value appears twice, no failed
send is ever read, offsets only grow per partition, and every replica of each partition holds
the same bytes up to the high watermark.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.faults.secured import ClientSide
from tests.integration.conftest import ClusterHandle

PARTITIONS = 3
# Below the ~22 s in which librdkafka's retry backoff can overflow into a fatal error under a
# long refusal (tests/partitions/librdkafka_backoff.py).
MESSAGE_TIMEOUT_MS = 20_000


def _indeterminate_codes() -> frozenset[int]:
    from confluent_kafka import KafkaError

    return frozenset(
        {KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT}
    )


INDETERMINATE = _indeterminate_codes()


@dataclass
class Deliveries:
    """What one producer was told about its sends, with when each acknowledgement came
    (``time.monotonic()``, one clock for every process on the machine) and librdkafka's own
    error reports. A plain value, so a producer in another process can hand it back as JSON."""

    acked: dict[int, list[tuple[int, bytes]]] = field(default_factory=dict)
    failed: set[bytes] = field(default_factory=set)
    indeterminate: set[bytes] = field(default_factory=set)
    sent: int = 0
    ack_times: list[tuple[float, int]] = field(default_factory=list)  # (time, partition)
    errors: list[str] = field(default_factory=list)  # error_cb reports
    fatal: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "acked": {p: [[o, v.decode()] for o, v in r] for p, r in self.acked.items()},
            "failed": sorted(v.decode() for v in self.failed),
            "indeterminate": sorted(v.decode() for v in self.indeterminate),
            "sent": self.sent,
            "ack_times": self.ack_times,
            "errors": self.errors,
            "fatal": self.fatal,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Deliveries:
        return cls(
            acked={int(p): [(o, v.encode()) for o, v in r] for p, r in raw["acked"].items()},
            failed={v.encode() for v in raw["failed"]},
            indeterminate={v.encode() for v in raw["indeterminate"]},
            sent=raw["sent"],
            ack_times=[(t, p) for t, p in raw["ack_times"]],
            errors=list(raw["errors"]),
            fatal=list(raw["fatal"]),
        )


def produce_until(
    bootstrap: str,
    topic: str,
    deliveries: Deliveries,
    stop: threading.Event,
    *,
    rate_per_s: int = 500,
    extra_config: dict[str, object] | None = None,
) -> None:
    """Send unique values at ``rate_per_s`` until ``stop`` is set, then flush (at most 60 s)."""
    from confluent_kafka import Producer

    lock = threading.Lock()

    def delivered(err: Any, msg: Any) -> None:
        with lock:
            if err is None:
                deliveries.acked.setdefault(msg.partition(), []).append((msg.offset(), msg.value()))
                deliveries.ack_times.append((time.monotonic(), msg.partition()))
            elif err.code() in INDETERMINATE:
                # A timed-out send may or may not have been written (Jepsen's "info").
                deliveries.indeterminate.add(msg.value())
            else:
                deliveries.failed.add(msg.value())

    def error(err: Any) -> None:
        with lock:
            deliveries.errors.append(f"{time.monotonic():.3f} {err.str()}")
            if err.fatal():
                deliveries.fatal.append(err.str())

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": MESSAGE_TIMEOUT_MS,
            "request.timeout.ms": 5_000,
            # Connection refusals are the point of these tests; keep librdkafka quiet.
            "log_level": 2,
            "error_cb": error,
            **(extra_config or {}),
        }
    )
    interval = 1.0 / rate_per_s
    while not stop.is_set():
        value = f"v{deliveries.sent:08d}".encode()
        try:
            producer.produce(topic, value=value, on_delivery=delivered)
        except BufferError:
            # The local queue is full while the cluster is unreachable: wait, do not count.
            producer.poll(0.1)
            continue
        deliveries.sent += 1
        producer.poll(0)
        time.sleep(interval)
    producer.flush(60)


@dataclass
class Workload:
    cluster: ClusterHandle
    topic: str = field(default_factory=lambda: f"faults-{uuid.uuid4().hex[:6]}")
    deliveries: Deliveries = field(default_factory=Deliveries)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @property
    def acked(self) -> dict[int, list[tuple[int, bytes]]]:
        return self.deliveries.acked

    @property
    def failed(self) -> set[bytes]:
        return self.deliveries.failed

    @property
    def indeterminate(self) -> set[bytes]:
        return self.deliveries.indeterminate

    @property
    def sent(self) -> int:
        return self.deliveries.sent

    def create_topic(self) -> None:
        self.cluster.create_topic(
            self.topic,
            partitions=PARTITIONS,
            replication_factor=3,
            config={"min.insync.replicas": "2", "unclean.leader.election.enable": "false"},
        )

    @property
    def _clients(self) -> ClientSide | None:
        """The secured cluster's client side (``tests.faults.secured``), if it is one."""
        clients: ClientSide | None = getattr(self.cluster, "clients", None)
        return clients

    @property
    def bootstrap(self) -> str:
        return self._clients.bootstrap if self._clients else self.cluster.bootstrap

    def start(self, rate_per_s: int = 500) -> None:
        extra = dict(self._clients.confluent) if self._clients else {}
        self._thread = threading.Thread(
            target=produce_until,
            args=(self.bootstrap, self.topic, self.deliveries, self._stop),
            kwargs={"rate_per_s": rate_per_s, "extra_config": extra},
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(90)

    def read_all(self, timeout_s: float = 60) -> dict[int, list[tuple[int, bytes]]]:
        from kafka import KafkaConsumer, TopicPartition

        security = self._clients.kafka_python if self._clients else {}
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap, enable_auto_commit=False, **security
        )
        tps = [TopicPartition(self.topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < end[tp] for tp in tps):
            assert time.monotonic() < deadline, "could not read the topic back"
            for tp, records in consumer.poll(timeout_ms=1000).items():
                got[tp.partition].extend((r.offset, r.value) for r in records)
        consumer.close()
        return got

    def validate(self, what: str) -> None:
        got = self.read_all()
        read_values = [v for records in got.values() for _, v in records]
        acked_values = {v for records in self.acked.values() for _, v in records}
        missing = acked_values - set(read_values)
        duplicated = len(read_values) - len(set(read_values))
        unknown_offsets = sum(o is None for records in self.acked.values() for o, _ in records)
        phantom = self.failed & set(read_values)
        print(
            f"[{what}] sent={self.sent} acknowledged={len(acked_values)} failed={len(self.failed)} "
            f"timed-out={len(self.indeterminate)} "
            f"read={len(read_values)} lost={len(missing)} duplicated={duplicated} "
            f"failed-but-read={len(phantom)} acks-without-offset={unknown_offsets}"
        )
        assert not missing, f"acknowledged records lost: {sorted(missing)[:5]}"
        assert duplicated == 0, "a value was read twice"
        assert not phantom, f"records from failed sends were read: {sorted(phantom)[:5]}"
        for p, records in got.items():
            offsets = [o for o, _ in records]
            assert offsets == sorted(set(offsets)), f"partition {p}: offsets went backwards"
            by_offset = dict(records)
            for offset, value in self.acked.get(p, []):
                # librdkafka reports no offset for some deliveries (retried idempotent batches).
                if offset is not None and offset >= 0:
                    assert by_offset.get(offset) == value, f"partition {p}: offset {offset} changed"
        self.check_replicas_identical()

    def check_replicas_identical(self, timeout_s: float = 30) -> None:
        """Every replica's log bytes are identical once the replicas have caught up."""
        deadline = time.monotonic() + timeout_s
        while True:
            mismatched = [p for p in range(PARTITIONS) if not self._replicas_agree(p)]
            if not mismatched:
                return
            assert time.monotonic() < deadline, f"replicas differ for partitions {mismatched}"
            time.sleep(0.5)

    def _replicas_agree(self, partition: int) -> bool:
        state = self.cluster.partition_state(self.topic, partition)
        if len(state.isr) < 3:
            return False
        contents = []
        for broker in self.cluster.local.brokers():
            directory = Path(broker.data_dir) / f"{self.topic}-{partition}"
            data = b""
            for segment in sorted(directory.glob("*.log")):
                data += segment.read_bytes()
            contents.append(data)
        # With the producer stopped and the ISR full, every replica holds the whole log, which
        # is then all below the high watermark: the bytes must be identical.
        return bool(contents[0]) and all(c == contents[0] for c in contents)
