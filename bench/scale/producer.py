"""The acks=all producer of the recovery phases, in a process of its own (so the benchmark's
polling never delays its callbacks): confluent-kafka cycling records over every partition at a
fixed rate, each record stamped when sent and when answered.

``message.timeout.ms`` is far beyond any phase, so a record is never expired by the client: a
slow recovery shows as latency, a refusal (NOT_ENOUGH_REPLICAS...) as an error.
"""

from __future__ import annotations

import functools
import multiprocessing
import multiprocessing.synchronize
import time
from collections.abc import Sequence
from pathlib import Path

from bench.scale.stats import Send

MESSAGE_TIMEOUT_MS = 3_600_000
# Beyond the flush, for the child to write its records out.
EXIT_S = 30.0
NOT_ANSWERED = "-"


def produce(
    bootstrap: str,
    partitions: Sequence[tuple[str, int]],
    rate_per_s: float,
    out: Path,
    stop: multiprocessing.synchronize.Event,
    acknowledged: multiprocessing.synchronize.Event,
    flush_s: float,
) -> None:
    """Runs in the child: produce until ``stop``, flush for up to ``flush_s``, write one line
    per record (topic index, partition, sent, answered or ``-``, error or ``-``) to ``out``."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": MESSAGE_TIMEOUT_MS,
            "log_level": 2,
        }
    )
    topics = sorted({t for t, _ in partitions})
    topic_index = {t: i for i, t in enumerate(topics)}
    sent: list[float] = []
    answered: list[float | None] = []
    errors: list[str | None] = []

    def delivered(i: int, err, msg) -> None:  # type: ignore[no-untyped-def]
        answered[i] = time.monotonic()
        errors[i] = None if err is None else err.name()
        if err is None:
            acknowledged.set()

    interval_s = 1.0 / rate_per_s
    next_s = time.monotonic()
    i = 0
    while not stop.is_set():
        topic, partition = partitions[i % len(partitions)]
        sent.append(time.monotonic())
        answered.append(None)
        errors.append(None)
        while True:
            try:
                producer.produce(
                    topic,
                    value=b"%d" % i,
                    partition=partition,
                    on_delivery=functools.partial(delivered, i),
                )
                break
            except BufferError:
                # librdkafka's queue is full: the cluster is that far behind; wait for answers.
                producer.poll(0.1)
        i += 1
        next_s += interval_s
        producer.poll(max(0.0, next_s - time.monotonic()))
    producer.flush(flush_s)
    with out.open("w") as f:
        for k in range(i):
            topic, partition = partitions[k % len(partitions)]
            done = NOT_ANSWERED if answered[k] is None else f"{answered[k]:.6f}"
            error = errors[k] or NOT_ANSWERED
            f.write(f"{topic_index[topic]} {partition} {sent[k]:.6f} {done} {error}\n")


def read(path: Path) -> list[Send]:
    sends = []
    for line in path.read_text().splitlines():
        topic, partition, sent, answered, error = line.split()
        sends.append(
            Send(
                partition=(int(topic), int(partition)),
                sent_s=float(sent),
                answered_s=None if answered == NOT_ANSWERED else float(answered),
                error=None if error == NOT_ANSWERED else error,
            )
        )
    return sends


class ProducerProcess:
    """Start, then ``stop()`` to get every record's send and answer."""

    def __init__(
        self,
        bootstrap: str,
        partitions: Sequence[tuple[str, int]],
        rate_per_s: float,
        out: Path,
        flush_s: float,
    ) -> None:
        """``flush_s``: how long the records still unanswered when sending stops are waited
        for; those still unanswered then are reported as such."""
        context = multiprocessing.get_context("spawn")
        self.out = out
        self.flush_s = flush_s
        self._stop = context.Event()
        self.acknowledged = context.Event()
        self._process = context.Process(
            target=produce,
            args=(
                bootstrap,
                list(partitions),
                rate_per_s,
                out,
                self._stop,
                self.acknowledged,
                flush_s,
            ),
            daemon=True,
        )
        self._process.start()

    def wait_acknowledged(self, timeout_s: float) -> bool:
        """Whether a first record was acknowledged within ``timeout_s`` (the producer is up)."""
        return self.acknowledged.wait(timeout_s)

    def stop(self) -> tuple[list[Send], float]:
        """Every record, and when the producer gave up waiting for the unanswered ones."""
        self._stop.set()
        self._process.join(self.flush_s + EXIT_S)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        return (read(self.out) if self.out.exists() else []), time.monotonic()
