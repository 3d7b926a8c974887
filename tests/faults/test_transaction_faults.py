"""Transactions through process failures: the coordinator's broker killed -9 while commits are in
flight, again and again; a producer killed -9 in the middle of its transaction, which its
timeout must abort so that the partition does not stay unreadable to read_committed consumers."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer

from tests.faults.conftest import fault_cluster_with
from tests.faults.eos_processor import retried
from tests.faults.test_exactly_once import read_committed, transaction_coordinator
from tests.integration.conftest import ClusterHandle

pytestmark = pytest.mark.faults

PARTITIONS = 3
TRANSACTION_RECORDS = 30
ABORT_SWEEP_MS = 1000


@pytest.fixture
def txn_fault_cluster(tmp_path: Path) -> Iterator[ClusterHandle]:
    env = {
        "PAFKA_BROKER_REPLICA_LAG_TIME_MAX_MS": "5000",
        "PAFKA_BROKER_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS": str(
            ABORT_SWEEP_MS
        ),
    }
    with fault_cluster_with(tmp_path, env) as handle:
        yield handle


def test_the_coordinators_broker_killed_mid_commit_loses_and_duplicates_nothing(
    txn_fault_cluster: ClusterHandle,
) -> None:
    cluster = txn_fault_cluster
    topic = f"txn-kill-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(
        topic, partitions=PARTITIONS, replication_factor=3, config={"min.insync.replicas": "2"}
    )
    txn_id = f"killed-coordinator-{uuid.uuid4().hex[:6]}"
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "transactional.id": txn_id,
            "transaction.timeout.ms": 60_000,
            "linger.ms": 5,
        }
    )
    producer.init_transactions(60)
    committed: list[str] = []
    aborted: list[str] = []
    stop = threading.Event()
    kills: list[int] = []

    def killer() -> None:
        """Three times: wait, kill the coordinator's broker -9, restart it."""
        for _ in range(3):
            if stop.wait(3.0):
                return
            victim = transaction_coordinator(cluster, txn_id)
            cluster.local.kill(f"broker-{victim}", signal.SIGKILL)
            kills.append(victim)
            if stop.wait(4.0):
                return
            cluster.local.restart(f"broker-{victim}")

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    n = 0
    deadline = time.monotonic() + 180
    try:
        while thread.is_alive() and time.monotonic() < deadline:
            values = [f"{n}-{i}" for i in range(TRANSACTION_RECORDS)]
            n += 1
            try:
                retried(producer.begin_transaction)
                for i, value in enumerate(values):
                    producer.produce(topic, value.encode(), partition=i % PARTITIONS)
                retried(producer.commit_transaction, 60)
                committed += values
            except KafkaException as exc:
                error = exc.args[0]
                assert not error.fatal(), error
                assert error.txn_requires_abort(), error
                retried(producer.abort_transaction, 60)
                aborted += values
    finally:
        stop.set()
        thread.join(120)
    assert len(kills) == 3, f"the coordinator was killed {len(kills)} times"
    assert committed, "no transaction committed"

    seen = Counter(read_committed(cluster.bootstrap, topic))
    twice = sorted(v for v, k in seen.items() if k > 1)
    assert not twice, f"read more than once: {twice[:10]}"
    assert set(seen) == set(committed), (
        f"missing {sorted(set(committed) - set(seen))[:10]}, "
        f"aborted yet read {sorted(set(seen) & set(aborted))[:10]}"
    )


HANGING_PRODUCER = textwrap.dedent(
    """
    import sys, time
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": sys.argv[3],
                  "transaction.timeout.ms": 5000})
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(10):
        p.produce(sys.argv[2], f"hanging-{i}".encode(), partition=0)
    p.flush(30)
    print("written", flush=True)
    time.sleep(3600)
    """
)


def test_a_producer_killed_mid_transaction_is_aborted_by_its_timeout(
    txn_fault_cluster: ClusterHandle,
) -> None:
    cluster = txn_fault_cluster
    topic = f"txn-hang-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    hanging = subprocess.Popen(
        [sys.executable, "-c", HANGING_PRODUCER, cluster.bootstrap, topic, f"hang-{uuid.uuid4()}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert hanging.stdout is not None
        assert hanging.stdout.readline().strip() == b"written"
    finally:
        hanging.send_signal(signal.SIGKILL)
        hanging.wait(30)
    plain = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True})
    for i in range(5):
        plain.produce(topic, f"after-{i}".encode(), partition=0)
    plain.flush(30)
    killed_at = time.monotonic()

    # The open transaction holds partition 0 back for read_committed consumers ...
    assert read_committed(cluster.bootstrap, topic, quiet_s=1.0) == []
    # ... until its 5 s timeout aborts it (the sweep runs every second).
    deadline = killed_at + 60
    seen: list[str] = []
    while not seen:
        assert time.monotonic() < deadline, "the hanging transaction was never aborted"
        seen = read_committed(cluster.bootstrap, topic, quiet_s=1.0)
    assert sorted(seen) == sorted(f"after-{i}" for i in range(5))
