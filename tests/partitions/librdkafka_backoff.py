"""librdkafka's retry backoff for a produced message, and when it overflows (pure arithmetic).

librdkafka (2.16, and its sources as of mid-2026) computes a failed message's next backoff in
``rd_kafka_retry_msgq`` as ``(1 << (retries - 1)) * retry.backoff.ms`` in 32-bit C ``int``,
times one jitter of 80-120 % for the whole failed batch, capped at ``retry.backoff.max.ms``.
At the default 100 ms the product passes 2**31 - 1 at the 26th failed attempt of a message: it
wraps negative (26, 27, 30), to zero (31, 32) or to a small value (33-36), where it should be
capped at one second.

That alone is harmless while a retried batch's messages have all failed equally often. They
stop doing so once messages time out under a long refusal (NOT_ENOUGH_REPLICAS for a leader cut
from its followers, as Kafka answers too): librdkafka bumps the epoch and sends a fresh batch
from the oldest message left, mixing old messages with many failed attempts and young ones with
few. When that batch fails, its first messages can get an overflowed backoff, due at once, and
later ones a full second; the immediate retry must rebuild the batch identically, stops at the
first message not yet due and raises the fatal error ``_INCONSISTENT: Unable to reconstruct
MessageSet``. The partition suite reproduced it with ``message.timeout.ms`` 30000 (about 53 s
into a 60 s cut, every run) and ``retry.backoff.max.ms`` 100 (about 21 s into the cut).

So a producer under the suite's cuts stays safe as long as no message can live through 26
failed attempts: ``message.timeout.ms`` below ``min_time_to_fail_ms(first_overflowing_attempt())``.
"""

from __future__ import annotations

JITTER_MIN_PERCENT = 80
JITTER_MAX_PERCENT = 120
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def _c_int32(value: int) -> int:
    """What a 32-bit two's-complement ``int`` holds after an overflowing result."""
    return (value - INT32_MIN) % 2**32 + INT32_MIN


def backoff_ms(
    retries: int, retry_backoff_ms: int, retry_backoff_max_ms: int, jitter_percent: int = 100
) -> float:
    """The backoff librdkafka gives a message after its ``retries``-th failed attempt, in
    milliseconds (negative: already due). The shift count is taken modulo 32, as x86 does."""
    if retries > 0:
        base = _c_int32(_c_int32(1 << ((retries - 1) % 32)) * retry_backoff_ms)
    else:
        base = retry_backoff_ms
    return float(min(jitter_percent * base * 10, retry_backoff_max_ms * 1000)) / 1000


def overflows(retries: int, retry_backoff_ms: int) -> bool:
    """Whether the backoff after ``retries`` failed attempts is computed past ``int``."""
    return retries > 0 and (1 << (retries - 1)) * retry_backoff_ms > INT32_MAX


def first_overflowing_attempt(retry_backoff_ms: int = 100) -> int:
    """The first failed attempt whose backoff overflows (26 at the default 100 ms)."""
    retries = 1
    while not overflows(retries, retry_backoff_ms):
        retries += 1
    return retries


def min_time_to_fail_ms(
    attempts: int, retry_backoff_ms: int = 100, retry_backoff_max_ms: int = 1000
) -> float:
    """The shortest time from a message's first failed attempt to its ``attempts``-th: every
    backoff at the lowest jitter, answers taking no time."""
    return sum(
        backoff_ms(r, retry_backoff_ms, retry_backoff_max_ms, JITTER_MIN_PERCENT)
        for r in range(1, attempts)
    )
