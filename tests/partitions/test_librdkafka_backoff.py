"""librdkafka's message retry backoff and its overflow, against what the suite's runs logged."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.faults.workload import MESSAGE_TIMEOUT_MS
from tests.partitions.librdkafka_backoff import (
    backoff_ms,
    first_overflowing_attempt,
    min_time_to_fail_ms,
    overflows,
)


def test_backoff_doubles_up_to_the_cap() -> None:
    assert [backoff_ms(r, 100, 1000) for r in range(1, 7)] == [100, 200, 400, 800, 1000, 1000]
    assert backoff_ms(1, 100, 1000, jitter_percent=80) == 80
    assert backoff_ms(25, 100, 1000) == 1000


def test_the_26th_failed_attempt_overflows_at_the_default_backoff() -> None:
    """The run that went fatal logged 26 failed attempts for the batch's first message, whose
    backoff came out negative (due at once), and 22 for the first message not added."""
    assert first_overflowing_attempt(100) == 26
    assert backoff_ms(26, 100, 1000) < 0 < backoff_ms(22, 100, 1000)
    assert [backoff_ms(r, 100, 1000) <= 0 for r in (26, 27, 30, 31, 32)] == [True] * 5
    assert [backoff_ms(r, 100, 1000) for r in (28, 29, 33, 36)] == [1000, 1000, 100, 800]


@given(st.integers(min_value=1, max_value=10_000))
def test_overflow_starts_where_the_product_leaves_int(retry_backoff_ms: int) -> None:
    first = first_overflowing_attempt(retry_backoff_ms)
    assert overflows(first, retry_backoff_ms)
    assert not any(overflows(r, retry_backoff_ms) for r in range(1, first))
    assert all(backoff_ms(r, retry_backoff_ms, 10**6) > 0 for r in range(1, first))


def test_no_workload_message_lives_long_enough_to_overflow() -> None:
    """At the defaults a message needs at least 22.2 s of failed attempts to reach the 26th;
    the workload's messages time out before (the suite reproduced the fatal error at 30 s)."""
    needed_ms = min_time_to_fail_ms(first_overflowing_attempt(100), 100, 1000)
    assert needed_ms == 22_200
    assert MESSAGE_TIMEOUT_MS < needed_ms < 30_000
