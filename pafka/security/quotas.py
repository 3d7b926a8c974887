"""Client quotas, pure: which configured entity limits a request, and Kafka's rate and throttle.

Quotas live in entity configs (``/config/users/{user}/clients/{client}`` and the rest, with
``<default>`` standing for any user or client id). A request from user U with client id C is
limited by the first entity of Kafka's precedence that has a quota of the type in question::

    1. /config/users/U/clients/C          5. /config/users/<default>/clients/<default>
    2. /config/users/U/clients/<default>  6. /config/users/<default>
    3. /config/users/U                    7. /config/clients/C
    4. /config/users/<default>/clients/C  8. /config/clients/<default>

Clients share a rate sensor when their quota comes from a shared entity: Kafka keys the sensor
by "metric tags" (user, client id), emptying the part the quota does not depend on
(``quotaMetricTags``): all clients of user U limited by ``/config/users/U`` share one sensor.

The rate is Kafka's ``Rate`` over a ``SampledStat``: ``quota.window.num`` samples of
``quota.window.size.seconds`` each; a sample is complete once its window has passed, samples
older than all the windows together are reset; the rate divides the samples' sum by the time
since the oldest sample began, but never by less than ``samples - 1`` full windows. A recording
over the quota is kept and answered by a throttle time: how long the client must stay silent
for the rate to fall back to the quota, ``(rate - quota) / quota * window``, Kafka's
``QuotaUtils.throttleTime``; request-time quotas bound it by one window (Kafka's
``ClientRequestQuotaManager``). Time is always an argument (milliseconds).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from pafka.errors import InvalidRequestError

DEFAULT = "<default>"

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
QUOTA_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)

# Kafka's quota.window.num and quota.window.size.seconds defaults.
DEFAULT_WINDOW_NUM = 11
DEFAULT_WINDOW_SIZE_SECONDS = 1
# ClientQuotaManager.InactiveSensorExpirationTimeSeconds.
INACTIVE_SENSOR_EXPIRATION_MS = 3600 * 1000


class QuotaType(enum.Enum):
    """Kafka's QuotaType, its name the Prometheus series' prefix (``kafka_server_produce_``)."""

    PRODUCE = PRODUCER_BYTE_RATE
    FETCH = CONSUMER_BYTE_RATE
    REQUEST = REQUEST_PERCENTAGE


@dataclass(frozen=True, order=True)
class QuotaEntity:
    """A configured entity: a user, a client id or both; ``<default>`` for either's default.
    Names are the plain (unsanitized) user and client id."""

    user: str | None = None
    client_id: str | None = None

    def __post_init__(self) -> None:
        if self.user is None and self.client_id is None:
            raise ValueError("a quota entity names a user, a client id, or both")


class EnabledLevels(enum.IntFlag):
    """Kafka's ``QuotaTypes``: which levels have ever had a quota (the sharing of sensors is
    simple while only one level is used)."""

    NONE = 0
    CLIENT_ID = 1
    USER = 2
    USER_CLIENT_ID = 4


def level_of(entity: QuotaEntity) -> EnabledLevels:
    if entity.user is not None:
        return EnabledLevels.USER_CLIENT_ID if entity.client_id is not None else EnabledLevels.USER
    return EnabledLevels.CLIENT_ID


def parse_quota_value(key: str, value: str) -> float:
    """A quota's value as Kafka validates it: a number, positive; byte rates are longs."""
    if key not in QUOTA_KEYS:
        raise InvalidRequestError(f"unknown quota key {key!r}")
    try:
        number = float(value)
    except ValueError:
        raise InvalidRequestError(f"quota {key} must be a number, not {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise InvalidRequestError(f"quota {key} must be positive, not {value!r}")
    if key != REQUEST_PERCENTAGE and number != int(number):
        raise InvalidRequestError(f"quota {key} must be a whole number of bytes per second")
    return number


def quotas_of(
    configs: Mapping[QuotaEntity, Mapping[str, str]], key: str
) -> dict[QuotaEntity, float]:
    """The entities with a valid quota under ``key`` (other keys, such as SCRAM credentials,
    and invalid values are not quotas)."""
    found = {}
    for entity, config in configs.items():
        if key in config:
            try:
                found[entity] = parse_quota_value(key, config[key])
            except InvalidRequestError:
                continue
    return found


def precedence(user: str, client_id: str) -> tuple[QuotaEntity, ...]:
    """The entities that may limit (user, client id), first match wins (``findQuota``)."""
    return (
        QuotaEntity(user, client_id),
        QuotaEntity(user, DEFAULT),
        QuotaEntity(user, None),
        QuotaEntity(DEFAULT, client_id),
        QuotaEntity(DEFAULT, DEFAULT),
        QuotaEntity(DEFAULT, None),
        QuotaEntity(None, client_id),
        QuotaEntity(None, DEFAULT),
    )


@dataclass(frozen=True, order=True)
class MetricTags:
    """A sensor's key: Kafka's (user, client-id) metric tags, "" for a part not keyed on."""

    user: str
    client_id: str


def metric_tags(
    user: str, client_id: str, quotas: Mapping[QuotaEntity, float], levels: EnabledLevels
) -> MetricTags:
    """Kafka's ``DefaultQuotaCallback.quotaMetricTags``: which sensor (user, client id) records
    into. With one level in use the tags follow that level alone; otherwise the precedence
    decides, defaults included."""
    if levels in (EnabledLevels.NONE, EnabledLevels.CLIENT_ID):
        return MetricTags("", client_id)
    if levels is EnabledLevels.USER:
        return MetricTags(user, "")
    if levels is EnabledLevels.USER_CLIENT_ID:
        return MetricTags(user, client_id)
    keyed_on_user_only = {2, 5}  # /config/users/U, /config/users/<default>
    for rank, entity in enumerate(precedence(user, client_id)[:6]):
        if entity in quotas:
            return (
                MetricTags(user, "") if rank in keyed_on_user_only else MetricTags(user, client_id)
            )
    return MetricTags("", client_id)


def quota_limit(tags: MetricTags, quotas: Mapping[QuotaEntity, float]) -> float | None:
    """Kafka's ``DefaultQuotaCallback.quotaLimit``: the bound of a sensor's tags, None for
    unlimited."""
    user, client_id = tags.user, tags.client_id
    if user and client_id:
        candidates: tuple[QuotaEntity, ...] = (
            QuotaEntity(user, client_id),
            QuotaEntity(user, DEFAULT),
            QuotaEntity(DEFAULT, client_id),
            QuotaEntity(DEFAULT, DEFAULT),
        )
    elif user:
        candidates = (QuotaEntity(user, None), QuotaEntity(DEFAULT, None))
    elif client_id:
        candidates = (QuotaEntity(None, client_id), QuotaEntity(None, DEFAULT))
    else:
        return None
    for entity in candidates:
        if entity in quotas:
            return quotas[entity]
    return None


def find_quota(user: str, client_id: str, quotas: Mapping[QuotaEntity, float]) -> float | None:
    """The quota that applies to (user, client id): the first entity of the precedence."""
    for entity in precedence(user, client_id):
        if entity in quotas:
            return quotas[entity]
    return None


# -- Kafka's Rate over a SampledStat ------------------------------------------------------------


@dataclass(frozen=True)
class RateConfig:
    samples: int = DEFAULT_WINDOW_NUM
    window_ms: int = DEFAULT_WINDOW_SIZE_SECONDS * 1000

    def __post_init__(self) -> None:
        if self.samples < 2 or self.window_ms < 1:
            raise ValueError("a quota rate needs at least 2 samples of at least 1 ms")


@dataclass
class _Sample:
    start_ms: int
    value: float = 0.0


@dataclass
class Rate:
    """A windowed sum per second, recorded and measured as Kafka's ``Rate`` (``WindowedSum``)."""

    config: RateConfig = field(default_factory=RateConfig)
    _samples: list[_Sample] = field(default_factory=list)
    _current: int = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.config.window_ms:
            sample = self._advance(now_ms)
        sample.value += value

    def measure(self, now_ms: int) -> float:
        """Per second, over the samples' span."""
        self._purge(now_ms)
        total = sum(s.value for s in self._samples)
        return total / (self.window_size_ms(now_ms) / 1000)

    def window_size_ms(self, now_ms: int) -> int:
        self._purge(now_ms)
        elapsed = now_ms - self._oldest(now_ms).start_ms
        full = elapsed // self.config.window_ms
        least = self.config.samples - 1
        if full < least:
            elapsed += (least - full) * self.config.window_ms
        return elapsed

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % self.config.samples
        if self._current >= len(self._samples):
            sample = _Sample(now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.start_ms, sample.value = now_ms, 0.0
        return sample

    def _oldest(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return min(self._samples, key=lambda s: s.start_ms)

    def _purge(self, now_ms: int) -> None:
        expire_ms = self.config.samples * self.config.window_ms
        for sample in self._samples:
            if now_ms - sample.start_ms >= expire_ms:
                sample.start_ms, sample.value = now_ms, 0.0


def throttle_time_ms(rate: float, bound: float, window_ms: int) -> int:
    """Kafka's ``QuotaUtils.throttleTime``: how long without traffic brings ``rate`` back to
    ``bound`` (negative below it)."""
    return round((rate - bound) / bound * window_ms)


def bounded_throttle_time_ms(rate: float, bound: float, window_ms: int, max_ms: int) -> int:
    return min(throttle_time_ms(rate, bound, window_ms), max_ms)


def record_and_throttle(
    rate: Rate, value: float, bound: float | None, now_ms: int, max_ms: int | None = None
) -> int:
    """Record ``value`` and return the throttle time its sensor now owes (0 within quota), as
    Kafka's ``Sensor.record`` then ``checkQuotas`` then ``throttleTime``."""
    rate.record(value, now_ms)
    if bound is None:
        return 0
    measured = rate.measure(now_ms)
    if measured <= bound:
        return 0
    window_ms = rate.window_size_ms(now_ms)
    if max_ms is None:
        return max(0, throttle_time_ms(measured, bound, window_ms))
    return max(0, bounded_throttle_time_ms(measured, bound, window_ms, max_ms))


def max_value_in_window(bound: float | None, config: RateConfig) -> float:
    """Kafka's ``getMaxValueInQuotaWindow``: the most one request may take of a quota (bounds
    a throttled consumer's fetch size)."""
    if bound is None:
        return math.inf
    return bound * (config.samples - 1) * config.window_ms / 1000
