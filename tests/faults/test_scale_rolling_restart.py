"""A rolling restart of every broker at 2,000 partitions under acks=all writes (issue 15).

20 topics of 100 partitions, RF 3, min.insync.replicas 2; an idempotent acks=all producer in
its own process cycles over every partition. Each broker in turn gets SIGTERM (controlled
shutdown), is started again, and is waited for (bounded) until it is back in every ISR before
the next one goes. Then: every acknowledged record is read back, no write was refused
(NOT_ENOUGH_REPLICAS, ...) and none waited longer than 10 s for its acknowledgement, from each
record's send and answer times.
"""

from __future__ import annotations

import functools
import signal
import time
import uuid
from pathlib import Path

import pytest

from bench.scale.observe import PartitionStates, TopicPartition, stamp_events
from bench.scale.producer import ProducerProcess
from bench.scale.stats import Send
from pafka.admin import topics as admin
from tests.integration.conftest import ClusterHandle

pytestmark = pytest.mark.faults

TOPICS = 20
PARTITIONS_PER_TOPIC = 100
RATE_PER_S = 400.0
# Issue 15's acceptance bar: no acks=all write refused or unacknowledged for longer than this.
MAX_WAIT_S = 10.0
CREATE_TIMEOUT_S = 180.0
ISR_FULL_TIMEOUT_S = 120.0
READ_BACK_TIMEOUT_S = 180.0
PAUSE_BETWEEN_BROKERS_S = 2.0
# Records still unanswered when the rolling restart ends are waited for this long (they fail
# the bar anyway; waiting tells how late they are, or whether they come at all).
FLUSH_S = 60.0


def _create(cluster: ClusterHandle) -> PartitionStates:
    prefix = f"scale-rolling-{uuid.uuid4().hex[:6]}"
    assignment: dict[TopicPartition, tuple[int, ...]] = {}
    for i in range(TOPICS):
        node = admin.create_topic(
            cluster.zk,
            f"{prefix}-{i:02d}",
            PARTITIONS_PER_TOPIC,
            3,
            {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"},
        )
        assignment.update({(f"{prefix}-{i:02d}", p): r for p, r in node.partitions.items()})
    return PartitionStates(cluster.zk, assignment)


def _read_back(bootstrap: str, partitions: list[TopicPartition], wanted: int) -> set[bytes]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-back-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "log_level": 2,
        }
    )
    consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in partitions])
    seen: set[bytes] = set()
    deadline = time.monotonic() + READ_BACK_TIMEOUT_S
    try:
        while len(seen) < wanted and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=10_000, timeout=1.0):
                value = message.value()
                if message.error() is None and value is not None:
                    seen.add(bytes(value))
    finally:
        consumer.close()
    return seen


def test_rolling_restart_at_2000_partitions_refuses_and_loses_nothing(
    fault_cluster: ClusterHandle, tmp_path: Path
) -> None:
    states = _create(fault_cluster)
    created = stamp_events(
        {"isr_full": states.all_led_and_full}, time.monotonic(), CREATE_TIMEOUT_S
    )
    assert created["isr_full"] is not None, "2,000 partitions not led with full ISRs in time"
    partitions = sorted(states.assignment)
    producer = ProducerProcess(
        fault_cluster.bootstrap, partitions, RATE_PER_S, tmp_path / "p.txt", FLUSH_S
    )
    problems: list[str] = []
    try:
        assert producer.wait_acknowledged(60), "the producer had nothing acknowledged"
        for broker_id in fault_cluster.broker_ids():
            time.sleep(PAUSE_BETWEEN_BROKERS_S)
            fault_cluster.local.kill(f"broker-{broker_id}", signal.SIGTERM)
            fault_cluster.local.restart(f"broker-{broker_id}")
            # Back in an ISR means named in one written since it registered again.
            back = stamp_events(
                {"isr_full": functools.partial(states.all_full_after_registration, broker_id)},
                time.monotonic(),
                ISR_FULL_TIMEOUT_S,
            )
            print(f"broker {broker_id}: every ISR full {back['isr_full']} s after its restart")
            if back["isr_full"] is None:
                # Restarting the next broker would take partitions below min.insync.replicas:
                # that would test something else.
                problems.append(
                    f"broker {broker_id} not back in every ISR within {ISR_FULL_TIMEOUT_S:g} s"
                )
                break
    finally:
        sends, ended_s = producer.stop()

    acked = [k for k, s in enumerate(sends) if s.answered_s is not None and s.error is None]
    refused = [s for s in sends if s.error is not None]
    waits = [_waited_s(s, ended_s) for s in sends]
    slow = [w for w in waits if w > MAX_WAIT_S]
    # The producer's record k carries the value b"k" (bench.scale.producer).
    got = _read_back(fault_cluster.bootstrap, partitions, len(acked))
    lost = [k for k in acked if b"%d" % k not in got]
    print(
        f"sent={len(sends)} acknowledged={len(acked)} refused={len(refused)} "
        f"slower than {MAX_WAIT_S:g} s={len(slow)} longest wait={max(waits, default=0):.1f} s "
        f"read={len(got)} lost={len(lost)}"
    )
    assert sends, "nothing was sent"
    assert not lost, f"acknowledged records lost: {lost[:5]}"
    assert not refused, f"acks=all writes refused: {sorted({str(s.error) for s in refused})}"
    assert not slow, f"{len(slow)} writes waited longer than {MAX_WAIT_S:g} s (max {max(slow):.1f})"
    assert not problems, problems


def _waited_s(send: Send, ended_s: float) -> float:
    """How long a write waited for its answer (until the producer gave up, if never)."""
    return (ended_s if send.answered_s is None else send.answered_s) - send.sent_s
