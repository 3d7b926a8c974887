"""The pafka-kafka benchmark driver's client settings (pure: no cluster)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bench.compare.pafka_kafka import (
    LINGER_MS,
    MIN_LINGER_MS,
    PACED_BATCH_RECORDS,
    consumer_config,
    linger_ms,
    producer_config,
)
from bench.compare.workloads import make, paced


def test_unpaced_runs_linger_for_full_batches() -> None:
    workload = make(100, 6, 2, 2, "1", 1, 1000)
    assert linger_ms(workload) == LINGER_MS
    assert producer_config("b:9092", workload)["linger.ms"] == LINGER_MS


def test_a_fast_single_partition_run_lingers_the_minimum() -> None:
    workload = paced(make(100, 1, 1, 1, "1", 1, 1000), 372_000, 10)
    assert linger_ms(workload) == MIN_LINGER_MS


def test_six_partitions_over_two_producers_linger_longer() -> None:
    # 300k/s over 2 producers and 6 partitions: 25 records per partition per ms.
    workload = paced(make(100, 6, 2, 2, "1", 1, 1000), 300_000, 10)
    assert linger_ms(workload) == 4


@given(
    rate_per_s=st.floats(min_value=1, max_value=5e6),
    partitions=st.sampled_from([1, 6]),
    producers=st.sampled_from([1, 2]),
)
def test_paced_linger_is_bounded_and_gathers_a_batch_when_it_can(
    rate_per_s: float, partitions: int, producers: int
) -> None:
    workload = paced(make(100, partitions, producers, 1, "1", 1, 1000), rate_per_s, 1)
    linger = linger_ms(workload)
    assert MIN_LINGER_MS <= linger <= LINGER_MS
    per_partition_per_ms = rate_per_s / (producers * partitions) / 1000
    if linger < LINGER_MS:
        assert per_partition_per_ms * linger >= PACED_BATCH_RECORDS


def test_consumers_do_not_back_off_for_a_second() -> None:
    assert consumer_config("b:9092", "t")["fetch.queue.backoff.ms"] == 1
