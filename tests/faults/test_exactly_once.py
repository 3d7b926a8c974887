"""Exactly-once processing through kill -9: a consume-transform-produce loop (read topic A, write
topic B and the consumed offsets in one transaction) while its processor, then the transaction
coordinator's broker, then a leader of B are killed and restarted. B, as read_committed consumers
see it, holds the output of every acknowledged input exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse

from tests.faults.eos_processor import STUCK
from tests.integration.conftest import ClusterHandle
from tests.integration.wire import request_once

pytestmark = pytest.mark.faults

PARTITIONS = 3
INPUT_RATE_PER_S = 300
TRANSACTION_KEY_TYPE = 1


class InputWriter(threading.Thread):
    """Writes increasing integers to the input topic; remembers which were acknowledged."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
        )
        self.acked: set[int] = set()
        self.sent = 0
        self.halt = threading.Event()

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.add(int(msg.value()))

    def run(self) -> None:
        while not self.halt.is_set():
            self.producer.produce(
                self.topic,
                str(self.sent).encode(),
                partition=self.sent % PARTITIONS,
                on_delivery=self._delivered,
            )
            self.sent += 1
            self.producer.poll(0)
            time.sleep(1 / INPUT_RATE_PER_S)
        self.producer.flush(60)

    def stop(self) -> None:
        self.halt.set()
        self.join(90)


class Processor:
    """The processor as a process of its own, so that it can be killed -9."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.args, self.log = args, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self.start()

    def start(self) -> None:
        with self.log.open("ab") as out:
            debug = os.environ.get("PAFKA_EOS_PROCESSOR_DEBUG", "")
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.faults.eos_processor",
                    *self.args,
                    f"--debug={debug}",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def check_alive(self) -> None:
        """A processor whose client hung exits STUCK and is restarted, as a supervisor (a
        liveness probe) would; any other exit fails the test."""
        assert self.proc is not None
        code = self.proc.poll()
        if code == STUCK:
            self.restarts += 1
            self.start()
            return
        assert code is None, self.log.read_text(errors="replace")[-4000:]


def committed_total(bootstrap: str, group: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
        return sum(max(tp.offset, 0) for tp in found)
    finally:
        c.close()


def log_end_total(bootstrap: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"ends-{uuid.uuid4()}"})
    try:
        return sum(
            c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(PARTITIONS)
        )
    finally:
        c.close()


def wait_progress(
    bootstrap: str, group: str, topic: str, more: int, timeout_s: float, processor: Processor
) -> None:
    """Until the group committed ``more`` offsets; a processor that died says so at once,
    with its log."""
    start = committed_total(bootstrap, group, topic)
    deadline = time.monotonic() + timeout_s
    while committed_total(bootstrap, group, topic) < start + more:
        processor.check_alive()
        assert time.monotonic() < deadline, (
            f"the processor committed fewer than {more} more; its log ends:\n"
            + processor.log.read_text(errors="replace")[-6000:]
        )
        time.sleep(0.5)


def transaction_coordinator(cluster: ClusterHandle, transactional_id: str) -> int:
    req = FindCoordinatorRequest[1](key=transactional_id, key_type=TRANSACTION_KEY_TYPE)
    for broker in cluster.broker_ids():
        try:
            answer = request_once(cluster.broker_address(broker), req, FindCoordinatorResponse, 1)
        except OSError:
            continue
        if answer.error_code == 0:
            return int(answer.node_id)
    raise AssertionError(f"no broker names a coordinator for {transactional_id}")


def read_committed(bootstrap: str, topic: str, quiet_s: float = 5.0) -> list[str]:
    """Every record a read_committed consumer reads from the start, once quiet for
    ``quiet_s``."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4()}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        got: list[str] = []
        quiet = time.monotonic()
        while time.monotonic() - quiet < quiet_s:
            for msg in c.consume(1000, timeout=0.5):
                assert msg.error() is None, msg.error()
                got.append((msg.value() or b"").decode())
                quiet = time.monotonic()
        return got
    finally:
        c.close()


def test_kill_9_of_processor_coordinator_and_leader_keeps_exactly_once(
    fault_cluster: ClusterHandle, tmp_path: Path
) -> None:
    cluster = fault_cluster
    source, sink = (f"eos-{n}-{uuid.uuid4().hex[:6]}" for n in ("in", "out"))
    for topic in (source, sink):
        cluster.create_topic(
            topic, partitions=PARTITIONS, replication_factor=3, config={"min.insync.replicas": "2"}
        )
    group, txn_id = f"eos-group-{uuid.uuid4().hex[:6]}", f"eos-{uuid.uuid4().hex[:6]}"
    boot = cluster.bootstrap
    writer = InputWriter(boot, source)
    writer.start()
    processor = Processor([boot, source, sink, group, txn_id], tmp_path / "proc.log")
    try:
        wait_progress(boot, group, source, 500, 120, processor)
        # 1. The processor dies mid-stream; a new instance fences it and goes on.
        processor.kill()
        processor.start()
        wait_progress(boot, group, source, 500, 120, processor)
        # 2. The transaction coordinator's broker dies; coordination moves.
        victim = transaction_coordinator(cluster, txn_id)
        cluster.local.kill(f"broker-{victim}", signal.SIGKILL)
        wait_progress(boot, group, source, 500, 180, processor)
        cluster.local.restart(f"broker-{victim}")
        # 3. A leader of the output topic dies.
        leader = cluster.partition_state(sink, 0).leader
        cluster.local.kill(f"broker-{leader}", signal.SIGKILL)
        wait_progress(boot, group, source, 500, 180, processor)
        cluster.local.restart(f"broker-{leader}")
        processor.check_alive()
        writer.stop()
        # The processor catches up with everything written.
        end = log_end_total(boot, source)
        deadline = time.monotonic() + 180
        while committed_total(boot, group, source) < end:
            assert time.monotonic() < deadline, "the processor did not catch up"
            processor.check_alive()
            time.sleep(0.5)
    finally:
        writer.stop()
        if processor.proc is not None and processor.proc.poll() is None:
            processor.kill()

    output = Counter(read_committed(boot, sink))
    twice = {value: n for value, n in output.items() if n > 1}
    assert not twice, f"written more than once: {sorted(twice)[:20]}"
    missing = {f"out-{v}" for v in writer.acked} - set(output)
    assert not missing, f"acknowledged inputs without output: {sorted(missing)[:20]}"
    unknown = set(output) - {f"out-{v}" for v in range(writer.sent)}
    assert not unknown, f"output of no input: {sorted(unknown)[:20]}"
