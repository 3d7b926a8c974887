"""The broker's descriptor limit: raised to the hard limit, and one warning per crossing."""

from __future__ import annotations

import logging
import os
import resource
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.broker.descriptors import (
    REARM_RATIO,
    WARN_RATIO,
    Crossing,
    DescriptorMonitor,
    count_open_descriptors,
    crossing,
    raise_soft_limit,
)


def test_crossing_table() -> None:
    assert crossing(False, 79, 100) is Crossing.NONE
    assert crossing(False, 80, 100) is Crossing.ABOVE
    assert crossing(True, 95, 100) is Crossing.NONE  # already warned
    assert crossing(True, 70, 100) is Crossing.NONE  # between the thresholds: still warned
    assert crossing(True, 69, 100) is Crossing.BELOW
    assert crossing(False, 10, 0) is Crossing.NONE  # no limit known


@given(
    limit=st.integers(min_value=1, max_value=100_000),
    fractions=st.lists(st.floats(min_value=0, max_value=1.2), max_size=60),
)
def test_one_warning_per_crossing(limit: int, fractions: list[float]) -> None:
    warned = False
    for fraction in fractions:
        count = int(fraction * limit)
        change = crossing(warned, count, limit)
        if change is Crossing.ABOVE:
            assert not warned and count >= WARN_RATIO * limit
            warned = True
        elif change is Crossing.BELOW:
            assert warned and count < REARM_RATIO * limit
            warned = False
        else:
            # Nothing to say: not warned and under the threshold, or warned and not yet back.
            assert (not warned and count < WARN_RATIO * limit) or (
                warned and count >= REARM_RATIO * limit
            )


@pytest.fixture
def soft_limit() -> Iterator[tuple[int, int]]:
    """The process's (soft, hard) open files limits, restored after the test."""
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    yield limits
    resource.setrlimit(resource.RLIMIT_NOFILE, limits)


def test_the_soft_limit_is_raised_to_the_hard_limit(
    soft_limit: tuple[int, int], caplog: pytest.LogCaptureFixture
) -> None:
    hard = soft_limit[1]
    if hard == resource.RLIM_INFINITY or hard < 64:
        pytest.skip(f"needs a finite hard limit on open files, not {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard // 2, hard))
    with caplog.at_level(logging.INFO, logger="services.broker.descriptors"):
        change = raise_soft_limit()
    assert (change.soft_before, change.soft_after, change.hard) == (hard // 2, hard, hard)
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
    assert f"raised from {hard // 2} to the hard limit {hard}" in caplog.text


def test_the_monitor_warns_once_near_the_limit_and_again_after_falling_back(
    soft_limit: tuple[int, int], caplog: pytest.LogCaptureFixture
) -> None:
    open_now = count_open_descriptors()
    if open_now is None:
        pytest.skip("no /proc/self/fd to count descriptors with")
    limit = open_now + 100
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, soft_limit[1]))
    monitor = DescriptorMonitor()
    held: list[int] = []

    def hold_until(fraction: float) -> None:
        while (count_open_descriptors() or 0) < fraction * limit:
            held.append(os.open(os.devnull, os.O_RDONLY))

    def release_until(fraction: float) -> None:
        while held and (count_open_descriptors() or 0) >= fraction * limit:
            os.close(held.pop())

    try:
        with caplog.at_level(logging.INFO, logger="services.broker.descriptors"):
            assert monitor.check() is Crossing.NONE
            hold_until(WARN_RATIO)
            assert [monitor.check() for _ in range(3)] == [Crossing.ABOVE] + [Crossing.NONE] * 2
            release_until(REARM_RATIO)
            assert monitor.check() is Crossing.BELOW
            hold_until(0.9)
            assert monitor.check() is Crossing.ABOVE
    finally:
        for fd in held:
            os.close(fd)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert f"of {limit} open file descriptors in use" in warnings[0].getMessage()
