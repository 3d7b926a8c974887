"""The pafka-kafka benchmark driver's client settings (pure: no cluster)."""

from __future__ import annotations

from bench.compare.pafka_kafka import (
    LINGER_MS,
    PACED_LINGER_MS,
    consumer_config,
    linger_ms,
    producer_config,
)
from bench.compare.workloads import make, paced


def test_unpaced_runs_linger_for_full_batches() -> None:
    workload = make(100, 6, 2, 2, "1", 1, 1000)
    assert linger_ms(workload) == LINGER_MS
    assert producer_config("b:9092", workload)["linger.ms"] == LINGER_MS


def test_paced_runs_linger_the_minimum_whatever_the_shape() -> None:
    # Sticky runs fill a partition's batch within the linger at any rate and partition count.
    for partitions, producers in [(1, 1), (6, 2)]:
        workload = paced(make(100, partitions, producers, 1, "1", 1, 1000), 372_000, 10)
        assert linger_ms(workload) == PACED_LINGER_MS
        assert producer_config("b:9092", workload)["linger.ms"] == PACED_LINGER_MS


def test_consumers_do_not_back_off_for_a_second() -> None:
    assert consumer_config("b:9092", "t")["fetch.queue.backoff.ms"] == 1


def test_consumers_are_static_members_one_per_worker() -> None:
    ids = {consumer_config("b:9092", "t", worker)["group.instance.id"] for worker in range(3)}
    assert len(ids) == 3
