"""Client quota sensors: what each (user, client id) produced, fetched and cost, and its throttle.

One manager per quota type, as Kafka's ``ClientQuotaManager``s: produce bytes, fetch bytes, and
request time (the percentage of one thread's time, Kafka's ``ClientRequestQuotaManager``).
Quotas come from the entity configs (:mod:`services.broker.entity_configs`), recomputed on every
change; a sensor is keyed by Kafka's metric tags, so clients limited by one shared entity share
one sensor, and a sensor idle for an hour is dropped (Kafka's sensor expiration). While no quota
of a type was ever set, nothing is recorded (Kafka's ``quotasEnabled``).

Series are Strimzi's names of Kafka's quota MBeans (``kafka.server:type=Produce,user=,
client-id=c1`` ``byte-rate`` becomes ``kafka_server_produce_byte_rate{user="",client_id="c1"}``),
read at scrape time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from pafka.security.quotas import (
    INACTIVE_SENSOR_EXPIRATION_MS,
    EnabledLevels,
    MetricTags,
    QuotaEntity,
    QuotaType,
    Rate,
    RateConfig,
    level_of,
    max_value_in_window,
    metric_tags,
    quota_limit,
    quotas_of,
    record_and_throttle,
)

# Idle sensors are looked for this often at most (on a recording, never by a timer).
EXPIRY_SWEEP_MS = 60_000
# Request time as Kafka counts it: percent of one thread per second.
PERCENT_PER_SECOND = 100.0

_SERIES = {
    QuotaType.PRODUCE: ("produce", "byte_rate", "Tracking byte-rate per user/client-id"),
    QuotaType.FETCH: ("fetch", "byte_rate", "Tracking byte-rate per user/client-id"),
    QuotaType.REQUEST: (
        "request",
        "request_time",
        "Tracking request-time per user/client-id",
    ),
}


@dataclass
class _Sensor:
    rate: Rate
    # Kafka's throttle-time is an Avg over the same windows: two sums recorded together.
    throttle_sum: Rate
    throttle_count: Rate
    last_record_ms: int = 0


@dataclass
class QuotaSensors:
    """The sensors of one quota type."""

    quota_type: QuotaType
    config: RateConfig
    # Request-time throttles are bounded by one window (ClientRequestQuotaManager).
    max_throttle_ms: int | None = None
    quotas: dict[QuotaEntity, float] = field(default_factory=dict)
    levels: EnabledLevels = EnabledLevels.NONE
    sensors: dict[MetricTags, _Sensor] = field(default_factory=dict)
    _last_sweep_ms: int = 0

    def update(self, configs: Mapping[QuotaEntity, Mapping[str, str]]) -> None:
        self.quotas = quotas_of(configs, self.quota_type.value)
        # Kafka never forgets a level once used: sensors keep their sharing.
        for entity in self.quotas:
            self.levels |= level_of(entity)

    @property
    def enabled(self) -> bool:
        return self.levels is not EnabledLevels.NONE

    def _sensor(self, tags: MetricTags, now_ms: int) -> _Sensor:
        sensor = self.sensors.get(tags)
        if sensor is None:
            sensor = _Sensor(Rate(self.config), Rate(self.config), Rate(self.config))
            self.sensors[tags] = sensor
        sensor.last_record_ms = now_ms
        return sensor

    def tags(self, user: str, client_id: str) -> MetricTags:
        return metric_tags(user, client_id, self.quotas, self.levels)

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record ``value`` for the client; the throttle time owed (0 within its quota)."""
        if not self.enabled:
            return 0
        self._sweep(now_ms)
        tags = self.tags(user, client_id)
        sensor = self._sensor(tags, now_ms)
        bound = quota_limit(tags, self.quotas)
        return record_and_throttle(sensor.rate, value, bound, now_ms, self.max_throttle_ms)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recording whose response was not sent (a throttled fetch's data)."""
        if self.enabled:
            self._sensor(self.tags(user, client_id), now_ms).rate.record(-value, now_ms)

    def throttled(self, user: str, client_id: str, throttle_ms: int, now_ms: int) -> None:
        sensor = self._sensor(self.tags(user, client_id), now_ms)
        sensor.throttle_sum.record(throttle_ms, now_ms)
        sensor.throttle_count.record(1, now_ms)

    def max_value_in_window(self, user: str, client_id: str) -> float:
        if not self.enabled:
            return float("inf")
        bound = quota_limit(self.tags(user, client_id), self.quotas)
        return max_value_in_window(bound, self.config)

    def _sweep(self, now_ms: int) -> None:
        if now_ms - self._last_sweep_ms < EXPIRY_SWEEP_MS:
            return
        self._last_sweep_ms = now_ms
        for tags, sensor in list(self.sensors.items()):
            if now_ms - sensor.last_record_ms > INACTIVE_SENSOR_EXPIRATION_MS:
                del self.sensors[tags]


def _now_ms() -> int:
    return int(time.time() * 1000)


class QuotaManager:
    """The broker's three quota managers, fed by the entity configs."""

    def __init__(self, config: RateConfig, clock_ms: Callable[[], int] = _now_ms) -> None:
        self.config = config
        self.clock_ms = clock_ms
        self.produce = QuotaSensors(QuotaType.PRODUCE, config)
        self.fetch = QuotaSensors(QuotaType.FETCH, config)
        self.request = QuotaSensors(QuotaType.REQUEST, config, max_throttle_ms=config.window_ms)

    def update(self, entities: Mapping[tuple[str | None, str | None], Mapping[str, str]]) -> None:
        configs = {QuotaEntity(u, c): config for (u, c), config in entities.items()}
        for sensors in self.all():
            sensors.update(configs)

    def all(self) -> tuple[QuotaSensors, ...]:
        return (self.produce, self.fetch, self.request)


class QuotaCollector(Collector):
    """Each live sensor's rate and average throttle time, at scrape time."""

    def __init__(self, manager: QuotaManager) -> None:
        self._manager = manager

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now_ms = self._manager.clock_ms()
        for sensors in self._manager.all():
            prefix, name, doc = _SERIES[sensors.quota_type]
            rate = GaugeMetricFamily(
                f"kafka_server_{prefix}_{name}", doc, labels=["user", "client_id"]
            )
            throttle = GaugeMetricFamily(
                f"kafka_server_{prefix}_throttle_time",
                "Tracking average throttle-time per user/client-id",
                labels=["user", "client_id"],
            )
            for tags, sensor in list(sensors.sensors.items()):
                labels = [tags.user, tags.client_id]
                rate.add_metric(labels, sensor.rate.measure(now_ms))
                count = sensor.throttle_count.measure(now_ms)
                average = sensor.throttle_sum.measure(now_ms) / count if count > 0 else 0.0
                throttle.add_metric(labels, average)
            yield rate
            yield throttle
